// Host escalation end to end: the real lazaret-escalate inside a real
// sandbox (runsc, no host socket: through the sidecar's relay) asks
// lazaret-brokerd over mTLS; the
// scripted approver decides through the approver API; the host and the
// audit log are checked afterwards. The same binary runs rootful and
// rootless (LAZARET_E2E_MODE); sessions are shared through
// escalation_e2e_world.h. Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Strings = std::vector<std::string>;

::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new EscWorldEnvironment);

// The broker's fixed PATH, resolved as it resolves argv[0].
std::string ResolveOnFixedPath(const std::string& name) {
  for (const char* dir :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    char buf[PATH_MAX];
    if (access(p.c_str(), X_OK) == 0 && realpath(p.c_str(), buf) != nullptr) return buf;
  }
  return "";
}

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

// "uid=0(root) gid=0(root)": who ran it, without the supplementary groups.
std::string UidGid(const std::string& id_output) {
  std::vector<std::string> t = absl::StrSplit(id_output, ' ');
  return t.size() >= 2 ? t[0] + " " + t[1] : id_output;
}

bool HostPathExists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST_F(EscE2eTest, ApprovedIdPrintsTheHostsAnswerAndIsAudited) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=id", "--approve", "--count=1", "--timeout=60"});
  CommandResult r = Escalate(*a, {"--justify", "why", "--", "id"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(UidGid(Trim(r.out)), UidGid(HostId())) << "the agent must see the host's id";
  EXPECT_THAT(r.err, HasSubstr("waiting for approval on the host"));

  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> id = WithArgv(records, {"id"});
  ASSERT_FALSE(id.empty()) << "no audit record of `id`";
  const AuditRecord& rec = id.back();
  EXPECT_EQ(DecisionName(rec), "DECISION_APPROVED");
  EXPECT_EQ(rec.approver().name(), "lazaret-test-approver");
  EXPECT_EQ(rec.approver().kind(), approver::v1::Approver::KIND_SCRIPT);
  EXPECT_EQ(Strings(rec.ran_argv().begin(), rec.ran_argv().end()), Strings{"id"});
  EXPECT_TRUE(rec.ran());
  EXPECT_EQ(rec.exit_code(), 0);
  EXPECT_EQ(rec.binary(), ResolveOnFixedPath("id"));
  EXPECT_EQ(rec.justification(), "why");
  EXPECT_EQ(rec.profile(), kProfile);
  EXPECT_EQ(rec.session_id(), a->id());
  EXPECT_EQ(rec.cwd(), RealPath(W().Workspace(Slot::kA)));
}

TEST_F(EscE2eTest, AutoApprovedEntriesRunWithoutAnApprover) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  // No approver runs: only the auto-approve list can let these through,
  // long before the approval timeout.
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = Escalate(*a, {"--justify", "kernel", "--", "uname", "-s"});
  EXPECT_LT(Seconds(t0), kApprovalTimeout / 2.0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Linux\n");
  EXPECT_THAT(r.err, Not(HasSubstr("waiting for approval")));

  CommandResult t = Escalate(*a, {"--", "test", "-e", "/nonexistent-lazaret-e2e"});
  EXPECT_EQ(t.exit_code, 1) << "the host's exit code passes through: " << t.err;

  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> u = WithArgv(records, {"uname", "-s"});
  ASSERT_FALSE(u.empty());
  EXPECT_EQ(DecisionName(u.back()), "DECISION_AUTO_APPROVED");
  EXPECT_EQ(u.back().auto_approve_entry(), "uname");
  EXPECT_TRUE(u.back().approver().name().empty());
  EXPECT_EQ(u.back().exit_code(), 0);
  std::vector<AuditRecord> e = WithArgv(records, {"test", "-e", "/nonexistent-lazaret-e2e"});
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(DecisionName(e.back()), "DECISION_AUTO_APPROVED");
  EXPECT_EQ(e.back().auto_approve_entry(), kExactEntry);
  EXPECT_TRUE(e.back().ran());
  EXPECT_EQ(e.back().exit_code(), 1);
}

TEST_F(EscE2eTest, DeniedRequestExits240WithTheReason) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=id", "--deny=not today lzt", "--count=1", "--timeout=60"});
  CommandResult r = Escalate(*a, {"--justify", "please", "--", "id"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_EQ(r.exit_code, 240) << r.err;
  EXPECT_THAT(r.err, HasSubstr("not today lzt"));
  EXPECT_EQ(r.out, "");
  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> id = WithArgv(records, {"id"});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(DecisionName(id.back()), "DECISION_DENIED");
  EXPECT_EQ(id.back().reason(), "not today lzt");
  EXPECT_FALSE(id.back().ran());
  EXPECT_EQ(id.back().approver().name(), "lazaret-test-approver");
}

TEST_F(EscE2eTest, ShellSyntaxNeverRunsThroughAShell) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string p1 = "/tmp/lzt-pwned-" + a->id() + "-semi";
  const std::string p2 = "/tmp/lzt-pwned-" + a->id() + "-subst";
  const std::string p3 = "/tmp/lzt-pwned-" + a->id() + "-tick";
  struct Case {
    std::string command;
    std::string output;  // what echo prints when the words reach it as words
    std::string pwned;
  };
  const std::vector<Case> cases = {
      {"echo hi; touch " + p1, "hi; touch " + p1 + "\n", p1},
      {"echo $(touch " + p2 + ")", "$(touch " + p2 + ")\n", p2},
      {"echo `touch " + p3 + "`", "`touch " + p3 + "`\n", p3},
  };
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=echo", "--approve", "--count=3", "--timeout=90"});
  for (const auto& c : cases) {
    CommandResult r = Escalate(*a, {"-c", c.command});
    EXPECT_EQ(r.exit_code, 0) << c.command << ": " << r.err;
    EXPECT_EQ(r.out, c.output) << c.command;
    EXPECT_FALSE(HostPathExists(c.pwned)) << c.command << " ran through a shell";
  }
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  for (const auto& c : cases) unlink(c.pwned.c_str());
}

TEST_F(EscE2eTest, RequestEnvironmentNeverReachesTheHost) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=env", "--approve", "--count=1", "--timeout=60"});
  CommandResult r =
      Escalate(*a, {"--", "env"}, {"LD_PRELOAD=/x", "GIT_DIR=/x", "PAGER=x", "BASH_ENV=/x"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> env;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    const size_t eq = l.find('=');
    ASSERT_NE(eq, std::string::npos) << "not NAME=VALUE: " << l;
    env[l.substr(0, eq)] = l.substr(eq + 1);
  }
  std::vector<std::string> names;
  for (const auto& [k, v] : env) names.push_back(k);
  EXPECT_EQ(names, (Strings{"HOME", "LANG", "LOGNAME", "PATH", "USER"})) << r.out;
  const passwd* pw = getpwuid(Env().uid);
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(env["PATH"], "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(env["HOME"], pw->pw_dir);
  EXPECT_EQ(env["USER"], pw->pw_name);
  EXPECT_EQ(env["LOGNAME"], pw->pw_name);
  EXPECT_EQ(env["LANG"], "C.UTF-8");
}

TEST_F(EscE2eTest, WorkingDirectoryStaysInsideTheWorkspace) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string ws = W().Workspace(Slot::kA);
  ASSERT_EQ(RunAs(ws, {"mkdir", "-p", "sub"}).exit_code, 0);
  ASSERT_EQ(RunAs(ws, {"ln", "-sfn", "/etc", "escape"}).exit_code, 0);
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=pwd", "--approve", "--count=1", "--timeout=60"});
  CommandResult r = Escalate(*a, {"--cwd", "/workspace/sub", "--", "pwd"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, RealPath(ws) + "/sub\n");

  // uname -s is auto-approved: only the cwd can stop these.
  for (const std::string cwd : {"/etc", "/workspace/escape", "/workspace/../etc"}) {
    ASSERT_AUDIT(before, a->id());
    const size_t n = WithArgv(before, {"uname", "-s"}).size();
    CommandResult o = Escalate(*a, {"--cwd", cwd, "--", "uname", "-s"});
    EXPECT_TRUE(o.exit_code == 240 || o.exit_code == 243) << cwd << ": " << o.exit_code << o.err;
    EXPECT_THAT(o.err, HasSubstr("cwd")) << cwd;
    EXPECT_EQ(o.out, "") << cwd;
    ASSERT_AUDIT(after, a->id());
    std::vector<AuditRecord> u = WithArgv(after, {"uname", "-s"});
    ASSERT_EQ(u.size(), n + 1) << cwd << ": one record per request";
    EXPECT_EQ(DecisionName(u.back()), "DECISION_REFUSED") << cwd;
    EXPECT_FALSE(u.back().ran()) << cwd;
    EXPECT_THAT(u.back().reason(), HasSubstr("cwd")) << cwd;
  }
}

TEST_F(EscE2eTest, UnansweredRequestExpiresAfterTheApprovalTimeout) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = Escalate(*a, {"--justify", "nobody answers", "--", "id"});
  const double took = Seconds(t0);
  EXPECT_EQ(r.exit_code, 241) << r.err;
  EXPECT_GE(took, kApprovalTimeout - 1);
  EXPECT_LT(took, kApprovalTimeout + 15);
  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> id = WithArgv(records, {"id"});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(DecisionName(id.back()), "DECISION_EXPIRED");
  EXPECT_FALSE(id.back().ran());
}

TEST_F(EscE2eTest, AbortEndsTheSession) {
  std::string ws;
  absl::StatusOr<std::unique_ptr<net::NetSession>> e = W().StartOwn(W().config(), kProfile, &ws);
  ASSERT_TRUE(e.ok()) << e.status();
  net::NetSession& s = **e;
  const std::string id = s.id();
  auto approver = ScriptedApprover::Start(
      {"--session=" + id, "--argv0=id", "--abort", "--count=1", "--timeout=60"});
  CommandResult r = Escalate(s, {"--justify", "abort me", "--", "id"});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(s.WaitExit(60), -1) << "lazaret run did not end after the abort:\n" << s.Log();
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return Trim(Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.session=" + id})
                        .out)
            .empty();
      },
      std::chrono::seconds(60)))
      << "containers of the aborted session are left";
  ASSERT_AUDIT(records, id);
  std::vector<AuditRecord> a = WithArgv(records, {"id"});
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(DecisionName(a.back()), "DECISION_ABORTED");
  EXPECT_FALSE(a.back().ran());
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
