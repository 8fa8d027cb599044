// profiles.<name>.persistent_cap and the coherence warnings on
// persistent_dirs end to end through the loader: syntax, limits, the
// default, merging, the workspace narrowing and the conversion to the proto.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "services/configd/loader.h"
#include "services/configd/proto_convert.h"
#include "services/configd/schema.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Load;
using ::testing::Not;
using testing::Scratch;
using testing::SourceOf;
using testing::Warnings;

constexpr uint64_t kGiB = uint64_t{1} << 30;

std::string Profile(const std::string& cap_line) {
  return absl::StrCat("[profiles.dev]\nimage = \"localhost/lazaret-sandbox:trixie\"\n", cap_line,
                      "\n");
}

TEST(PersistentCapTest, SizesWithBinaryUnitsOrBytes) {
  Scratch s;
  const struct {
    const char* line;
    uint64_t bytes;
  } cases[] = {
      {"persistent_cap = \"4GiB\"", 4 * kGiB},
      {"persistent_cap = \"32MiB\"", uint64_t{32} << 20},
      {"persistent_cap = \"16TiB\"", uint64_t{16} << 40},
      {"persistent_cap = \"1048576KiB\"", kGiB},
      {"persistent_cap = \"2147483648\"", 2 * kGiB},
      {"persistent_cap = 2147483648", 2 * kGiB},
  };
  for (const auto& c : cases) {
    LoadedConfig loaded = Load(s, Profile(c.line));
    ASSERT_TRUE(loaded.status().ok()) << c.line << "\n" << Errors(loaded);
    ResolvedProfile p = *loaded.Profile("dev");
    EXPECT_EQ(p.persistent_cap_bytes, c.bytes) << c.line;
    ASSERT_NE(SourceOf(p, "profiles.dev.persistent_cap"), nullptr) << c.line;
    EXPECT_EQ(SourceOf(p, "profiles.dev.persistent_cap")->layer, Layer::kUser);
    v1::ResolvedProfile pb;
    ToProto(p, &pb);
    EXPECT_EQ(pb.persistent_cap_bytes(), c.bytes) << c.line;
  }
}

TEST(PersistentCapTest, WithoutTheSettingEveryProfileGetsTheDefault) {
  Scratch s;
  LoadedConfig loaded = Load(s, Profile(""));
  ASSERT_TRUE(loaded.status().ok()) << Errors(loaded);
  for (const char* name : {"dev", ""}) {  // a user profile and the built-in default one
    ResolvedProfile p = *loaded.Profile(name);
    EXPECT_EQ(p.persistent_cap_bytes, 4 * kGiB) << name;
    EXPECT_EQ(SourceOf(p, absl::StrCat("profiles.", p.name, ".persistent_cap")), nullptr);
    v1::ResolvedProfile pb;
    ToProto(p, &pb);
    EXPECT_EQ(pb.persistent_cap_bytes(), 4 * kGiB) << name;
  }
  EXPECT_EQ(kDefaultPersistentCapBytes, 4 * kGiB);
}

TEST(PersistentCapTest, AnythingElseIsRefusedWithTheKeyAndTheFix) {
  Scratch s;
  const struct {
    const char* line;
    const char* error;
  } cases[] = {
      {"persistent_cap = \"4GB\"",
       "config.toml:3:18: profiles.dev.persistent_cap: \"4GB\" is not a size: write a whole "
       "number with KiB, MiB, GiB or TiB (powers of 1024), e.g. \"4GiB\""},
      {"persistent_cap = \"4 GiB\"", "\"4 GiB\" is not a size"},
      {"persistent_cap = \"1.5GiB\"", "\"1.5GiB\" is not a size"},
      {"persistent_cap = \"-1GiB\"", "\"-1GiB\" is not a size"},
      {"persistent_cap = \"\"", "\"\" is not a size"},
      {"persistent_cap = \"31MiB\"",
       "profiles.dev.persistent_cap: \"31MiB\" is out of range: the value must be between "
       "\"32MiB\" and \"16TiB\""},
      {"persistent_cap = \"17TiB\"", "\"17TiB\" is out of range"},
      {"persistent_cap = \"99999999999999999999TiB\"", "is out of range"},
      {"persistent_cap = 1024", "1024 bytes is out of range"},
      {"persistent_cap = -5", "-5 bytes is out of range"},
      {"persistent_cap = 4.0", "expected a size such as \"4GiB\", found a float"},
      {"persistent_cap = true", "expected a size such as \"4GiB\""},
      {"persistent_cap = [\"4GiB\"]", "expected a size such as \"4GiB\""},
      {"persistent_capp = \"4GiB\"", "did you mean 'persistent_cap'?"},
  };
  for (const auto& c : cases) {
    LoadedConfig loaded = Load(s, Profile(c.line));
    EXPECT_FALSE(loaded.status().ok()) << c.line;
    EXPECT_THAT(Errors(loaded), HasSubstr(c.error)) << c.line;
  }
  EXPECT_THAT(Errors(Load(s, Profile("persistent_cap = \"4GB\""))),
              HasSubstr("fix: write, e.g., persistent_cap = \"4GiB\""));
}

