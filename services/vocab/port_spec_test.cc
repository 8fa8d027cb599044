#include "services/vocab/port_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::vocab {
namespace {

using ::testing::HasSubstr;

TEST(PortSpecTest, EachFormReadsBackTheSame) {
  for (const char* text : {"3000", "8080:3000", "127.0.0.1:1455", "[::1]:3000", "[::]:8080:80"}) {
    absl::StatusOr<PortSpec> spec = ParsePortSpec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status();
    absl::StatusOr<PortSpec> again = ParsePortSpec(FormatPortSpec(*spec));
    ASSERT_TRUE(again.ok()) << FormatPortSpec(*spec);
    EXPECT_EQ(*again, *spec) << text;
  }
  EXPECT_EQ(FormatPortSpec(*ParsePortSpec("[::1]:3000")), "[::1]:3000:3000");
}

TEST(PortSpecTest, PrivilegedHostPortsAndMalformedSpecsAreRefused) {
  EXPECT_THAT(ParsePortSpec("80").status().message(), HasSubstr("below 1024"));
  for (const char* bad : {"", "0", "3000:0", "3000:70000", "localhost:3000", "::1:3000", "+3000",
                          "[::1]3000", "1.2.3.4:5:6:7"}) {
    EXPECT_FALSE(ParsePortSpec(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lazaret::vocab
