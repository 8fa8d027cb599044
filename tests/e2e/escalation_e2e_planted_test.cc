// Escalations aimed at planted code, end to end: inside a real sandbox the
// agent plants git repositories (git init, then core.fsmonitor,
// core.hooksPath, a gitfile pointing at a bare store) in a workspace
// subdirectory named ' ' and in ordinary names, and asks for `git status`
// there (--cwd, and `git -C DIR` from /workspace) and for the auto-approved
// `uname -s`. Nothing auto-approves them, the scripted approver sees the
// findings, approving git never runs the planted program on the host (a
// marker file on the host says), code planted after the decision stops the
// run, and a plain request still runs. One session of its own (a workspace
// that is a git repository, so the Git Shadow is on); runs rootful and
// rootless in escalation_e2e_test. Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using PlantedStrings = std::vector<std::string>;

bool HostExists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

// The session's requests waiting for a decision, from ListSessions.
bool SessionHasPending(const std::string& session_id) {
  const CommandResult r =
      RunAs("/", {test::Binary("lazaret-test-approver"), "--socket=" + BrokerSocket(), "sessions"});
  const size_t at = r.out.find("\"session_id\":\"" + session_id + "\"");
  if (at == std::string::npos) return false;
  const size_t end = r.out.find('}', at);
  const std::string entry = r.out.substr(at, end == std::string::npos ? end : end - at);
  return absl::StrContains(entry, "\"pending\":") && !absl::StrContains(entry, "\"pending\":0");
}

class PlantedE2eTest : public EscE2eTest {
 protected:
  // The session and its workspace: a git repository (with a commit and a
  // subdirectory `clean/`) made by the developer before the session.
  static void SetUpTestSuite() {
    if (geteuid() != 0 || !EscWorld::Get().error().empty()) return;
    ws_ = new UserDir("escws-planted");
    markers_ = new UserDir("escplanted-markers");
    chmod(markers_->path().c_str(), 0777);
    const std::string repo = ws_->path();
    for (const PlantedStrings& argv : std::vector<PlantedStrings>{
             {"git", "init", "-q", "-b", "main", "."},
             {"mkdir", "clean"},
             {"touch", "clean/file"},
             {"git", "add", "clean/file"},
             {"git", "-c", "user.name=d", "-c", "user.email=d@e", "commit", "-q", "-m", "c"}}) {
      const CommandResult r = RunAs(repo, argv);
      if (r.exit_code != 0) {
        error_ = new std::string("preparing the workspace: " + r.err);
        return;
      }
    }
    // Anything changed in the session's first second counts as the
    // session's (SessionRecord.started_unix has whole seconds): the
    // developer's repository is made well before it.
    sleep(2);
    absl::StatusOr<std::unique_ptr<net::NetSession>> s = net::NetSession::Start(
        repo, EscWorld::Get().config(), kProfile, markers_->path() + "/session.log");
    if (!s.ok()) {
      error_ = new std::string(s.status().ToString());
      return;
    }
    session_ = s->release();
  }
  static void TearDownTestSuite() {
    if (session_ != nullptr) session_->End();
    delete session_;
    session_ = nullptr;
    delete ws_;
    delete markers_;
  }
  void SetUp() override {
    EscE2eTest::SetUp();
    ASSERT_EQ(error_, nullptr) << *error_;
    ASSERT_NE(session_, nullptr);
  }

