#include "services/configd/schema_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
