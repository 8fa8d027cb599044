// A real coding agent CLI in the sandbox (held changes end to end, the
// part that needs the network): Claude Code, installed from npm inside a
// profile whose /usr persists, adds a project MCP server. It works inside
// (the next session lists the server), the host folder gets no .mcp.json,
// and `lazaret held list` shows it created. The trixie image has no node:
// the first session installs Debian's nodejs with apt and npm from the
// registry (the Debian mirror and the npm registry are what this machine
// kind reaches; docs/platform-measurements.md). About a minute or more
// (many small files under gVisor), so it has ctests of their own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/e2e/held_e2e_world.h"

namespace lazaret::test::e2e::held {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

bool AgentExists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

class HeldAgentCliE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { world = new HeldWorld(); }
  static void TearDownTestSuite() {
    delete world;
    world = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ASSERT_EQ(world->error(), "");
  }
  void TearDown() override {
    EXPECT_THAT(LeftBehind(), IsEmpty()) << "containers or session directories left behind";
  }
  static HeldWorld* world;
};
HeldWorld* HeldAgentCliE2eTest::world = nullptr;

TEST_F(HeldAgentCliE2eTest, ClaudeCodeProjectMcpServerWorksInsideAndIsHeld) {
  ASSERT_EQ(test::Run({"sh", "-c", "command -v curl"}).exit_code, 0)
      << "curl is not installed on the host (deploy/setup-host.sh installs it)";
  for (const char* url : {"https://registry.npmjs.org/@anthropic-ai%2fclaude-code", kNpmTarball,
                          "http://deb.debian.org/debian/dists/trixie/InRelease"}) {
    const std::string why = UnreachableFromHost(url);
    ASSERT_EQ(why, "") << "the install needs the real network: " << why;
  }
  UserDir ws_dir("hagent");
  const std::string& ws = ws_dir.path();
  ASSERT_EQ(UserSh(ws,
                   "git init -q . && echo '# demo' > README.md && git add -A && "
                   "git commit -q -m init")
                .exit_code,
            0);
  const auto before = TreeState(ws, {".git"});

  // Install (Debian's nodejs and npm, InstallNodeAndNpmScript; the CLI
  // below /usr/local), then add a project-scoped MCP server in the folder.
  const std::string install = absl::StrCat(
      "set -e\n", InstallNodeAndNpmScript(),
      "if ! command -v claude >/dev/null; then\n"
      "  timeout 900 npm install -g --no-fund --no-audit @anthropic-ai/claude-code >/tmp/npm.log "
      "2>&1 || { tail -20 /tmp/npm.log; exit 73; }\n"
      "fi\n"
      "claude --version\ncd /workspace\n"
      "timeout 300 claude mcp add --scope project demo -- echo hi\necho MCP-ADD-DONE\n");
  CommandResult installed = RunSession(ws, install, kAgentProfile);
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  EXPECT_THAT(installed.out, HasSubstr("Claude Code")) << installed.out;
  EXPECT_THAT(installed.out, HasSubstr("MCP-ADD-DONE"));

  // The host folder never got it; the store has it.
  EXPECT_FALSE(AgentExists(ws + "/.mcp.json"))
      << "Claude Code's project settings reached the folder";
  EXPECT_EQ(TreeDiff(before, TreeState(ws, {".git"})), "");
  const HeldListing held = ListHeld(ws, kAgentProfile);
  ASSERT_EQ(held.error, "");
  auto it = held.paths.find(".mcp.json");
  ASSERT_TRUE(it != held.paths.end()) << held.raw;
  EXPECT_EQ(it->second.change, "created");

  // The next session (the CLI still installed in /usr) sees its own server.
  CommandResult listed = RunSession(
      ws, "cd /workspace && cat .mcp.json && echo '--- claude:' && timeout 300 claude mcp get demo",
      kAgentProfile);
  EXPECT_EQ(listed.exit_code, 0) << listed.out << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("\"demo\"")) << listed.out;
  const size_t said = listed.out.find("--- claude:");
  ASSERT_NE(said, std::string::npos) << listed.out << listed.err;
  const std::string claude_says = listed.out.substr(said);
  EXPECT_THAT(claude_says, HasSubstr("demo")) << claude_says;
  EXPECT_THAT(claude_says, HasSubstr("echo")) << "Claude Code does not list the server";
  EXPECT_FALSE(AgentExists(ws + "/.mcp.json")) << "a placeholder or the server list was left";
  EXPECT_EQ(TreeDiff(before, TreeState(ws, {".git"})), "");
}

}  // namespace
}  // namespace lazaret::test::e2e::held