  static std::string Marker(const std::string& name) { return markers_->path() + "/" + name; }
  // The agent, inside: plants a repository whose fsmonitor touches a
  // marker on the host, in /workspace/DIR.
  static void PlantFsmonitor(const std::string& dir, const std::string& marker) {
    const CommandResult r = session_->Exec(
        {"sh", "-c",
         "mkdir -p \"$1\" && git init -q \"$1\" && git -C \"$1\" config core.fsmonitor "
         "\"touch $2; false\"",
         "sh", "/workspace/" + dir, Marker(marker)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Runs `args` through lazaret-escalate with a scripted approver that
  // approves the first request whose argv[0] is `argv0`; returns the
  // client's result and the approver's decision lines.
  static CommandResult Approved(const std::string& argv0, const PlantedStrings& args,
                                std::string* decisions) {
    auto approver = ScriptedApprover::Start({"--session=" + session_->id(), "--argv0=" + argv0,
                                             "--approve", "--count=1", "--timeout=60"});
    CommandResult r = Escalate(*session_, args);
    EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
    for (const std::string& d : approver->Decisions()) absl::StrAppend(decisions, d, "\n");
    return r;
  }

  static UserDir* ws_;
  static UserDir* markers_;
  static net::NetSession* session_;
  static std::string* error_;
};

UserDir* PlantedE2eTest::ws_ = nullptr;
UserDir* PlantedE2eTest::markers_ = nullptr;
net::NetSession* PlantedE2eTest::session_ = nullptr;
std::string* PlantedE2eTest::error_ = nullptr;

TEST_F(PlantedE2eTest, PlantedRepositoriesAreShownNeverAutoApprovedAndGitNeverRunsThem) {
  // Four forms: fsmonitor in ' ', fsmonitor and hooksPath in an ordinary
  // name, a gitfile pointing at a bare store with fsmonitor, and a clean
  // filter (a driver name no environment override can know).
  PlantFsmonitor(" ", "space");
  PlantFsmonitor("pl-norm", "norm");
  ASSERT_EQ(session_
                ->Exec({"sh", "-c",
                        "cd /workspace/pl-norm && mkdir h && printf '#!/bin/sh\\ntouch %s\\n' "
                        "\"$1\" > h/post-index-change && chmod +x h/post-index-change && "
                        "git config core.hooksPath h",
                        "sh", Marker("hook")})
                .exit_code,
            0);
  ASSERT_EQ(session_
                ->Exec({"sh", "-c",
                        "cd /workspace && git init -q --bare pl-store && "
                        "git --git-dir=pl-store config core.fsmonitor \"touch $1; false\" && "
                        "git --git-dir=pl-store config core.bare false && "
                        "mkdir pl-gitfile && echo 'gitdir: ../pl-store' > pl-gitfile/.git",
                        "sh", Marker("gitfile")})
                .exit_code,
            0);
  ASSERT_EQ(session_
                ->Exec({"sh", "-c",
                        "mkdir /workspace/pl-filter && cd /workspace/pl-filter && git init -q && "
                        "echo a > f && git add f && "
                        "git -c user.name=a -c user.email=b commit -q -m x && "
                        "git config filter.x.clean \"touch $1; cat\" && "
                        "echo 'f filter=x' > .gitattributes && sleep 1 && touch f",
                        "sh", Marker("filter")})
                .exit_code,
            0);

  // `uname -s` is auto-approved (the world's entry) - except here.
  const auto t0 = std::chrono::steady_clock::now();
  std::string seen;
  CommandResult u = Approved("uname", {"--cwd", "/workspace/ ", "--", "uname", "-s"}, &seen);
  EXPECT_EQ(u.exit_code, 0) << u.err;
  EXPECT_THAT(u.err, HasSubstr("waiting for approval")) << "it must not be auto-approved";
  EXPECT_THAT(seen, HasSubstr("\"findings\":[\"a git repository created in this session at "
                              "'/workspace/\\\\x20/.git'"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(kApprovalTimeout));

  // git at each planted repository: shown, approved, never run.
  struct Case {
    PlantedStrings args;
    std::string finding;
  };
  const Case cases[] = {
      {{"--cwd", "/workspace/ ", "--", "git", "status"}, "'/workspace/\\\\x20/.git'"},
      {{"--", "git", "-C", "pl-norm", "status"}, "'/workspace/pl-norm/.git'"},
      {{"--cwd", "/workspace/pl-gitfile", "--", "git", "status"},
       "a .git file (gitfile) created or changed in this session at "
       "'/workspace/pl-gitfile/.git'"},
      {{"--cwd", "/workspace/pl-filter", "--", "git", "status"}, "'/workspace/pl-filter/.git'"},
  };
  for (const Case& c : cases) {
    std::string decisions;
    const CommandResult r = Approved("git", c.args, &decisions);
    const std::string what = absl::StrJoin(c.args, " ");
    EXPECT_THAT(decisions, HasSubstr("\"findings\":[")) << what;
    EXPECT_THAT(decisions, HasSubstr(c.finding)) << what;
    EXPECT_EQ(r.exit_code, 240) << what << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("not run: git takes orders from the repository")) << what;
    EXPECT_EQ(r.out, "") << what;
  }

  // The audit says why, with the findings.
  ASSERT_AUDIT(records, session_->id());
  std::vector<AuditRecord> git = WithArgv(records, {"git", "status"});
  ASSERT_FALSE(git.empty());
  for (const AuditRecord& rec : git) {
    if (!absl::StrContains(rec.cwd(), "pl-") && !absl::EndsWith(rec.cwd(), "/ ")) continue;
    EXPECT_EQ(DecisionName(rec), "DECISION_REFUSED") << rec.cwd();
    EXPECT_FALSE(rec.ran()) << rec.cwd();
    EXPECT_THAT(rec.reason(), HasSubstr("this session planted")) << rec.cwd();
  }
  std::vector<AuditRecord> un = WithArgv(records, {"uname", "-s"});
  ASSERT_FALSE(un.empty());
  EXPECT_EQ(DecisionName(un.back()), "DECISION_APPROVED");
  EXPECT_THAT(un.back().reason(), HasSubstr("aimed at code this session planted"));

  for (const char* m : {"space", "norm", "hook", "gitfile", "filter"}) {
    EXPECT_FALSE(HostExists(Marker(m))) << "the planted program ran on the host: " << m;
  }

  // The plants are live: the developer's own git, run there by hand, would
  // have run them (so the absence above is the broker's doing).
  // The filter even with the broker's git protections: they are not the
  // wall, the refusal is.
  RunAs(ws_->path() + "/ ", {"git", "-c", "safe.directory=*", "status"});
  EXPECT_TRUE(HostExists(Marker("space"))) << "the planted fsmonitor is not live; the test "
                                              "proves nothing";
  RunAs(ws_->path() + "/pl-filter", {"git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false",
                                     "-c", "core.hooksPath=/dev/null", "status"});
  EXPECT_TRUE(HostExists(Marker("filter"))) << "the planted filter is not live";
}

TEST_F(PlantedE2eTest, CodePlantedAfterTheDecisionStopsTheRun) {
  ASSERT_EQ(session_->Exec({"mkdir", "-p", "/workspace/late"}).exit_code, 0);
  // `id` waits for a human; the repository appears while it waits.
  CommandResult r;
  std::thread agent([&] { r = Escalate(*session_, {"--cwd", "/workspace/late", "--", "id"}); });
  const bool pending =
      test::WaitFor([] { return SessionHasPending(session_->id()); }, std::chrono::seconds(15));
  if (pending) PlantFsmonitor("late", "late");
  std::string decisions;
  auto approver = ScriptedApprover::Start(
      {"--session=" + session_->id(), "--argv0=id", "--approve", "--count=1", "--timeout=60"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  agent.join();
  ASSERT_TRUE(pending) << "the request never waited";
  EXPECT_THAT(approver->Log(), Not(HasSubstr("\"findings\""))) << "it was clean when judged";
  EXPECT_EQ(r.exit_code, 240) << r.err;
  EXPECT_THAT(r.err, HasSubstr("since the request was judged, the session planted code"));
  EXPECT_THAT(r.err, HasSubstr("'/workspace/late/.git'"));
  EXPECT_EQ(r.out, "");
}

TEST_F(PlantedE2eTest, PlainRequestsStillRun) {
  // A clean directory of the workspace's own repository: git runs (pinned
  // to it), and so does an auto-approved command.
  std::string decisions;
  const CommandResult g =
      Approved("git", {"--cwd", "/workspace/clean", "--", "git", "status", "--short"}, &decisions);
  EXPECT_THAT(decisions, Not(HasSubstr("\"findings\"")));
  EXPECT_THAT(g.err, Not(HasSubstr("not run"))) << g.err;
  ASSERT_AUDIT(records, session_->id());
  std::vector<AuditRecord> rec = WithArgv(records, {"git", "status", "--short"});
  ASSERT_FALSE(rec.empty());
  EXPECT_TRUE(rec.back().ran()) << rec.back().reason();
  EXPECT_EQ(DecisionName(rec.back()), "DECISION_APPROVED");
  if (Env().uid != 0) {
    // Rootful, the broker runs git as root on the developer's repository,
    // which git refuses as of dubious ownership.
    EXPECT_EQ(g.exit_code, 0) << g.err;
  }

  const CommandResult u = Escalate(*session_, {"--cwd", "/workspace/clean", "--", "uname", "-s"});
  EXPECT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(u.out, "Linux\n");
  EXPECT_THAT(u.err, Not(HasSubstr("waiting for approval")));
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
