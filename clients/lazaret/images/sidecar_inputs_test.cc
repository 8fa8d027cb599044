#include "clients/lazaret/images/sidecar_inputs.h"

#include <gtest/gtest.h>

namespace lazaret::cli::images {
namespace {

TEST(LddTest, ParsesLibrariesAndLoader) {
  auto f = ParseLddOutput(
      "\tlinux-vdso.so.1 (0x00007ffd)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].dest, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ((*f)[1].dest, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_FALSE(ParseLddOutput("\tlibx.so => not found\n").ok());
}

}  // namespace
}  // namespace lazaret::cli::images
