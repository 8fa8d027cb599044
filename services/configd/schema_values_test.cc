#include "services/configd/schema_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;

struct ModeCase {
  const char* mode;
  bool ok;
  Access access;
  SelinuxLabel label;
};

TEST(SchemaValuesTest, VolumeModesAreAClosedSet) {
  const ModeCase cases[] = {
      {"", true, Access::kReadOnly, SelinuxLabel::kNone},
      {"ro", true, Access::kReadOnly, SelinuxLabel::kNone},
      {"rw", true, Access::kReadWrite, SelinuxLabel::kNone},
      {"z", true, Access::kReadOnly, SelinuxLabel::kShared},
      {"Z", true, Access::kReadOnly, SelinuxLabel::kPrivate},
      {"ro,z", true, Access::kReadOnly, SelinuxLabel::kShared},
      {"z,ro", true, Access::kReadOnly, SelinuxLabel::kShared},
      {"rw,Z", true, Access::kReadWrite, SelinuxLabel::kPrivate},
      {"rw,z", true, Access::kReadWrite, SelinuxLabel::kShared},
      {"ro,rw", false, {}, {}},
      {"z,Z", false, {}, {}},
      {"ro,ro", false, {}, {}},
      {"ro,", false, {}, {}},
      {"ro, z", false, {}, {}},
      {"RO", false, {}, {}},
      {"exec", false, {}, {}},
      {"suid", false, {}, {}},
      {"dev", false, {}, {}},
      {"rshared", false, {}, {}},
      {"U", false, {}, {}},
      {"O", false, {}, {}},
  };
  for (const ModeCase& c : cases) {
    Access a;
    SelinuxLabel l;
    absl::Status st = ParseVolumeMode(c.mode, &a, &l);
    EXPECT_EQ(st.ok(), c.ok) << c.mode;
    if (c.ok && st.ok()) {
      EXPECT_EQ(a, c.access) << c.mode;
      EXPECT_EQ(l, c.label) << c.mode;
    }
  }
}

struct ImageCase {
  const char* image;
  bool ok;
  const char* warning;  // substring, or "" for no warning
};

TEST(SchemaValuesTest, ImagesShouldBePinnedAndQualified) {
  const std::string digest(64, 'a');
  const ImageCase cases[] = {
      {"localhost/lazaret-sandbox:trixie", true, ""},
      {"docker.io/library/node:22.11.0", true, ""},
      {"ghcr.io/org/agent:1.2.3", true, ""},
      {"registry.example:5000/team/agent:v1", true, ""},
      {"docker.io/library/node:latest", true, "uses :latest"},
      {"docker.io/library/node", true, "has no tag"},
      {"node:22", true, "no registry"},
      {"node", true, "has no tag"},
      {"", false, ""},
      {"-v", false, ""},
      {"docker.io/Library/node:1", false, ""},
      {"docker.io//node:1", false, ""},
      {"docker.io/node:", false, ""},
      {"docker.io/node:1 --privileged", false, ""},
      {"docker.io/node@md5:abc", false, ""},
  };
  for (const ImageCase& c : cases) {
    std::string warning;
    absl::Status st = CheckImageReference(c.image, &warning);
    EXPECT_EQ(st.ok(), c.ok) << c.image << ": " << st;
    if (c.ok) {
      if (std::string(c.warning).empty()) {
        EXPECT_EQ(warning, "") << c.image;
      } else {
        EXPECT_THAT(warning, HasSubstr(c.warning)) << c.image;
      }
    }
  }
  std::string warning;
  EXPECT_TRUE(CheckImageReference("docker.io/library/node@sha256:" + digest, &warning).ok());
  EXPECT_EQ(warning, "");
  EXPECT_TRUE(CheckImageReference("docker.io/library/node:latest@sha256:" + digest, &warning).ok());
  EXPECT_EQ(warning, "") << "a digest pins even a :latest tag";
}

