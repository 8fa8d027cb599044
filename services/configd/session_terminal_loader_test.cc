// The [session] and [terminal] tables (and their profiles.<name> forms)
// through the whole pipeline: defaults, a profile's own value over the
// global one, the sources, bad values, and the workspace clamp (on_detach
// only to "stop", detached_limit only lower, clipboard_write only false).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "services/configd/loader.h"
#include "services/configd/proto_convert.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using testing::Errors;
using ::testing::HasSubstr;
using testing::Load;
using testing::Scratch;
using testing::SourceOf;

TEST(SessionTerminalLoaderTest, DefaultsKeepTwelveHoursAndBlockTheClipboard) {
  Scratch s;
  LoadedConfig c = Load(s, "");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->on_detach_stop);
  EXPECT_EQ(p->detached_limit_seconds, 12u * 3600);
  EXPECT_FALSE(p->clipboard_write);
  ASSERT_NE(SourceOf(*p, "session.on_detach"), nullptr);
  EXPECT_EQ(SourceOf(*p, "session.on_detach")->layer, Layer::kEmbeddedDefault);
  ASSERT_NE(SourceOf(*p, "terminal.clipboard_write"), nullptr);

  config::v1::ResolvedProfile pb;
  ToProto(*p, &pb);
  EXPECT_EQ(pb.session().on_detach(), config::v1::ON_DETACH_KEEP);
  EXPECT_EQ(pb.session().detached_limit_seconds(), 43200u);
  EXPECT_FALSE(pb.terminal().clipboard_write());
}

TEST(SessionTerminalLoaderTest, AProfileOverridesTheGlobalTables) {
  Scratch s;
  LoadedConfig c = Load(s, R"(
[session]
on_detach = "stop"
detached_limit = "2h"
[terminal]
clipboard_write = true
[profiles.dev]
image = "localhost/x:1"
[profiles.dev.session]
on_detach = "keep"
detached_limit = "3d"
[profiles.dev.terminal]
clipboard_write = false
)");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> dev = c.Profile("dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_FALSE(dev->on_detach_stop);
  EXPECT_EQ(dev->detached_limit_seconds, 3u * 86400);
  EXPECT_FALSE(dev->clipboard_write);
  ASSERT_NE(SourceOf(*dev, "profiles.dev.session.detached_limit"), nullptr);
  EXPECT_EQ(SourceOf(*dev, "profiles.dev.session.detached_limit")->layer, Layer::kUser);
  absl::StatusOr<ResolvedProfile> def = c.Profile("default");
  ASSERT_TRUE(def.ok());
  EXPECT_TRUE(def->on_detach_stop);
  EXPECT_EQ(def->detached_limit_seconds, 7200u);
  EXPECT_TRUE(def->clipboard_write);
  EXPECT_EQ(SourceOf(*def, "terminal.clipboard_write")->layer, Layer::kUser);

  config::v1::ResolvedProfile pb;
  ToProto(*def, &pb);
  EXPECT_EQ(pb.session().on_detach(), config::v1::ON_DETACH_STOP);
  EXPECT_EQ(pb.session().detached_limit_seconds(), 7200u);
  EXPECT_TRUE(pb.terminal().clipboard_write());
}

TEST(SessionTerminalLoaderTest, BadValuesSayWhatIsAllowed) {
  Scratch s;
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& k : std::vector<Case>{
           {"[session]\non_detach = \"detach\"\n",
            "session.on_detach: \"detach\" is not a choice here"},
           {"[session]\non_detach = true\n", "session.on_detach"},
           {"[session]\ndetached_limit = \"12\"\n",
            "\"12\" is not a duration: write a whole number followed by s, m, h or d"},
           {"[session]\ndetached_limit = 3600\n", "expected a duration such as \"12h\""},
           {"[session]\ndetached_limit = \"30s\"\n",
            "\"30s\" is out of range: the value must be between \"1m\" and \"30d\""},
           {"[session]\ndetached_limit = \"31d\"\n", "is out of range"},
           {"[session]\ndetached_limit = \"1.5h\"\n", "is not a duration"},
           {"[terminal]\nclipboard_write = \"yes\"\n", "terminal.clipboard_write"},
           {"[terminal]\nclipboard = true\n", "unknown key 'clipboard'"},
           {"[session]\nclipboard_write = true\n", "'clipboard_write' belongs in [terminal]"},
           {"on_detach = \"stop\"\n", "'on_detach' belongs in [session]"},
           {"session = 1\n", "session"},
           {"[profiles.dev]\nimage = \"localhost/x:1\"\nsession = \"keep\"\n",
            "profiles.dev.session"},
           {"[profiles.dev]\nimage = \"localhost/x:1\"\n[profiles.dev.session]\ndetached_limt = "
            "\"1h\"\n",
            "did you mean 'detached_limit'?"},
       }) {
    LoadedConfig c = Load(s, k.text);
    EXPECT_FALSE(c.status().ok()) << k.text;
    EXPECT_THAT(Errors(c), HasSubstr(k.error)) << k.text;
  }
  // The bounds themselves are fine.
  for (const char* ok :
       {"[session]\ndetached_limit = \"1m\"\n", "[session]\ndetached_limit = \"30d\"\n",
        "[session]\ndetached_limit = \"720h\"\n"}) {
    LoadedConfig c = Load(s, ok);
    EXPECT_TRUE(c.status().ok()) << ok << Errors(c);
  }
}

