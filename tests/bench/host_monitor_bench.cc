// The cost of following the host's networks live (host_monitor.h): the
// time from a host change (an `ip addr add` or `ip addr del` that has
// returned, that is been acknowledged by the kernel) to the ApplyPolicy
// that reflects it at every attached session's router, for 1, 10 and 50
// sessions, p50 and p99. The baseline, measured in the same run, is the
// same re-apply driven directly (`lazaret net allow`'s path,
// Session::Change) with no monitor in between; the ratio is printed. Then a
// storm of 1000 address events: dumps taken, applies per router, and the
// process's CPU time. The real Registry, HostMonitor and sessions run
// against the fake supervisor, configd and routers of test_fakes.h; the
// changes are made in a network namespace of the bench's own. Fails when
// p99 reaches the 1 s the documentation promises, or a measurement cannot
// be made. Needs root or unprivileged user namespaces.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/runtime_dir.h"
#include "services/netpolicyd/host_inputs.h"
#include "services/netpolicyd/registry.h"
#include "services/netpolicyd/test_fakes.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;
namespace pb = ::lazaret::netpolicy::v1;
using Clock = std::chrono::steady_clock;

constexpr double kBudgetMs = 1000;
constexpr char kLink[] = "lzb0";

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f.flush());
}

// Before any thread exists: unshare(CLONE_NEWUSER) requires it.
bool EnterPrivateNetwork() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    return WriteFile("/proc/self/setgroups", "deny") &&
           WriteFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1")) &&
           WriteFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1"));
  }
  return uid == 0 && unshare(CLONE_NEWNET) == 0;
}

bool Ip(const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  test::CommandResult r = test::Run(argv, {}, input);
  if (r.exit_code != 0) std::fprintf(stderr, "ip: %s\n", r.err.c_str());
  return r.exit_code == 0;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double p50 = 0, p99 = 0;
};
Stats Percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.99)};
}

