#include "clients/lazaret/images/sidecar_inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/images/tags.h"
#include "services/common/fs/file.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::images {
namespace {

using ::testing::Contains;
using ::testing::Field;

// The router this build made (sidecar/CMakeLists.txt links it static).
constexpr char kBuiltRouter[] = LAZARET_NETROUTER_BIN;

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) == nullptr ? "" : std::string(resolved);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(fs::WriteFileAtomic(path, bytes, 0755).ok()) << path;
}

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

TEST(SidecarInputsTest, BuiltRouterIsStaticAndTheWholeImage) {
  absl::StatusOr<bool> is_static = IsStaticExecutable(kBuiltRouter);
  ASSERT_TRUE(is_static.ok()) << is_static.status();
  EXPECT_TRUE(*is_static) << kBuiltRouter << " has a program interpreter";

  absl::StatusOr<std::vector<ImageFile>> files = SidecarFiles(kBuiltRouter);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].dest, "/lazaret-netrouter");
  EXPECT_EQ((*files)[0].source, RealPath(kBuiltRouter));
}

TEST(SidecarInputsTest, DynamicBinaryBringsItsLoaderAndLibraries) {
  // This test binary is linked dynamically, as the router once was.
  const std::string self = RealPath("/proc/self/exe");
  absl::StatusOr<bool> is_static = IsStaticExecutable(self);
  ASSERT_TRUE(is_static.ok()) << is_static.status();
  EXPECT_FALSE(*is_static);

  absl::StatusOr<std::vector<ImageFile>> files = SidecarFiles(self);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_GT(files->size(), 2u);
  EXPECT_EQ((*files)[0].dest, "/lazaret-netrouter");
  EXPECT_THAT(*files, Contains(Field(&ImageFile::dest, "/lib64/ld-linux-x86-64.so.2")));
  EXPECT_TRUE(std::any_of(files->begin(), files->end(), [](const ImageFile& f) {
    return f.dest.find("/libc.so.6") != std::string::npos;
  }));
}

TEST(SidecarInputsTest, RefusesWhatIsNotAnElfExecutable) {
  test::TempDir dir;
  const std::string script = dir.path() + "/script";
  WriteFile(script, "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(IsStaticExecutable(script).ok());
  EXPECT_FALSE(SidecarFiles(script).ok());

  // The router's first bytes: a valid ELF header whose program headers
  // lie past the end of the file.
  absl::StatusOr<std::string> router = fs::ReadHostFile(kBuiltRouter);
  ASSERT_TRUE(router.ok()) << router.status();
  const std::string truncated = dir.path() + "/truncated";
  WriteFile(truncated, router->substr(0, 64));
  absl::StatusOr<bool> r = IsStaticExecutable(truncated);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("program headers"));

  // A program header count no linker writes.
  std::string many = *router;
  many[56] = static_cast<char>(0xff);  // e_phnum, little-endian
  many[57] = static_cast<char>(0xff);
  const std::string bad_count = dir.path() + "/bad_count";
  WriteFile(bad_count, many);
  EXPECT_FALSE(IsStaticExecutable(bad_count).ok());

  EXPECT_FALSE(IsStaticExecutable(dir.path()).ok());
  EXPECT_FALSE(IsStaticExecutable(dir.path() + "/missing").ok());
}

TEST(SidecarInputsTest, TagIsReusedForTheSameRouterAndChangesWithIt) {
  absl::StatusOr<std::string> router = fs::ReadHostFile(kBuiltRouter);
  ASSERT_TRUE(router.ok()) << router.status();
  test::TempDir a;
  test::TempDir b;
  WriteFile(absl::StrCat(a.path(), "/", kSidecarBinary), *router);
  WriteFile(absl::StrCat(b.path(), "/", kSidecarBinary), *router);

  absl::StatusOr<std::string> tag_a = SidecarImageTag(a.path());
  absl::StatusOr<std::string> tag_b = SidecarImageTag(b.path());
  ASSERT_TRUE(tag_a.ok()) << tag_a.status();
  ASSERT_TRUE(tag_b.ok()) << tag_b.status();
  EXPECT_EQ(*tag_a, *tag_b);  // same bytes in another place: the same image

  std::string changed = *router;
  changed.back() = static_cast<char>(changed.back() ^ 1);
  WriteFile(absl::StrCat(b.path(), "/", kSidecarBinary), changed);
  tag_b = SidecarImageTag(b.path());
  ASSERT_TRUE(tag_b.ok()) << tag_b.status();
  EXPECT_NE(*tag_a, *tag_b);
}

}  // namespace
}  // namespace lazaret::cli::images
