// Benchmark of a session's terminal path through the session service: the
// same shell script runs under `lazaret run` (the sandbox's podman on the
// session worker's pty, its output through the worker's terminal filter
// and the framed attach socket (attach-frames.sock) to the `lazaret run`
// client, whose terminal is the bench's pty) and under a bare
// `podman run -t` of the same image under runsc with the podman flags
// Lazaret uses where they touch the terminal (--interactive --tty
// --log-driver=none --detach-keys=), each on a pty the bench opened, twice
// each in the order direct, proxied, proxied, direct. It prints, for both
// and as ratios:
//   - the time of 100,000,000 bytes of output (`--megabytes N` for N
//     million; ctest passes 30), from the start marker to the end marker
//     (session start-up is not counted), and MB/s;
//   - keystroke echo latency: one byte written to the pty and read back,
//     echoed by the sandbox's own tty (stty -icanon; head -c N), p50/p99
//     of kSamples per run after kWarmup.
// The target is within kTarget (1.3x) of `podman run -t` for both; the
// verdict is printed, not enforced (a loaded machine is not a regression):
// it fails only when a measurement could not be made: a
// session that did not start, a timeout, a lost or extra byte, a wrong
// echo, an exit code other than 0. Runs as root against the e2e fixture's
// services (rootful unless LAZARET_E2E_MODE=rootless).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/bench/pty_bench_terminal.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::bench {
namespace {

using e2e::AsMode;
using e2e::UserDir;

constexpr char kImage[] = "localhost/lazaret-sandbox:trixie";
constexpr char kProfile[] = "ptybench";
// Bytes of output per run (--megabytes).
uint64_t g_bytes = 100000000;
constexpr int kWarmup = 50;
constexpr int kSamples = 500;
// What the session path may cost at most, as a ratio to `podman run -t`.
constexpr double kTarget = 1.3;
// The markers as they arrive; the script spells them in two parts so that
// its own text never contains them.
constexpr char kBegin[] = "LAZBENCH-BEGIN";
constexpr char kEnd[] = "LAZBENCH-END";
constexpr char kReady[] = "LAZBENCH-READY";
constexpr char kDone[] = "LAZBENCH-DONE";

// The output, then (with `echo`) the echo phase.
std::string Script(bool echo) {
  std::string s = absl::StrCat("printf 'LAZ%s' BENCH-BEGIN; head -c ", g_bytes,
                               " /dev/zero | tr '\\0' x; printf 'LAZ%s' BENCH-END");
  if (echo) {
    absl::StrAppend(&s, "; stty -icanon; printf 'LAZ%s' BENCH-READY; head -c ", kWarmup + kSamples,
                    " >/dev/null; printf 'LAZ%s' BENCH-DONE");
  }
  return s;
}

// One side's runs.
struct Measured {
  std::vector<double> flood_seconds;  // one per run
  std::vector<double> echo_ms;        // every run's samples
  double total_flood() const {
    double t = 0;
    for (double s : flood_seconds) t += s;
    return t;
  }
};

double Percentile(const std::vector<double>& sorted, double p) {
  const size_t rank = static_cast<size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The program exited, and with 0.
absl::Status Exit(BenchTerminal* t) {
  absl::StatusOr<int> code = t->Wait(Clock::now() + std::chrono::seconds(60));
  if (!code.ok()) return code.status();
  if (*code != 0) return absl::InternalError(absl::StrCat("exit code ", *code));
  return absl::OkStatus();
}

// One run of argv (running Script(echo)) on a new pty, added to `m`.
absl::Status Measure(const std::string& cwd, const std::vector<std::string>& argv, bool echo,
                     Measured* m) {
  auto now = [] { return Clock::now(); };
  using std::chrono::seconds;
  absl::StatusOr<std::unique_ptr<BenchTerminal>> t = BenchTerminal::Start(cwd, argv);
  if (!t.ok()) return t.status();
  absl::StatusOr<Clock::time_point> begin = (*t)->AwaitMarker(kBegin, now() + seconds(90));
  if (!begin.ok())
    return absl::Status(begin.status().code(),
                        "session did not start: " + std::string(begin.status().message()));
  absl::StatusOr<BenchTerminal::Flood> f = (*t)->CountUntil('x', kEnd, now() + seconds(120));
  if (!f.ok()) return f.status();
  if (f->fill != g_bytes || f->other != 0 || f->newline != 0) {
    return absl::DataLossError(absl::StrCat("the output arrived as ", f->fill, " x, ", f->newline,
                                            " line ends and ", f->other, " other bytes, not ",
                                            g_bytes, " x"));
  }
  m->flood_seconds.push_back(Seconds(f->end - *begin));
  if (!echo) return Exit(t->get());

  if (absl::StatusOr<Clock::time_point> r = (*t)->AwaitMarker(kReady, now() + seconds(30));
      !r.ok()) {
    return r.status();
  }
  if ((*t)->OuterPtyEchoes()) {
    return absl::FailedPreconditionError("the bench's own pty echoes: the echo is not measured");
  }
  for (int i = 0; i < kWarmup + kSamples; ++i) {
    absl::StatusOr<Clock::duration> rtt =
        (*t)->EchoRoundTrip(static_cast<char>('a' + i % 26), seconds(5));
    if (!rtt.ok())
      return absl::Status(rtt.status().code(),
                          absl::StrCat("key ", i, ": ", rtt.status().message()));
    if (i >= kWarmup) m->echo_ms.push_back(Seconds(*rtt) * 1000);
  }
  if (absl::StatusOr<Clock::time_point> d = (*t)->AwaitMarker(kDone, now() + seconds(30));
      !d.ok()) {
    return d.status();
  }
  return Exit(t->get());
}

void PrintFlood(const char* label, const Measured& m) {
  std::string runs;
  for (double t : m.flood_seconds) absl::StrAppend(&runs, runs.empty() ? "" : " ", t);
  std::printf("%-24s %7.3f s per run  %7.1f MB/s  (runs: %s s)\n", label,
              m.total_flood() / static_cast<double>(m.flood_seconds.size()),
              static_cast<double>(g_bytes * m.flood_seconds.size()) / 1e6 / m.total_flood(),
              runs.c_str());
}

void PrintEcho(const char* label, const Measured& m) {
  std::printf("%-24s p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", label, Percentile(m.echo_ms, 0.5),
              Percentile(m.echo_ms, 0.99), m.echo_ms.back());
}

int Run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    uint64_t mb = 0;
    if (std::string(argv[i]) == "--megabytes" && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &mb) && mb > 0 && mb <= 10000) {
      g_bytes = mb * 1000000;
      ++i;
      continue;
    }
    std::fprintf(stderr, "usage: pty_bench [--megabytes N]  (1-10000, default 100)\n");
    return 2;
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "pty_bench: needs root (it drives the e2e services)\n");
    return 77;
  }
  UserDir cfg("ptybench-cfg");
  UserDir ws("ptybench-ws");
  const std::string config = cfg.Write(
      "bench.toml", absl::StrCat("[profiles.", kProfile, "]\nimage = \"", kImage, "\"\n"));
  const std::map<std::string, std::string> term = {{"TERM", "xterm-256color"}};
  const std::vector<std::string> direct =
      AsMode({"podman", "--runtime-flag=network=host", "run", "--rm", "--runtime=runsc",
              "--network=none", "--pull=never", "--log-driver=none", "--interactive", "--tty",
              "--detach-keys=", kImage, "sh", "-c", Script(true)},
             term);
  const std::vector<std::string> proxied =
      AsMode({test::Binary("lazaret"), "run", "--config", config, kProfile, "--", "sh", "-c",
              Script(true)},
             term);

  const Clock::time_point start = Clock::now();
  // The same output on a host pty, no container: what the bench's reader
  // takes at most.
  Measured host;
  if (absl::Status st = Measure(ws.path(), AsMode({"sh", "-c", Script(false)}), false, &host);
      !st.ok()) {
    std::fprintf(stderr, "FAIL: host pty: %s\n", st.ToString().c_str());
    return 1;
  }
  Measured d;
  Measured p;
  // direct, proxied, proxied, direct: a drift of the machine's load during
  // the run weighs on both sides alike.
  for (const bool proxy : {false, true, true, false}) {
    if (absl::Status st = Measure(ws.path(), proxy ? proxied : direct, true, proxy ? &p : &d);
        !st.ok()) {
      std::fprintf(stderr, "FAIL: %s: %s\n", proxy ? "lazaret run" : "podman run -t",
                   st.ToString().c_str());
      return 1;
    }
  }
  std::sort(d.echo_ms.begin(), d.echo_ms.end());
  std::sort(p.echo_ms.begin(), p.echo_ms.end());
  std::printf("%llu bytes of output through a pty (start marker to end marker), %zu runs each:\n",
              static_cast<unsigned long long>(g_bytes), d.flood_seconds.size());
  PrintFlood("host pty (no container):", host);
  PrintFlood("podman run -t (direct):", d);
  PrintFlood("lazaret run (sessiond):", p);
  const double flood_ratio = p.total_flood() / d.total_flood();
  std::printf(
      "throughput ratio (session / direct time): %.2fx of all runs, %.2fx of the best "
      "(target: within %.1fx: %s)\n",
      flood_ratio,
      *std::min_element(p.flood_seconds.begin(), p.flood_seconds.end()) /
          *std::min_element(d.flood_seconds.begin(), d.flood_seconds.end()),
      kTarget, flood_ratio <= kTarget ? "met" : "MISSED");
  std::printf("keystroke echo by the sandbox's tty (n=%zu each, %d warm-up keys per run):\n",
              d.echo_ms.size(), kWarmup);
  PrintEcho("podman run -t (direct):", d);
  PrintEcho("lazaret run (sessiond):", p);
  const double echo_ratio = Percentile(p.echo_ms, 0.5) / Percentile(d.echo_ms, 0.5);
  std::printf("echo ratio: p50 %.2fx  p99 %.2fx (target: p50 within %.1fx: %s)\n", echo_ratio,
              Percentile(p.echo_ms, 0.99) / Percentile(d.echo_ms, 0.99), kTarget,
              echo_ratio <= kTarget ? "met" : "MISSED");
  std::printf("whole bench: %.1f s\n", Seconds(Clock::now() - start));
  return 0;
}

}  // namespace
}  // namespace lazaret::test::bench

int main(int argc, char** argv) { return lazaret::test::bench::Run(argc, argv); }