// Sessions 0..n-1 attached through the real Registry, each with its own
// fake router.
class World {
 public:
  bool Start(int n) {
    cfg::NetworkPolicy network;
    network.set_egress(cfg::EGRESS_MODE_OPEN);
    for (const char* all : {"0.0.0.0/0", "::/0"})
      network.add_allow()->mutable_cidr()->set_prefix(all);
    configd_.Set(network);
    auto sup = testing::Serve(&supervisor_, SocketPath(dir_.path(), "supervisor"));
    auto conf = testing::Serve(&configd_, SocketPath(dir_.path(), "configd"));
    if (!sup.ok() || !conf.ok()) return false;
    servers_.push_back(*std::move(sup));
    servers_.push_back(*std::move(conf));
    for (int i = 0; i < n; ++i) {
      const std::string id = absl::StrFormat("%012x", 0xb0b000 + i);
      sv::SessionInfo info;
      info.mutable_record()->set_id(id);
      info.mutable_record()->set_profile("bench");
      info.set_state(sv::SESSION_STATE_ATTACHED);
      supervisor_.Add(info);
      routers_.push_back(std::make_unique<testing::FakeRouter>());
      auto rtr = testing::Serve(routers_.back().get(), RouterSocketPath(dir_.path(), id));
      if (!rtr.ok()) return false;
      servers_.push_back(*std::move(rtr));
      ids_.push_back(id);
    }
    RegistryOptions options;
    options.watch_supervisor = false;
    registry_ = std::make_unique<Registry>(dir_.path(), options);
    registry_->Start();
    for (const auto& id : ids_) {
      absl::StatusOr<pb::PolicyApplied> applied = registry_->Attach(id);
      if (!applied.ok()) {
        std::fprintf(stderr, "attach %s: %s\n", id.c_str(),
                     std::string(applied.status().message()).c_str());
        return false;
      }
    }
    return true;
  }
  ~World() {
    if (registry_ != nullptr) registry_->Stop();
  }
  // Waits until every router's table has `cidr` (or has not, `present`
  // false); the time it took, or a negative one after 5 s.
  double WaitAll(const std::string& cidr, bool present, Clock::time_point since) {
    const Clock::time_point deadline = since + std::chrono::seconds(5);
    for (auto& router : routers_) {
      while (router->Table().count(cidr) != (present ? 1u : 0u)) {
        if (Clock::now() > deadline) return -1;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    return Ms(Clock::now() - since);
  }
  Registry& registry() { return *registry_; }
  const std::vector<std::string>& ids() const { return ids_; }
  std::vector<std::unique_ptr<testing::FakeRouter>>& routers() { return routers_; }

 private:
  test::TempDir dir_{"lzhm"};
  testing::FakeSupervisor supervisor_;
  testing::FakeConfigd configd_;
  std::vector<std::unique_ptr<testing::FakeRouter>> routers_;
  std::vector<std::unique_ptr<GrpcUnixServer>> servers_;
  std::vector<std::string> ids_;
  std::unique_ptr<Registry> registry_;
};

double CpuMs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int Run() {
  if (!Ip({"link", "add", kLink, "type", "veth", "peer", "name", "lzb1"}) ||
      !Ip({"link", "set", kLink, "up"}) || !Ip({"link", "set", "lzb1", "up"})) {
    return 1;
  }
  bool ok = true;
  for (const auto& [sessions, runs] :
       std::vector<std::pair<int, int>>{{1, 50}, {10, 20}, {50, 10}}) {
    World world;
    if (!world.Start(sessions)) return 1;
    std::vector<double> host, direct;
    for (int i = 0; i < runs; ++i) {
      // A host change: an address and its on-link prefix, added, removed.
      const std::string prefix = absl::StrCat("198.18.", i % 200, ".0/24");
      const std::string address = absl::StrCat("198.18.", i % 200, ".1/24");
      if (!Ip({"addr", "add", address, "dev", kLink})) return 1;
      host.push_back(world.WaitAll(prefix, true, Clock::now()));
      if (!Ip({"addr", "del", address, "dev", kLink})) return 1;
      host.push_back(world.WaitAll(prefix, false, Clock::now()));
      // The baseline: the same kind of re-apply, asked for directly.
      const std::string live = absl::StrCat("203.0.113.", i % 200, "/32");
      const Clock::time_point start = Clock::now();
      for (const auto& id : world.ids()) {
        pb::ChangeSessionRequest req;
        req.mutable_session()->set_id(id);
        req.set_action(i % 2 == 0 ? pb::RULE_ACTION_DENY : pb::RULE_ACTION_ALLOW);
        req.mutable_cidr()->set_prefix(live);
        absl::StatusOr<std::shared_ptr<Session>> s = world.registry().Find(id);
        if (!s.ok() || !(*s)->Change(req).ok()) return 1;
      }
      direct.push_back(world.WaitAll(live, true, start));
    }
    if (std::any_of(host.begin(), host.end(), [](double v) { return v < 0; }) ||
        std::any_of(direct.begin(), direct.end(), [](double v) { return v < 0; })) {
      std::fprintf(stderr, "%d sessions: a change never reached every router\n", sessions);
      return 1;
    }
    const Stats h = Percentiles(host), d = Percentiles(direct);
    std::printf(
        "sessions %2d  host change -> applied at every router: p50 %.1f ms  p99 %.1f ms  (%zu "
        "changes)\n"
        "             direct re-apply (baseline):             p50 %.1f ms  p99 %.1f ms\n"
        "             ratio host/direct: p50 %.1fx  p99 %.1fx\n",
        sessions, h.p50, h.p99, host.size(), d.p50, d.p99, d.p50 > 0 ? h.p50 / d.p50 : 0,
        d.p99 > 0 ? h.p99 / d.p99 : 0);
    if (h.p99 >= kBudgetMs) {
      std::printf("FAIL: p99 %.1f ms is not under %.0f ms\n", h.p99, kBudgetMs);
      ok = false;
    }
  }

  // A storm: 1000 addresses in one batch, with 10 sessions attached.
  World world;
  if (!world.Start(10)) return 1;
  std::vector<int> applies_before;
  for (auto& r : world.routers()) applies_before.push_back(r->applies());
  std::string batch;
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&batch, "addr add 10.78.", i / 250, ".", i % 250 + 1, "/32 dev ", kLink, "\n");
  }
  const double cpu_before = CpuMs();
  const Clock::time_point start = Clock::now();
  if (!Ip({"-batch", "-"}, batch)) return 1;
  // The last address, applied everywhere.
  const double took = world.WaitAll("10.78.3.250/32", true, start);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let stragglers land
  const double cpu = CpuMs() - cpu_before;
  int max_applies = 0;
  for (size_t i = 0; i < world.routers().size(); ++i) {
    max_applies = std::max(max_applies, world.routers()[i]->applies() - applies_before[i]);
  }
  if (took < 0) {
    std::fprintf(stderr, "the storm's last address never reached every router\n");
    return 1;
  }
  std::printf(
      "storm of 1000 address events, 10 sessions: applied everywhere %.1f ms after the batch "
      "began; at most %d applies per router; process CPU %.1f ms (%.3f ms per event)\n",
      took, max_applies, cpu, cpu / 1000);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace lazaret::netpolicyd

int main() {
  if (!lazaret::netpolicyd::EnterPrivateNetwork()) {
    std::fprintf(stderr, "no private network namespace: run as root\n");
    return 77;
  }
  return lazaret::netpolicyd::Run();
}
