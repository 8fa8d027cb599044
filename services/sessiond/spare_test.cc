// Which requests share a spare (SpareKey) and what a spare is prepared
// from (SpareRequest), on real files: a workspace and a --config file
// reached by a relative path and through a symlink.
#include "services/sessiond/spare.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace lazaret::sessiond {
namespace {

namespace pb = ::lazaret::session::v1;

class SpareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-spare-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char canonical[PATH_MAX];
    ASSERT_NE(realpath(tmpl, canonical), nullptr);
    dir_ = canonical;
    ws_ = dir_ + "/ws";
    other_ws_ = dir_ + "/other";
    ASSERT_EQ(mkdir(ws_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(other_ws_.c_str(), 0700), 0);
    config_ = ws_ + "/lazaret.toml";
    std::ofstream(config_) << "# a profile file\n";
    std::ofstream(ws_ + "/second.toml") << "# another\n";
    ASSERT_EQ(symlink(config_.c_str(), (ws_ + "/link.toml").c_str()), 0);
  }
  void TearDown() override { (void)!system(("rm -rf " + dir_).c_str()); }

  pb::StartRequest Request(std::vector<std::string> args) const {
    pb::StartRequest r;
    r.set_workspace_dir(ws_);
    for (auto& a : args) r.add_args(std::move(a));
    (*r.mutable_env())["TERM"] = "xterm-256color";
    (*r.mutable_env())["SUDO_UID"] = "1000";
    return r;
  }

  std::string dir_, ws_, other_ws_, config_;
};

TEST_F(SpareTest, NoKeyForARequestNoSpareServes) {
  EXPECT_TRUE(SpareKey(Request({"dev"})).has_value());
  EXPECT_FALSE(SpareKey(Request({"--dry-run", "dev"})).has_value());
  EXPECT_FALSE(SpareKey(Request({"--help"})).has_value());
  EXPECT_FALSE(SpareKey(Request({"-h", "dev"})).has_value());
  // Arguments that do not parse: the worker reports them.
  EXPECT_FALSE(SpareKey(Request({"--no-such-option", "dev"})).has_value());
  EXPECT_FALSE(SpareKey(Request({"--config"})).has_value());
  // No workspace, or one that is not absolute.
  pb::StartRequest relative = Request({"dev"});
  relative.set_workspace_dir("ws");
  EXPECT_FALSE(SpareKey(relative).has_value());
  relative.clear_workspace_dir();
  EXPECT_FALSE(SpareKey(relative).has_value());
  // A spare's own request is served by no other spare.
  pb::StartRequest spare = Request({"dev"});
  spare.set_spare(true);
  EXPECT_FALSE(SpareKey(spare).has_value());
}

TEST_F(SpareTest, KeyDiffersInWhatDecidesTheSidecar) {
  const pb::StartRequest base = Request({"--config", config_, "dev"});
  const std::optional<std::string> key = SpareKey(base);
  ASSERT_TRUE(key.has_value());

  auto differs = [&](const pb::StartRequest& r) {
    std::optional<std::string> k = SpareKey(r);
    return k.has_value() && *k != *key;
  };
  pb::StartRequest r = base;
  r.set_workspace_dir(other_ws_);
  EXPECT_TRUE(differs(r));
  EXPECT_TRUE(differs(Request({"--config", ws_ + "/second.toml", "dev"})));
  EXPECT_TRUE(differs(Request({"dev"})));  // the default profile file
  EXPECT_TRUE(differs(Request({"--config", config_, "ci"})));
  EXPECT_TRUE(differs(Request({"--config", config_})));  // the default profile
  r = base;
  (*r.mutable_env())["SUDO_UID"] = "1001";
  EXPECT_TRUE(differs(r));
  r = base;
  r.mutable_env()->erase("SUDO_UID");
  EXPECT_TRUE(differs(r));
  r = base;
  (*r.mutable_env())["SUDO_UID"] = "";  // set but empty is not unset
  EXPECT_TRUE(differs(r));
  r = base;
  (*r.mutable_env())["LAZARET_RUNSC"] = "/opt/runsc";
  EXPECT_TRUE(differs(r));
  pb::StartRequest runsc_a = r;
  (*r.mutable_env())["LAZARET_RUNSC"] = "/usr/bin/runsc";
  ASSERT_TRUE(SpareKey(runsc_a).has_value());
  EXPECT_NE(SpareKey(r), SpareKey(runsc_a));
}