TEST(PersistentCapTest, AHigherLayerReplacesTheCap) {
  Scratch s;
  LoadedConfig loaded = Load(s, Profile("persistent_cap = \"8GiB\""), "",
                             "[profiles.dev]\npersistent_cap = \"64GiB\"\n");
  ASSERT_TRUE(loaded.status().ok()) << Errors(loaded);
  ResolvedProfile p = *loaded.Profile("dev");
  EXPECT_EQ(p.persistent_cap_bytes, 64 * kGiB);
  EXPECT_EQ(SourceOf(p, "profiles.dev.persistent_cap")->layer, Layer::kExplicit);
}

TEST(PersistentCapTest, AnUntrustedWorkspaceMayOnlyLowerTheCap) {
  Scratch s;
  const std::string set = Profile("persistent_cap = \"8GiB\"");
  const std::string unset = Profile("");
  const struct {
    const std::string* user;
    const char* workspace;
    const char* refusal;  // nullptr: accepted without trust
    uint64_t bytes;
  } cases[] = {
      {&set, "[profiles.dev]\npersistent_cap = \"1GiB\"\n", nullptr, kGiB},
      {&set, "[profiles.dev]\npersistent_cap = \"8GiB\"\n", nullptr, 8 * kGiB},
      {&set, "[profiles.dev]\npersistent_cap = \"8192MiB\"\n", nullptr, 8 * kGiB},
      {&unset, "[profiles.dev]\npersistent_cap = \"4GiB\"\n", nullptr, 4 * kGiB},
      {&unset, "[profiles.dev]\npersistent_cap = \"64MiB\"\n", nullptr, uint64_t{64} << 20},
      {&set, "[profiles.dev]\npersistent_cap = \"9GiB\"\n",
       "lazaret.toml:2:18: profiles.dev.persistent_cap: raises the persistent data cap to "
       "\"9GiB\"; profiles.dev.persistent_cap of your configuration is \"8GiB\" (a workspace "
       "may only lower it)",
       9 * kGiB},
      {&set, "[profiles.dev]\npersistent_cap = 8589934593\n",
       "raises the persistent data cap to \"8589934593\"", 8589934593},
      {&unset, "[profiles.dev]\npersistent_cap = \"5GiB\"\n",
       "profiles.dev.persistent_cap: raises the persistent data cap to \"5GiB\"; your "
       "configuration leaves profiles.dev.persistent_cap at its default, \"4GiB\"",
       5 * kGiB},
  };
  for (const auto& c : cases) {
    LoadedConfig loaded = Load(s, *c.user, c.workspace);
    if (c.refusal == nullptr) {
      ASSERT_TRUE(loaded.status().ok()) << c.workspace << "\n" << Errors(loaded);
      EXPECT_EQ(loaded.Profile("dev")->persistent_cap_bytes, c.bytes) << c.workspace;
      EXPECT_EQ(SourceOf(*loaded.Profile("dev"), "profiles.dev.persistent_cap")->layer,
                Layer::kWorkspace);
      continue;
    }
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.workspace;
    EXPECT_THAT(Errors(loaded), HasSubstr(c.refusal)) << c.workspace;
    EXPECT_THAT(Errors(loaded), HasSubstr("lazaret trust")) << c.workspace;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.workspace;
    // Trusted, the same file is accepted and its cap applies.
    LoadedConfig trusted = Load(s, *c.user, c.workspace, "", /*workspace_trusted=*/true);
    ASSERT_TRUE(trusted.status().ok()) << c.workspace << "\n" << Errors(trusted);
    EXPECT_EQ(trusted.Profile("dev")->persistent_cap_bytes, c.bytes) << c.workspace;
  }
}

TEST(PersistentCapTest, IncoherentPersistentDirsAreAWarningNotAnError) {
  Scratch s;
  LoadedConfig loaded = Load(s, Profile("persistent_dirs = [\"/usr\", \"/root\"]"));
  ASSERT_TRUE(loaded.status().ok()) << Errors(loaded);
  EXPECT_EQ(loaded.Profile("dev")->persistent_dirs.size(), 2u);
  EXPECT_THAT(Warnings(loaded),
              HasSubstr("config.toml:3:19: profiles.dev.persistent_dirs: persists the files dpkg "
                        "and apt install (\"/usr\") without dpkg's database of installed "
                        "packages \"/var/lib/dpkg\""));
  EXPECT_THAT(Warnings(loaded), HasSubstr("fix: add \"/var/lib/dpkg\" and \"/var/lib/apt\""));

  LoadedConfig coherent =
      Load(s, Profile("persistent_dirs = [\"/usr\", \"/var/lib/dpkg\", \"/var/lib/apt\"]"));
  ASSERT_TRUE(coherent.status().ok()) << Errors(coherent);
  EXPECT_THAT(Warnings(coherent), Not(HasSubstr("persistent_dirs")));

  // The warning follows the list that wins the merge: a workspace that
  // narrows a coherent list to an incoherent one is warned about.
  LoadedConfig narrowed =
      Load(s, Profile("persistent_dirs = [\"/usr\", \"/var/lib/dpkg\", \"/var/lib/apt\"]"),
           "[profiles.dev]\npersistent_dirs = [\"/var/lib/dpkg\"]\n");
  ASSERT_TRUE(narrowed.status().ok()) << Errors(narrowed);
  EXPECT_THAT(Warnings(narrowed), HasSubstr("lazaret.toml:2:19: profiles.dev.persistent_dirs: "
                                            "persists dpkg's database of installed packages"));
}

}  // namespace
}  // namespace lazaret::config
