// "Allow this name for this profile" on real files in a scratch home: each
// shape of the user's file, the bytes around the edit kept exactly, the
// hash check, and the files Lazaret never edits.
#include "services/configd/profile_edit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "services/common/fs/file.h"
#include "services/configd/test_util.h"
#include "services/configd/trust_store.h"

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;
using testing::Scratch;

std::string UserFile(const Scratch& s) { return s.Path("home/.config/lazaret/config.toml"); }

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> t = fs::ReadHostFile(path);
  return t.ok() ? *t : std::string("<unreadable>");
}

Selector Sel(const Scratch& s) { return Selector{s.workspace(), "", std::nullopt}; }

// Preview, then apply with the previewed hash; returns the file after.
std::string AllowAndRead(const Scratch& s, const std::string& profile, const std::string& name) {
  const HostContext host = s.Host();
  absl::StatusOr<NameAllowEdit> preview = PreviewNameAllow(host, Sel(s), profile, name);
  EXPECT_TRUE(preview.ok()) << preview.status();
  if (!preview.ok()) return "";
  absl::StatusOr<NameAllowEdit> applied =
      ApplyNameAllow(host, Sel(s), profile, name, preview->before_sha256);
  EXPECT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(Read(UserFile(s)), preview->after);
  EXPECT_EQ(Sha256Hex(Read(UserFile(s))), preview->after_sha256);
  return Read(UserFile(s));
}

TEST(ProfileEditTest, AppendsToExistingArray) {
  Scratch s;
  s.File("home/.config/lazaret/config.toml",
         "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = [\"a.example.com\"]\n"
         "[profiles.cd]\nimage = \"localhost/x:1\"\nallow_domains = []\n");
  EXPECT_EQ(AllowAndRead(s, "ab", "b.example.com"),
            "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = [\"a.example.com\", "
            "\"b.example.com\"]\n[profiles.cd]\nimage = \"localhost/x:1\"\nallow_domains = []\n");
  EXPECT_THAT(AllowAndRead(s, "cd", "c.example.com"),
              HasSubstr("[profiles.cd]\nimage = \"localhost/x:1\"\nallow_domains = "
                        "[\"c.example.com\"]\n"));
  absl::StatusOr<ResolvedProfile> ab = LoadForSelector(s.Host(), Sel(s)).Profile("ab");
  ASSERT_TRUE(ab.ok());
  EXPECT_EQ(ab->allow_domains.back().value, "b.example.com");
}

TEST(ProfileEditTest, AddsKeyToExistingTable) {
  Scratch s;
  s.File("home/.config/lazaret/config.toml",
         "[profiles.ab]  # mine\nimage = \"localhost/x:1\"\n");
  EXPECT_EQ(AllowAndRead(s, "ab", "api.example.com"),
            "[profiles.ab]  # mine\nallow_domains = [\"api.example.com\"]\nimage = "
            "\"localhost/x:1\"\n");
}