TEST_F(SpareTest, KeyIsTheSameWhenOnlyTheSessionItselfDiffers) {
  const pb::StartRequest base = Request({"--config", config_, "dev"});
  const std::optional<std::string> key = SpareKey(base);
  ASSERT_TRUE(key.has_value());

  auto same = [&](const pb::StartRequest& r) { return SpareKey(r) == key; };
  // The command.
  EXPECT_TRUE(same(Request({"--config", config_, "dev", "make", "test"})));
  EXPECT_TRUE(same(Request({"--config", config_, "dev", "--", "--help"})));
  // The session's own options.
  EXPECT_TRUE(same(Request({"--branch", "feature", "--worktree", "--config", config_, "--approver",
                            "remote", "-p", "8080", "dev"})));
  EXPECT_TRUE(same(Request({"--config=" + config_, "dev"})));
  // The same file by a relative path and through a symlink.
  EXPECT_TRUE(same(Request({"--config", "lazaret.toml", "dev"})));
  EXPECT_TRUE(same(Request({"--config", ws_ + "/link.toml", "dev"})));
  // Other environment and the terminal.
  pb::StartRequest r = base;
  (*r.mutable_env())["TERM"] = "dumb";
  (*r.mutable_env())["NO_COLOR"] = "1";
  r.mutable_terminal()->set_rows(24);
  r.mutable_terminal()->set_cols(80);
  EXPECT_TRUE(same(r));
}

TEST_F(SpareTest, SpareRequestKeepsOnlyWhatTheSpareIsPreparedFrom) {
  pb::StartRequest r = Request(
      {"--branch", "feature", "--config", "link.toml", "-p", "8080", "dev", "--", "make", "test"});
  (*r.mutable_env())["LAZARET_RUNSC"] = "/opt/runsc";
  (*r.mutable_env())["ANTHROPIC_API_KEY"] = "sk-secret";
  r.mutable_terminal()->set_rows(24);
  r.mutable_terminal()->set_cols(80);

  const pb::StartRequest spare = SpareRequest(r);
  EXPECT_TRUE(spare.spare());
  EXPECT_EQ(spare.workspace_dir(), ws_);
  // --config by its canonical path, then the profile; no command.
  ASSERT_EQ(spare.args_size(), 3);
  EXPECT_EQ(spare.args(0), "--config");
  EXPECT_EQ(spare.args(1), config_);
  EXPECT_EQ(spare.args(2), "dev");
  ASSERT_EQ(spare.env_size(), 2);
  EXPECT_EQ(spare.env().at("SUDO_UID"), "1000");
  EXPECT_EQ(spare.env().at("LAZARET_RUNSC"), "/opt/runsc");
  EXPECT_FALSE(spare.has_terminal());

  // What the spare is prepared from has the key of the request it serves.
  pb::StartRequest as_client = spare;
  as_client.set_spare(false);
  EXPECT_EQ(SpareKey(as_client), SpareKey(r));
}

TEST_F(SpareTest, SpareRequestOfTheDefaultProfileHasNoArguments) {
  pb::StartRequest r = Request({"--", "make"});
  r.mutable_env()->erase("SUDO_UID");
  ASSERT_TRUE(SpareKey(r).has_value());
  const pb::StartRequest spare = SpareRequest(r);
  EXPECT_TRUE(spare.spare());
  EXPECT_EQ(spare.args_size(), 0);
  EXPECT_EQ(spare.env_size(), 0);
  pb::StartRequest as_client = spare;
  as_client.set_spare(false);
  EXPECT_EQ(SpareKey(as_client), SpareKey(r));
}

}  // namespace
}  // namespace lazaret::sessiond
