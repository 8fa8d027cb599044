// Benchmark: DNS answer latency for the sandbox - a UDP query to the
// router's 127.0.0.1:53 inside the session's namespace, relayed over
// RelayDns to lazaret-netpolicyd, asked upstream from the host and
// answered - against the same query sent to the same upstream directly,
// in one run (RouterSession: the real router in a fresh namespace). Also
// the first answer for a new name, which installs a name route
// (ApplyPolicy) before it answers. Prints p50/p99 of each and the ratios;
// fails when a relayed answer's p99 exceeds kBudgetRelayP99Ms or a first
// answer's p99 exceeds kBudgetInstallP99Ms. Needs root (exit 77: skipped).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/netpolicyd/dns_message.h"
#include "tests/integration/router_session.h"

namespace {

namespace dns = ::lazaret::netpolicyd::dns;
using Clock = std::chrono::steady_clock;

constexpr int kWarmQueries = 2000;
constexpr int kNewNames = 100;
constexpr double kBudgetRelayP99Ms = 20.0;
constexpr double kBudgetInstallP99Ms = 250.0;

struct Stats {
  double p50_us = 0;
  double p99_us = 0;
  int failures = 0;
};

Stats Summarize(std::vector<double> us, int failures) {
  Stats s;
  s.failures = failures;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  s.p50_us = us[us.size() / 2];
  s.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  return s;
}

// Asks each name of `names` in turn on one connected UDP socket to `to`.
Stats Measure(const sockaddr_in& to, const std::vector<std::string>& names) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  timeval tv{.tv_sec = 6, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  std::vector<double> us;
  int failures = 0;
  std::string buf(4096, '\0');
  for (const auto& name : names) {
    std::vector<std::string> labels = absl::StrSplit(name, '.');
    dns::Question q{labels, dns::kTypeA, dns::kClassIn};
    uint16_t id = dns::RandomId();
    std::string query = dns::BuildQuery(id, q);
    auto start = Clock::now();
    send(fd, query.data(), query.size(), 0);
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    auto took = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    auto resp = n > 0 ? dns::ParseResponse(absl::string_view(buf.data(), n), id, q)
                      : absl::StatusOr<dns::Response>(absl::UnavailableError("no answer"));
    if (!resp.ok() || resp->rcode != dns::Rcode::kNoError || resp->answers.empty()) {
      ++failures;
      continue;
    }
    us.push_back(took);
  }
  close(fd);
  return Summarize(std::move(us), failures);
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

void Print(const char* what, const Stats& s) {
  printf("%-44s p50 %8.1f us   p99 %8.1f us   failures %d\n", what, s.p50_us, s.p99_us, s.failures);
}

}  // namespace

int main() {
  if (geteuid() != 0) {
    printf("dns_relay_bench: skipped: needs root (network namespaces)\n");
    return 77;
  }
  lazaret::config::v1::NetworkPolicy network;
  network.add_deny()->mutable_cidr()->set_prefix("10.0.0.0/8");
  network.add_allow_domains()->set_pattern("*.bench.test");
  std::vector<lazaret::test::TestDnsRecord> records = {
      *lazaret::test::ParseTestDnsRecord("warm.bench.test=A:203.0.113.10@3600")};
  std::vector<std::string> new_names;
  for (int i = 0; i < kNewNames; ++i) {
    std::string name = absl::StrCat("n", i, ".bench.test");
    records.push_back(
        *lazaret::test::ParseTestDnsRecord(absl::StrCat(name, "=A:203.0.113.", 100 + i, "@3600")));
    new_names.push_back(name);
  }
  auto session = lazaret::test::RouterSession::Start(lazaret::test::RouterSession::RouterBinary(),
                                                     network, records);
  if (!session.ok()) {
    printf("dns_relay_bench: %s\n", std::string(session.status().message()).c_str());
    return 1;
  }
  auto& s = **session;
  auto applied = s.Attach();
  if (!applied.ok()) {
    printf("dns_relay_bench: attach: %s\n", std::string(applied.status().message()).c_str());
    return 1;
  }
  std::vector<std::string> warm(kWarmQueries, "warm.bench.test");
  Stats direct = Measure(Loopback(s.upstream().port()), warm);
  Stats relayed;
  Stats installs;
  s.InSandbox([&] {
    relayed = Measure(Loopback(53), warm);  // the first installs the route, the rest reuse it
    installs = Measure(Loopback(53), new_names);
  });
  Print("upstream directly (host)", direct);
  Print("through router + netpolicyd (sandbox)", relayed);
  Print("new name, route installed first (sandbox)", installs);
  double ratio50 = direct.p50_us > 0 ? relayed.p50_us / direct.p50_us : 0;
  double ratio99 = direct.p99_us > 0 ? relayed.p99_us / direct.p99_us : 0;
  printf("ratio relayed/direct: p50 %.2fx  p99 %.2fx\n", ratio50, ratio99);
  bool ok = direct.failures == 0 && relayed.failures == 0 && installs.failures == 0 &&
            relayed.p99_us / 1000 <= kBudgetRelayP99Ms &&
            installs.p99_us / 1000 <= kBudgetInstallP99Ms;
  if (!ok) {
    printf(
        "dns_relay_bench: FAILED (budgets: relayed p99 <= %.0f ms, first answer p99 <= %.0f ms, "
        "no failures)\n",
        kBudgetRelayP99Ms, kBudgetInstallP99Ms);
    return 1;
  }
  return 0;
}
