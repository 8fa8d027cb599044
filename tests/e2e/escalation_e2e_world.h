// What the escalation end-to-end tests share, built once per test process
// (a gtest environment destroys it): the raw client's directory (mounted at
// /opt/probe), the --config files, and the long-lived sessions, each started
// on first use and ended at the end. Runs in the test process as root;
// sessions run as the mode's user (run_e2e_support.h).
#ifndef LAZARET_TESTS_E2E_ESCALATION_E2E_WORLD_H_
#define LAZARET_TESTS_E2E_ESCALATION_E2E_WORLD_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::esc {

// Profiles of config() (escalation on: auto_approve = [{ prefix = "uname",
// options = ["-s", "-n"] }, { exact = "test -e /nonexistent-lazaret-e2e" }], command_timeout = 5,
// approval_timeout = 20, the default rate limit) and of off_config()
// ([escalation] enabled = false).
inline constexpr char kProfile[] = "esc";
inline constexpr char kOtherProfile[] = "esc2";
inline constexpr char kOffProfile[] = "escoff";
inline constexpr int kCommandTimeout = 5;
inline constexpr int kApprovalTimeout = 20;
inline constexpr char kExactEntry[] = "test -e /nonexistent-lazaret-e2e";

// Inside the sandbox.
inline constexpr char kClient[] = "/run/lazaret/escalate";
inline constexpr char kRawClient[] = "/opt/probe/escalation_raw_client";

// The shared sessions: A (esc) serves most cases, B (esc) is the other live
// session of the same profile, Other is esc2's, Off the disabled one.
enum class Slot { kA, kB, kOther, kOff };

class EscWorld {
 public:
  static EscWorld& Get();
  static void Destroy();

  const std::string& error() const { return error_; }
  const std::string& config() const { return config_; }
  const std::string& off_config() const { return off_config_; }
  // A directory of the mode's user for files the tests write.
  const UserDir& scratch() const { return *scratch_; }

  // nullptr when it could not start (SessionError says why) or was ended.
  net::NetSession* Session(Slot slot);
  std::string SessionError(Slot slot) const;
  // The host directory that is the session's /workspace.
  std::string Workspace(Slot slot) const;
  // Ends a shared session now (B: its certificates must die with it).
  int End(Slot slot);

  // A session of its own in a fresh workspace (returned in `workspace`).
  absl::StatusOr<std::unique_ptr<net::NetSession>> StartOwn(const std::string& config,
                                                            const std::string& profile,
                                                            std::string* workspace);

 private:
  struct Shared {
    std::unique_ptr<UserDir> workspace;
    std::unique_ptr<net::NetSession> session;
    std::string error;
    bool ended = false;
  };
  EscWorld() = default;
  ~EscWorld();
  void Build();
  Shared& slot(Slot s) { return slots_[static_cast<int>(s)]; }
  const Shared& slot(Slot s) const { return slots_[static_cast<int>(s)]; }

  std::string error_;
  std::unique_ptr<UserDir> probe_dir_;
  std::unique_ptr<UserDir> config_dir_;
  std::unique_ptr<UserDir> scratch_;
  std::vector<std::unique_ptr<UserDir>> own_workspaces_;
  std::string config_, off_config_;
  Shared slots_[4];
};

// The TOML of a profile with the raw client's directory mounted at /opt/probe.
std::string ProfileToml(const std::string& name, const std::string& probe_dir);

}  // namespace lazaret::test::e2e::esc

#endif  // LAZARET_TESTS_E2E_ESCALATION_E2E_WORLD_H_
