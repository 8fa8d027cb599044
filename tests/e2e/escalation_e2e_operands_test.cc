// Auto-approve admits operands only (issue 20 item 3), end to end: the real
// lazaret-escalate inside a real sandbox asks lazaret-brokerd; an entry
// followed by an option it does not list, or by a word that names a place
// (an absolute path, "..", a symlink in the workspace that leads out of
// it), goes to a human - here the scripted approver, which denies it - and
// the host file such a request would read never reaches the agent. Plain
// operands and listed options with plain values still run at once. The
// same binary runs rootful and rootless (LAZARET_E2E_MODE). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Strings = std::vector<std::string>;

::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new EscWorldEnvironment);

// The issue's configuration, accepted with only the one-word warnings,
// plus a date entry that lists options.
constexpr char kEntries[] =
    "auto_approve = [\"date\", \"dmesg\", { prefix = \"date\", options = [\"-u\", \"--date\"] }]\n";
constexpr char kDenyReason[] = "operands e2e: not auto";

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST_F(EscE2eTest, OnlyPlainOperandsAndListedOptionsAreAutoApproved) {
  // A host file outside the workspace, readable by the user the broker
  // runs commands as; its content is a marker that must never come back.
  UserDir secret_dir("escops-secret");
  const std::string marker = "LZTOPSECRET" + NewId("");
  const std::string secret = secret_dir.Write("host-file.txt", marker + "\n");
  UserDir cfg_dir("escops-cfg");
  const std::string config = cfg_dir.Write(
      "operands.toml",
      absl::StrCat("[escalation]\nenabled = true\n", kEntries,
                   "command_timeout = ", kCommandTimeout, "\napproval_timeout = ", kApprovalTimeout,
                   "\n\n", ProfileToml(kProfile, cfg_dir.path())));
  std::string ws;
  absl::StatusOr<std::unique_ptr<net::NetSession>> started = W().StartOwn(config, kProfile, &ws);
  ASSERT_TRUE(started.ok()) << started.status();
  net::NetSession& s = **started;

  // The agent plants a symlink to the host file, and a directory, in the
  // workspace.
  ASSERT_EQ(s.Exec({"ln", "-s", secret, "/workspace/link"}).exit_code, 0);
  ASSERT_EQ(s.Exec({"mkdir", "-p", "/workspace/sub"}).exit_code, 0);

  struct Refused {
    Strings argv;
    std::string why;  // part of the reason the approver is shown
  };
  const std::vector<Refused> refused = {
      {{"date", "-f", secret}, "'-f' is an option the matching entry does not list"},
      {{"dmesg", "-rF", secret}, "'-rF' is an option, and the matching entry lists none"},
      {{"date", "--file=" + secret}, "is an option the matching entry does not list"},
      {{"date", "-u", "-f", secret}, "'-f' is an option the matching entry does not list"},
      {{"date", "--date=@" + secret}, "contains '@'"},
      {{"date", secret}, "is an absolute path"},
      {{"date", "-u", "--date", secret}, "is an absolute path"},
      {{"date", "../" + secret_dir.path()}, "has a '..' component"},
      {{"date", "sub/../../x"}, "has a '..' component"},
      {{"date", "link"}, "'link' names a path that leads out of the working directory"},
      {{"date", "-u", "--date", "link"}, "'link' names a path that leads out"},
      {{"date", "--date=link"}, "'link' names a path that leads out"},
      {{"date", "file:///etc/hostname"}, "contains ':/'"},
  };
  auto approver = ScriptedApprover::Start({"--session=" + s.id(), "--deny=" + std::string(kDenyReason),
                                           "--count=" + std::to_string(refused.size()),
                                           "--timeout=300"});
  for (const Refused& r : refused) {
    Strings args = {"--"};
    args.insert(args.end(), r.argv.begin(), r.argv.end());
    CommandResult res = Escalate(s, args);
    const std::string shown = absl::StrJoin(r.argv, " ");
    EXPECT_EQ(res.exit_code, 240) << shown << ": " << res.err;
    EXPECT_THAT(res.err, HasSubstr(kDenyReason)) << shown;
    EXPECT_THAT(res.out + res.err, Not(HasSubstr(marker))) << shown << " leaked the host file";
  }
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  // Every one was shown to the approver, with the word that failed.
  const std::vector<std::string> decisions = approver->Decisions();
  ASSERT_EQ(decisions.size(), refused.size()) << approver->Log();
  for (size_t i = 0; i < refused.size(); ++i) {
    EXPECT_THAT(decisions[i], HasSubstr(refused[i].why)) << absl::StrJoin(refused[i].argv, " ");
    EXPECT_THAT(decisions[i], Not(HasSubstr(marker)));
  }

  // Plain operands and listed options with plain values run at once, with
  // no approver left to answer.
  struct Auto {
    Strings argv;
    std::string out;
  };
  const std::vector<Auto> automatic = {
      {{"date", "+lzt-plain-operand"}, "lzt-plain-operand\n"},
      {{"date", "-u", "--date", "2020-01-02", "+%Y-%m-%d"}, "2020-01-02\n"},
      {{"date", "-u", "--date=2021-03-04", "+%Y"}, "2021\n"},
  };
  for (const Auto& a : automatic) {
    Strings args = {"--"};
    args.insert(args.end(), a.argv.begin(), a.argv.end());
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult res = Escalate(s, args);
    const std::string shown = absl::StrJoin(a.argv, " ");
    EXPECT_LT(Seconds(t0), kApprovalTimeout / 2.0) << shown;
    EXPECT_EQ(res.exit_code, 0) << shown << ": " << res.err;
    EXPECT_EQ(res.out, a.out) << shown;
    EXPECT_THAT(res.err, Not(HasSubstr("waiting for approval"))) << shown;
  }

  // The audit agrees: denied by the human, never run; auto-approved by the
  // entry that admits them.
  ASSERT_AUDIT(records, s.id());
  for (const Refused& r : refused) {
    std::vector<AuditRecord> rec = WithArgv(records, r.argv);
    ASSERT_EQ(rec.size(), 1u) << absl::StrJoin(r.argv, " ");
    EXPECT_EQ(DecisionName(rec[0]), "DECISION_DENIED") << absl::StrJoin(r.argv, " ");
    EXPECT_FALSE(rec[0].ran());
  }
  for (const Auto& a : automatic) {
    std::vector<AuditRecord> rec = WithArgv(records, a.argv);
    ASSERT_EQ(rec.size(), 1u) << absl::StrJoin(a.argv, " ");
    EXPECT_EQ(DecisionName(rec[0]), "DECISION_AUTO_APPROVED") << absl::StrJoin(a.argv, " ");
    EXPECT_TRUE(rec[0].ran());
  }
  EXPECT_EQ(WithArgv(records, automatic[0].argv)[0].auto_approve_entry(), "date");
  EXPECT_EQ(WithArgv(records, automatic[1].argv)[0].auto_approve_entry(), "date");
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