constexpr char kSessionUser[] = R"(
[session]
detached_limit = "4h"
[profiles.st]
image = "localhost/x:1"
[profiles.st.session]
on_detach = "stop"
[profiles.cb]
image = "localhost/x:1"
[profiles.cb.terminal]
clipboard_write = true
)";

struct NarrowCase {
  const char* name;
  const char* workspace;
  const char* refusal;  // substring of the errors; null: accepted
};

TEST(SessionTerminalNarrowingTest, AWorkspaceMayOnlyStopSoonerAndBlockTheClipboard) {
  Scratch s;
  for (const NarrowCase& k : std::vector<NarrowCase>{
           {"stop", "[session]\non_detach = \"stop\"\n", nullptr},
           {"keep where kept", "[session]\non_detach = \"keep\"\n", nullptr},
           {"keep where the profile stops", "[profiles.st.session]\non_detach = \"keep\"\n",
            "sets profiles.st.session.on_detach to \"keep\"; your configuration stops a session "
            "when its last terminal detaches"},
           {"lower", "[session]\ndetached_limit = \"1h\"\n", nullptr},
           {"same", "[profiles.st.session]\ndetached_limit = \"240m\"\n", nullptr},
           {"higher", "[session]\ndetached_limit = \"5h\"\n",
            "lazaret.toml:2:18: session.detached_limit: raises session.detached_limit to \"5h\"; "
            "your configuration has \"4h\" (a workspace may only lower it)"},
           {"higher in a profile that follows the global limit",
            "[profiles.cb.session]\ndetached_limit = \"1d\"\n",
            "raises profiles.cb.session.detached_limit to \"1d\"; your configuration has \"4h\""},
           {"clipboard off", "[terminal]\nclipboard_write = false\n", nullptr},
           {"clipboard on where on", "[profiles.cb.terminal]\nclipboard_write = true\n", nullptr},
           {"clipboard on where off", "[terminal]\nclipboard_write = true\n",
            "sets terminal.clipboard_write, which would let the sandbox set your clipboard"},
           {"clipboard on in a profile where off",
            "[profiles.st.terminal]\nclipboard_write = true\n",
            "sets profiles.st.terminal.clipboard_write"},
       }) {
    LoadedConfig loaded = Load(s, kSessionUser, k.workspace);
    if (k.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << k.name << "\n" << Errors(loaded);
      continue;
    }
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << k.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(k.refusal)) << k.name;
    LoadedConfig trusted = Load(s, kSessionUser, k.workspace, "", /*workspace_trusted=*/true);
    EXPECT_TRUE(trusted.status().ok()) << k.name << "\n" << Errors(trusted);
  }
}

TEST(SessionTerminalNarrowingTest, ANarrowingWorkspaceWinsAndAnExplicitFileMayWiden) {
  Scratch s;
  LoadedConfig c = Load(s, kSessionUser, "[profiles.cb.terminal]\nclipboard_write = false\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> cb = c.Profile("cb");
  ASSERT_TRUE(cb.ok());
  EXPECT_FALSE(cb->clipboard_write);
  EXPECT_EQ(SourceOf(*cb, "profiles.cb.terminal.clipboard_write")->layer, Layer::kWorkspace);
  // --config is the user's own: it may turn clipboard writes on.
  c = Load(s, kSessionUser, "",
           "[terminal]\nclipboard_write = true\n[session]\ndetached_limit = \"2d\"\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> def = c.Profile("default");
  ASSERT_TRUE(def.ok());
  EXPECT_TRUE(def->clipboard_write);
  EXPECT_EQ(def->detached_limit_seconds, 2u * 86400);
}

}  // namespace
}  // namespace lazaret::config
