// Benchmark of host escalation: an auto-approved `true` round trip from
// inside a real sandbox (raw client: connect, TLS 1.3 handshake with client
// certificate, request, fork+exec on the host, answer) against a host
// fork+exec of /bin/true in the same run, p50 and p99 of both and the
// ratio; then 50 concurrent clients for 30 s (`--load-seconds N`; ctest
// passes 10): requests per second, lost and
// duplicated answers, and lazaret-brokerd's VmRSS/VmHWM before and after.
// Prints; fails only when a request was lost or answered twice (or the run
// could not be measured). Runs as root against the e2e fixture's services
// (rootful unless LAZARET_E2E_MODE=rootless); the session's profile sets
// [escalation] rate_limit = 100000 so the load measures the broker, not the
// limit.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/e2e/escalation_e2e_support.h"
#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::esc {
namespace {

constexpr char kBenchProfile[] = "escbench";

// lazaret-brokerd of this runtime directory (the supervisor passes it
// --runtime-dir=DIR); 0 when not found.
pid_t BrokerPid() {
  const std::string flag = "--runtime-dir=" + Env().runtime_dir;
  DIR* d = opendir("/proc");
  pid_t found = 0;
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
    const std::string p = e->d_name;
    if (p.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = test::ReadFile("/proc/" + p + "/cmdline");
    const std::string argv0 = cmd.substr(0, cmd.find('\0'));
    if (absl::EndsWith(argv0, "lazaret-brokerd") && absl::StrContains(cmd, flag)) {
      found = static_cast<pid_t>(std::stol(p));
    }
  }
  if (d != nullptr) closedir(d);
  return found;
}

std::string Memory(pid_t pid) {
  std::istringstream in(test::ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string out;
  for (std::string l; std::getline(in, l);) {
    if (absl::StartsWith(l, "VmRSS:") || absl::StartsWith(l, "VmHWM:")) {
      std::string v = l.substr(6);
      v.erase(0, v.find_first_not_of(" \t"));
      absl::StrAppend(&out, out.empty() ? "" : " ", l.substr(0, 5), " ", v);
    }
  }
  return out.empty() ? "unknown" : out;
}

double Num(std::map<std::string, std::string>& kv, const std::string& k) {
  return kv.count(k) ? std::atof(kv[k].c_str()) : -1;
}

int Run(int argc, char** argv) {
  int load_seconds = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--load-seconds" && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &load_seconds) && load_seconds > 0 && load_seconds <= 3600) {
      ++i;
      continue;
    }
    std::fprintf(stderr, "usage: escalation_bench [--load-seconds N]  (1-3600, default 30)\n");
    return 2;
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "escalation_bench: needs root (it drives the e2e services)\n");
    return 77;
  }
  UserDir probe("escbench-probe");
  const std::string raw = probe.path() + "/escalation_raw_client";
  if (test::Run({"cp", test::Binary("lazaret_escalation_raw_client"), raw}).exit_code != 0) {
    std::fprintf(stderr, "FAIL: cannot copy the raw client\n");
    return 1;
  }
  chmod(raw.c_str(), 0755);
  UserDir cfg("escbench-cfg");
  UserDir ws("escbench-ws");
  const std::string config = cfg.Write(
      "bench.toml",
      absl::StrCat("[escalation]\nenabled = true\nauto_approve = [\"true\"]\n"
                   "rate_limit = 100000\n\n[profiles.",
                   kBenchProfile, "]\nimage = \"localhost/lazaret-sandbox:trixie\"\n[[profiles.",
                   kBenchProfile, ".volumes]]\nhost = \"", probe.path(),
                   "\"\ncontainer = \"/opt/probe\"\nmode = \"ro\"\n"));
  absl::StatusOr<std::unique_ptr<net::NetSession>> s =
      net::NetSession::Start(ws.path(), config, kBenchProfile, cfg.path() + "/run.log");
  if (!s.ok()) {
    std::fprintf(stderr, "FAIL: no session: %s\n", s.status().ToString().c_str());
    return 1;
  }
  const std::string inside = "/opt/probe/escalation_raw_client";

  CommandResult base = test::Run({raw, "host-exec-baseline", "--n", "200", "--exe", "/bin/true"});
  CommandResult rtt = (*s)->Exec({inside, "bench-rtt", "--n", "200", "--argv", "true"});
  auto b = RawSummary(base.out, "baseline");
  auto r = RawSummary(rtt.out, "rtt");
  if (b.empty() || r.empty() || r["ok"] != "200") {
    std::fprintf(stderr, "FAIL: round trips not measured:\n%s%s%s%s\n", base.out.c_str(),
                 base.err.c_str(), rtt.out.c_str(), rtt.err.c_str());
    return 1;
  }
  std::printf("host fork+exec /bin/true:         p50 %.3f ms  p99 %.3f ms (n=200)\n",
              Num(b, "p50_ms"), Num(b, "p99_ms"));
  std::printf("escalated true (auto-approved):   p50 %.3f ms  p99 %.3f ms (n=200)\n",
              Num(r, "p50_ms"), Num(r, "p99_ms"));
  std::printf("ratio: p50 %.1fx  p99 %.1fx\n", Num(r, "p50_ms") / Num(b, "p50_ms"),
              Num(r, "p99_ms") / Num(b, "p99_ms"));

  const pid_t broker = BrokerPid();
  std::printf("lazaret-brokerd (pid %d) before the load: %s\n", broker,
              broker > 0 ? Memory(broker).c_str() : "not found");
  CommandResult load = (*s)->Exec({inside, "bench-load", "--clients", "50", "--seconds",
                                   std::to_string(load_seconds), "--argv", "true"});
  auto l = RawSummary(load.out, "load");
  std::printf("lazaret-brokerd (pid %d) after the load:  %s\n", broker,
              broker > 0 ? Memory(broker).c_str() : "not found");
  (*s)->End();
  if (l.empty()) {
    std::fprintf(stderr, "FAIL: the load was not measured:\n%s%s\n", load.out.c_str(),
                 load.err.c_str());
    return 1;
  }
  std::printf(
      "50 clients for %s s: %s requests, %s answered (%s ran), %s req/s, lost %s, "
      "answered twice %s\n",
      l["seconds"].c_str(), l["requests"].c_str(), l["answered"].c_str(), l["ran"].c_str(),
      l["rps"].c_str(), l["lost"].c_str(), l["dup"].c_str());
  for (const auto& [reason, n] : RawReasons(load.out)) {
    std::printf("  refused %ld: %s\n", n, reason.c_str());
  }
  if (l["lost"] != "0" || l["dup"] != "0") {
    std::fprintf(stderr, "FAIL: requests lost or answered twice\n%s", load.out.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace lazaret::test::e2e::esc

int main(int argc, char** argv) { return lazaret::test::e2e::esc::Run(argc, argv); }