TEST(ProfileEditTest, AddsTableForBuiltInProfile) {
  Scratch s;
  // No file at all: it is created, holding only the new table.
  EXPECT_EQ(AllowAndRead(s, "default", "api.example.com"),
            "[profiles.default]\nallow_domains = [\"api.example.com\"]\n");
  struct stat st {};
  ASSERT_EQ(stat(UserFile(s).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  // A file without the table, and without a final newline.
  Scratch t;
  t.File("home/.config/lazaret/config.toml", "[escalation]\nrate_limit = 5");
  EXPECT_EQ(AllowAndRead(t, "default", "x.example.org"),
            "[escalation]\nrate_limit = 5\n\n[profiles.default]\nallow_domains = "
            "[\"x.example.org\"]\n");
}

TEST(ProfileEditTest, CommentsAndOrderPreservedByteForByte) {
  Scratch s;
  const std::string before =
      "# My config — ünïcode comment\r\n"
      "[network]\r\n"
      "egress = \"ask\"   # keep\r\n"
      "\r\n"
      "[profiles.ab]\r\n"
      "image = \"localhost/x:1\"  # pinned\r\n"
      "allow_domains = [\r\n"
      "  \"a.example.com\",  # first\r\n"
      "  \"b.example.com\",\r\n"
      "]\r\n"
      "# trailing comment\r\n";
  s.File("home/.config/lazaret/config.toml", before);
  chmod(UserFile(s).c_str(), 0640);
  const std::string after = AllowAndRead(s, "ab", "c.example.com");
  const std::string expected =
      "# My config — ünïcode comment\r\n"
      "[network]\r\n"
      "egress = \"ask\"   # keep\r\n"
      "\r\n"
      "[profiles.ab]\r\n"
      "image = \"localhost/x:1\"  # pinned\r\n"
      "allow_domains = [\r\n"
      "  \"a.example.com\",  # first\r\n"
      "  \"b.example.com\", \"c.example.com\",\r\n"
      "]\r\n"
      "# trailing comment\r\n";
  EXPECT_EQ(after, expected);
  struct stat st {};
  ASSERT_EQ(stat(UserFile(s).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // The diff shows exactly the one changed line.
  const std::string diff = UnifiedDiff("f", before, after);
  EXPECT_THAT(diff, HasSubstr("-  \"b.example.com\",\r\n+  \"b.example.com\", "
                              "\"c.example.com\",\r\n"));
  EXPECT_THAT(diff, HasSubstr("--- f\n+++ f\n@@ -6,6 +6,6 @@\n"));
}

TEST(ProfileEditTest, RefusesWhenFileChanged) {
  Scratch s;
  s.File("home/.config/lazaret/config.toml", "[profiles.ab]\nimage = \"localhost/x:1\"\n");
  const HostContext host = s.Host();
  absl::StatusOr<NameAllowEdit> preview = PreviewNameAllow(host, Sel(s), "ab", "a.example.com");
  ASSERT_TRUE(preview.ok()) << preview.status();
  const std::string changed = "[profiles.ab]\nimage = \"localhost/x:2\"\n";
  s.File("home/.config/lazaret/config.toml", changed);
  absl::StatusOr<NameAllowEdit> applied =
      ApplyNameAllow(host, Sel(s), "ab", "a.example.com", preview->before_sha256);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(applied.status().message(), HasSubstr("changed since the change was shown"));
  EXPECT_EQ(Read(UserFile(s)), changed);
}

TEST(ProfileEditTest, RefusesWorkspaceAndExplicitFiles) {
  Scratch s;
  s.File("home/.config/lazaret/config.toml", "[profiles.ab]\nimage = \"localhost/x:1\"\n");
  const std::string explicit_file =
      s.File("explicit.toml", "[profiles.ex]\nimage = \"localhost/x:1\"\n");
  const HostContext host = s.Host();
  // A profile only the --config file defines is not edited anywhere.
  Selector with_explicit{s.workspace(), explicit_file, std::nullopt};
  absl::StatusOr<NameAllowEdit> ex = PreviewNameAllow(host, with_explicit, "ex", "a.example.com");
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ex.status().message(), HasSubstr("not defined in your own configuration file"));
  // A trusted workspace file that replaces the profile's names hides the
  // edit: the user's file is put back and the call fails.
  const std::string ws = s.File("ws/lazaret.toml", "[profiles.ab]\nallow_domains = []\n");
  TrustStore store(host.TrustStoreFile());
  ASSERT_TRUE(store.Trust(ws, Sha256Hex(Read(ws))).ok());
  const std::string user_before = Read(UserFile(s));
  absl::StatusOr<NameAllowEdit> preview = PreviewNameAllow(host, Sel(s), "ab", "a.example.com");
  ASSERT_TRUE(preview.ok()) << preview.status();
  absl::StatusOr<NameAllowEdit> applied =
      ApplyNameAllow(host, Sel(s), "ab", "a.example.com", preview->before_sha256);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(applied.status().message(), HasSubstr("the file was put back as it was"));
  EXPECT_EQ(Read(UserFile(s)), user_before);
  EXPECT_EQ(Read(ws), "[profiles.ab]\nallow_domains = []\n");
  EXPECT_EQ(Read(explicit_file), "[profiles.ex]\nimage = \"localhost/x:1\"\n");
}

TEST(ProfileEditTest, OnlyExactNamesAndEditableShapes) {
  Scratch s;
  s.File("home/.config/lazaret/config.toml",
         "profiles.ab.image = \"localhost/x:1\"\n");
  const HostContext host = s.Host();
  for (const char* bad : {"*.example.com", "Example.com", "example.com.", "a b.com", "x", ""}) {
    EXPECT_EQ(PreviewNameAllow(host, Sel(s), "default", bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(PreviewNameAllow(host, Sel(s), "ab", "a.example.com").status().code(),
            absl::StatusCode::kUnimplemented);
  // Already allowed by the built-in list.
  EXPECT_THAT(PreviewNameAllow(host, Sel(s), "default", "objects.githubusercontent.com")
                  .status()
                  .message(),
              HasSubstr("already allowed"));
}

}  // namespace
}  // namespace lazaret::config
