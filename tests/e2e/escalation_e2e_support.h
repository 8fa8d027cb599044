// Helpers of the escalation end-to-end tests: lazaret-escalate and the raw
// client run inside a session (podman exec), their output parsed strictly
// (an unparseable line is a failure, never a pass); the audit read back
// with `lazaret audit --json`; the scripted approver (lazaret-test-approver)
// run in the background on brokerd.sock; and what the host shows of a
// sandbox. Runs in the test process as root; everything a sandbox printed
// is untrusted.
#ifndef LAZARET_TESTS_E2E_ESCALATION_E2E_SUPPORT_H_
#define LAZARET_TESTS_E2E_ESCALATION_E2E_SUPPORT_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "lazaret/escalation/v1/escalation.pb.h"
#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::esc {

using AuditRecord = ::lazaret::approver::v1::AuditRecord;
using EscalateResponse = ::lazaret::escalation::v1::EscalateResponse;
using ServerFrame = ::lazaret::escalation::v1::ServerFrame;

// lazaret-escalate ARGS inside, with `env` (NAME=VALUE) in its environment.
CommandResult Escalate(const net::NetSession& s, const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {});
// The raw client ARGS inside.
CommandResult Raw(const net::NetSession& s, const std::vector<std::string>& args);

// One exchange the raw client printed ("frame [TAG ]<json>" ... "end [TAG ]<how>").
struct RawExchange {
  std::vector<ServerFrame> frames;
  std::string end;                     // "eof", "reset", "tls-error: ...", ...
  std::vector<std::string> bad_lines;  // lines that did not parse
  int results() const;
  // The last result frame (an empty response when none came).
  EscalateResponse result() const;
  bool pending_seen() const;
};
// `tag` selects the lines of one exchange of a replay ("1", "2"); empty:
// the untagged lines of send.
RawExchange ParseRawExchange(const std::string& out, const std::string& tag = "");

// A summary line "WORD k=v k=v ..." of the raw client (flood, load, rtt,
// resume, baseline); empty when no line starts with WORD.
std::map<std::string, std::string> RawSummary(const std::string& out, const std::string& word);
// "reason <count> <text>" lines: refusal reasons and their counts.
std::map<std::string, long> RawReasons(const std::string& out);

// A request as the raw client's send takes it.
std::string RequestJson(const std::string& request_id, const std::string& profile,
                        const std::vector<std::string>& argv);
std::string CommandRequestJson(const std::string& request_id, const std::string& profile,
                               const std::string& command);
// A fresh request id: prefix plus random hex.
std::string NewId(const std::string& prefix);

// `lazaret audit --json [--session S]` as the mode's user, every line
// parsed as an AuditRecord (a line that does not parse is an error).
absl::StatusOr<std::vector<AuditRecord>> Audit(const std::string& session = "");
// The records of one request id / with exactly this argv.
std::vector<AuditRecord> ByRequestId(const std::vector<AuditRecord>& records,
                                     const std::string& request_id);
std::vector<AuditRecord> WithArgv(const std::vector<AuditRecord>& records,
                                  const std::vector<std::string>& argv);
std::string DecisionName(const AuditRecord& r);

// lazaret-test-approver decide ... in the background as the mode's user,
// on <runtime_dir>/brokerd.sock. Stopped (SIGTERM to its pid) and waited
// for on destruction when still running.
class ScriptedApprover {
 public:
  // `args` follow "decide" (--session=..., --approve, --count=N, ...).
  static std::unique_ptr<ScriptedApprover> Start(const std::vector<std::string>& args);
  ~ScriptedApprover();
  ScriptedApprover(const ScriptedApprover&) = delete;
  ScriptedApprover& operator=(const ScriptedApprover&) = delete;
  // Its exit code (0: every decision made), -1 on timeout (then killed).
  int Wait(int timeout_seconds);
  void Stop();
  // The decision lines it printed ({"pending":...,"decided"|"error":...}).
  std::vector<std::string> Decisions() const;
  // True when a decision line names this request id.
  bool Saw(const std::string& request_id) const;
  std::string Log() const;

 private:
  ScriptedApprover() = default;
  std::string log_;
  pid_t pid_ = -1;
  bool done_ = false;
};

std::string BrokerSocket();

// The host source of the sandbox's bind mount at `destination` ("" if none).
std::string HostMountSource(const net::NetSession& s, const std::string& destination);
// The command lines of the runsc processes that name this container id.
std::vector<std::vector<std::string>> RunscProcesses(const std::string& container_id);
// `id` on the host as the mode's user.
std::string HostId();

}  // namespace lazaret::test::e2e::esc

#endif  // LAZARET_TESTS_E2E_ESCALATION_E2E_SUPPORT_H_
