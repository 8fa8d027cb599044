// ApplyPolicy of 10,000 CIDRs into a fresh network namespace against
// `ip -batch` of the same routes into another fresh one, and the latency of
// one-route updates on top of them. Prints both times, the ratio (target at
// most 1.5x) and p50/p99; fails when the ratio is over the target. Needs
// root (network namespaces).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sidecar/policy_engine.h"
#include "sidecar/policy_table.h"
#include "sidecar/testing/test_network.h"

namespace lazaret::netrouter {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRoutes = 10'000;
constexpr int kRounds = 3;
constexpr int kUpdates = 200;
constexpr double kTargetRatio = 1.5;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Cidr(int i) { return absl::StrCat("10.", i / 256, ".", i % 256, ".0/24"); }

v1::ApplyPolicyRequest Request(uint64_t generation, int flipped = -1) {
  v1::ApplyPolicyRequest req;
  req.set_generation(generation);
  auto add = [&](const std::string& cidr, v1::RouteAction a) {
    v1::Route* r = req.add_routes();
    r->mutable_destination()->set_prefix(cidr);
    r->set_action(a);
  };
  add("0.0.0.0/0", v1::ROUTE_ACTION_PROHIBIT);
  add("::/0", v1::ROUTE_ACTION_PROHIBIT);
  for (int i = 0; i < kRoutes; ++i) {
    add(Cidr(i), i == flipped ? v1::ROUTE_ACTION_ALLOW : v1::ROUTE_ACTION_PROHIBIT);
  }
  return req;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main() {
  if (geteuid() != 0) {
    std::printf("netrouter_apply_bench: needs root (network namespaces); skipped\n");
    return 0;
  }
  const std::string batch_file = absl::StrCat("/tmp/lzr-bench-", getpid(), ".batch");
  {
    std::ofstream out(batch_file);
    out << "route add prohibit 0.0.0.0/0 table 100\nroute add prohibit ::/0 table 100\n";
    for (int i = 0; i < kRoutes; ++i) out << "route add prohibit " << Cidr(i) << " table 100\n";
  }
  std::vector<double> ours;
  std::vector<double> ip;
  std::vector<double> updates;
  for (int round = 0; round < kRounds; ++round) {
    // ip -batch into a fresh namespace.
    {
      auto net = testing::TestNetwork::Create(/*with_host=*/false);
      if (!net.ok()) {
        std::fprintf(stderr, "%s\n", std::string(net.status().message()).c_str());
        return 1;
      }
      const std::string ns = (*net)->router_ns();
      const auto start = Clock::now();
      const pid_t pid = fork();
      if (pid == 0) {
        execlp("ip", "ip", "-n", ns.c_str(), "-batch", batch_file.c_str(), nullptr);
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      ip.push_back(Ms(Clock::now() - start));
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "ip -batch failed\n");
        return 1;
      }
    }
    // ApplyPolicy (validation, diff, batched netlink, read-back, digest).
    auto net = testing::TestNetwork::Create(/*with_host=*/false);
    if (!net.ok() || !(*net)->Enter().ok()) return 1;
    auto engine = PolicyEngine::Create();
    if (!engine.ok()) return 1;
    const v1::ApplyPolicyRequest req = Request(1);
    const auto start = Clock::now();
    absl::StatusOr<PolicySet> set = ValidateRoutes(req.routes());
    absl::StatusOr<ApplyResult> r = set.ok() ? (*engine)->Apply(1, *set) : set.status();
    ours.push_back(Ms(Clock::now() - start));
    if (!r.ok() || r->routes != kRoutes + 2) {
      std::fprintf(stderr, "ApplyPolicy failed: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    if (round != kRounds - 1) continue;
    // One-route updates on top: flip one route per generation.
    for (int u = 0; u < kUpdates; ++u) {
      const v1::ApplyPolicyRequest next = Request(2 + u, (u * 37) % kRoutes);
      const auto t = Clock::now();
      absl::StatusOr<PolicySet> s = ValidateRoutes(next.routes());
      absl::StatusOr<ApplyResult> a = s.ok() ? (*engine)->Apply(2 + u, *s) : s.status();
      updates.push_back(Ms(Clock::now() - t));
      if (!a.ok() || a->added + a->replaced + a->removed == 0) {
        std::fprintf(stderr, "update %d failed\n", u);
        return 1;
      }
    }
  }
  unlink(batch_file.c_str());
  const double ratio = Median(ours) / Median(ip);
  std::sort(updates.begin(), updates.end());
  std::printf(
      "netrouter_apply_bench: ApplyPolicy of %d CIDRs %.1f ms, ip -batch %.1f ms (medians of %d, "
      "fresh namespaces): ratio %.2fx (target <= %.1fx)\n",
      kRoutes, Median(ours), Median(ip), kRounds, ratio, kTargetRatio);
  std::printf(
      "netrouter_apply_bench: one-route update on top of %d: p50 %.2f ms, p99 %.2f ms "
      "(%d updates; each validates, diffs, applies, reads back and digests the whole table)\n",
      kRoutes, updates[updates.size() / 2], updates[updates.size() * 99 / 100], kUpdates);
  return ratio <= kTargetRatio ? 0 : 1;
}

}  // namespace
}  // namespace lazaret::netrouter

int main() { return lazaret::netrouter::Main(); }
