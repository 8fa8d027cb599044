// Helpers of the network end-to-end tests (net_e2e_test.cc). Runs in the
// test process as root; drives `lazaret run` as the mode's user (see
// run_e2e_support.h) and runs the static probe (net_probe.c) inside the
// sandbox with `podman exec`. What the probe prints comes from inside the
// sandbox: it is parsed strictly, and an unparseable line is a failure,
// never a pass.
#ifndef LAZARET_TESTS_E2E_NET_E2E_SUPPORT_H_
#define LAZARET_TESTS_E2E_NET_E2E_SUPPORT_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::net {

// Where the probe appears inside the sandbox.
inline constexpr char kProbe[] = "/opt/probe/net_probe";

// /etc/resolv.conf in every sandbox: the router only, and glibc's longest
// wait per try (a name held for an approver).
inline constexpr char kRouterResolvConf[] =
    "nameserver 127.0.0.1\noptions timeout:30 attempts:4";

// One `connect`, `dns` or `udp-send` line of the probe.
struct ProbeResult {
  std::string line;
  bool parsed = false;
  bool ok = false;       // "ok <ms>" ("sent <ms>" for udp-send)
  bool optfail = false;  // a socket option was refused: the trick is impossible
  std::string error;     // "EACCES", ... (or the refused option)
  double ms = -1;
  std::string rcode;                 // dns: "NOERROR", "REFUSED", ...
  std::vector<std::string> answers;  // dns: addresses and "cname:NAME"
  bool refused_fast() const { return parsed && !ok && error == "EACCES" && ms >= 0 && ms < 1000; }
};
ProbeResult ParseProbeLine(const std::string& line);

// What `flood --out FILE` wrote.
struct FloodLog {
  std::vector<int64_t> ok_starts;  // CLOCK_REALTIME ns each successful connect began
  std::vector<std::pair<int64_t, std::string>> errors;  // first failures after successes
  bool done = false;
  long ok = 0, failed = 0;  // from the "done" line
  size_t bad_lines = 0;
};
FloodLog ParseFlood(const std::string& text);
// Successful connects that began after `t_ns`.
size_t SuccessesStartedAfter(const FloodLog& log, int64_t t_ns);

int64_t RealtimeNs();

// One probe invocation in a batch: its label and the probe's arguments.
struct ProbeCall {
  std::string label;
  std::vector<std::string> args;
};

// The session ids of the running sandboxes of this runtime directory and
// profile (several sessions of one profile may run at once).
std::vector<std::string> RunningSandboxes(const std::string& profile);

// A `lazaret run` session whose sandbox only waits (sleep), for probes and
// shell commands run inside it with podman exec. Ended (SIGTERM to
// `lazaret run`, then waited for) on destruction.
class NetSession {
 public:
  // `config` is the --config file, `profile` one of its profiles; the
  // session runs in `workspace`. `log` collects lazaret's output.
  static absl::StatusOr<std::unique_ptr<NetSession>> Start(const std::string& workspace,
                                                           const std::string& config,
                                                           const std::string& profile,
                                                           const std::string& log);
  ~NetSession();
  NetSession(const NetSession&) = delete;
  NetSession& operator=(const NetSession&) = delete;

  const std::string& id() const { return id_; }
  std::string sandbox() const { return "lazaret-" + id_ + "-sandbox"; }
  std::string sidecar() const { return "lazaret-" + id_ + "-sidecar"; }
  pid_t lazaret_pid() const { return pid_; }
  // The router's pid on the host (the sidecar's PID 1); 0 when gone.
  pid_t RouterPid() const;
  std::string Log() const;

  // /etc/resolv.conf inside is exactly kRouterResolvConf (read at
  // start). Only then do tests resolve through it: names the tests use must
  // never reach a resolver off this machine.
  bool resolv_conf_is_router() const { return resolv_conf_is_router_; }
  // `getent ARGS` inside, or exit code -1 without running it when
  // resolv.conf names anything but the router.
  CommandResult Getent(const std::vector<std::string>& args) const;

  // argv run inside the sandbox (podman exec; `user` empty: the sandbox's).
  CommandResult Exec(const std::vector<std::string>& argv, const std::string& user = "") const;
  CommandResult Shell(const std::string& script) const;
  // One probe run, its single line parsed. A `dns` probe without --server
  // asks the router (127.0.0.1), whatever resolv.conf says.
  ProbeResult Probe(const std::vector<std::string>& args, const std::string& user = "") const;
  // Many probe runs in one exec, one after the other or all at once;
  // results by label (a missing label maps to an unparsed result).
  std::map<std::string, ProbeResult> Probes(const std::vector<ProbeCall>& calls,
                                            bool parallel = false) const;
  // `ip ARGS` in the router's network namespace, from the host.
  CommandResult RouterIp(const std::vector<std::string>& args) const;
  // A file of the router's namespace's /proc/sys/net, from the host.
  std::string RouterSysctl(const std::string& path) const;

  // Ends `lazaret run` (SIGTERM) and returns its exit code.
  int End(int timeout_seconds = 60);
  // Waits for `lazaret run` to exit by itself; its exit code, -1 on timeout.
  int WaitExit(int timeout_seconds);

 private:
  NetSession() = default;
  std::string workspace_;
  std::string log_;
  std::string id_;
  pid_t pid_ = -1;
  bool ended_ = false;
  bool resolv_conf_is_router_ = false;
};

// `lazaret net ARGS` as the mode's user.
CommandResult LazaretNet(const std::vector<std::string>& args);

// The built-in default_deny (docs/configuration.md) followed by `extra`, as
// a TOML array.
std::string DefaultDenyWith(const std::vector<std::string>& extra);

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_SUPPORT_H_