TEST(SchemaValuesTest, SizesAreWholeNumbersWithBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("4GiB"), uint64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("32MiB"), uint64_t{32} << 20);
  EXPECT_EQ(*ParseByteSize("16TiB"), uint64_t{16} << 40);
  EXPECT_EQ(*ParseByteSize("3KiB"), uint64_t{3} << 10);
  EXPECT_EQ(*ParseByteSize("1073741824"), uint64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  EXPECT_EQ(*ParseByteSize("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "GiB", "4GB", "4G", "4 GiB", "4gib", "4.5GiB", "-4GiB", "+4GiB",
                          "4GiB ", " 4GiB", "4GiBs", "0x10", "4MiB4", "1e9"}) {
    EXPECT_EQ(ParseByteSize(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const char* huge :
       {"18446744073709551616", "99999999999999999999999", "16777216TiB", "17179869184GiB"}) {
    EXPECT_EQ(ParseByteSize(huge).status().code(), absl::StatusCode::kOutOfRange) << huge;
  }
  EXPECT_EQ(*ParseByteSize("16777215TiB"), uint64_t{16777215} << 40);
}

TEST(SchemaValuesTest, SizesAreShownInTheLargestExactUnit) {
  EXPECT_EQ(FormatByteSize(uint64_t{4} << 30), "4GiB");
  EXPECT_EQ(FormatByteSize(uint64_t{1536} << 20), "1536MiB");
  EXPECT_EQ(FormatByteSize(uint64_t{16} << 40), "16TiB");
  EXPECT_EQ(FormatByteSize(3072), "3KiB");
  EXPECT_EQ(FormatByteSize(1536), "1536");
  EXPECT_EQ(FormatByteSize(0), "0");
  for (uint64_t b : {uint64_t{4} << 30, uint64_t{33554433}, uint64_t{5} << 40, UINT64_MAX}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(b)), b) << b;
  }
}

TEST(SchemaValuesTest, DurationsAreWholeNumbersWithOneUnit) {
  EXPECT_EQ(*ParseDuration("90s"), 90u);
  EXPECT_EQ(*ParseDuration("30m"), 1800u);
  EXPECT_EQ(*ParseDuration("12h"), 43200u);
  EXPECT_EQ(*ParseDuration("30d"), 30u * 86400);
  EXPECT_EQ(*ParseDuration("0s"), 0u);
  for (const char* bad : {"", "h", "12", "12H", "12 h", " 12h", "12h ", "1.5h", "-1h", "+1h",
                          "1h30m", "12hours", "0x10s", "1e3s"}) {
    EXPECT_EQ(ParseDuration(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const char* huge : {"4294967296s", "49711d", "99999999999999999999d"}) {
    EXPECT_EQ(ParseDuration(huge).status().code(), absl::StatusCode::kOutOfRange) << huge;
  }
  EXPECT_EQ(*ParseDuration("4294967295s"), UINT32_MAX);
}

TEST(SchemaValuesTest, DurationsAreShownInTheLargestExactUnit) {
  EXPECT_EQ(FormatDuration(43200), "12h");
  EXPECT_EQ(FormatDuration(86400), "1d");
  EXPECT_EQ(FormatDuration(90), "90s");
  EXPECT_EQ(FormatDuration(5400), "90m");
  EXPECT_EQ(FormatDuration(0), "0s");
  for (uint32_t d : {60u, 43200u, 2592000u, 61u, UINT32_MAX}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(d)), d) << d;
  }
}

TEST(SchemaValuesTest, SuggestKeyFindsCloseNames) {
  const std::vector<absl::string_view> known = {"image", "persistent_dirs", "allow_egress", "env",
                                                "volumes"};
  EXPECT_EQ(SuggestKey("imag", known), "image");
  EXPECT_EQ(SuggestKey("volume", known), "volumes");
  EXPECT_EQ(SuggestKey("alow_egress", known), "allow_egress");
  EXPECT_EQ(SuggestKey("allow_egres", known), "allow_egress");
  EXPECT_EQ(SuggestKey("persistent", known), "persistent_dirs");
  EXPECT_EQ(SuggestKey("Env", known), "env");
  EXPECT_EQ(SuggestKey("qqqqqq", known), "");
}

}  // namespace
}  // namespace lazaret::config
