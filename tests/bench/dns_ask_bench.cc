// Benchmark: `egress = "ask"` latency, in one process with the real parts
// on Unix sockets - lazaret-netpolicyd's Registry (held names, the real
// BrokerApprovalClient), brokerd's RequestBook, NetworkApprovalService and
// ApproverService, a real DNS server as the upstream, and the fake router
// of netpolicyd's tests carrying the sandbox's queries. For each of
// kRuns new names it measures
//   held -> ADDED: the query sent until the approver's WatchPending stream
//                  delivers the request (what an approver's screen waits
//                  for),
//   held -> screen: the same plus the approver's Model laying out the
//                  screen that shows the request's row, and
//   Decide -> answer: the approver's Decide(allow once) until the answer
//                  reaches the router (name routes applied first),
// against the baseline of the same run: a listed name's answer (no
// approver). Prints p50/p99 and the ratios to the baseline; fails when a
// p99 exceeds its budget.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/approve/display_text.h"
#include "clients/lazaret/approve/model.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"
#include "services/brokerd/approver_service.h"
#include "services/brokerd/network_approval_service.h"
#include "services/brokerd/pending.h"
#include "services/common/runtime_dir.h"
#include "services/netpolicyd/dns_message.h"
#include "services/netpolicyd/host_inputs.h"
#include "services/netpolicyd/registry.h"
#include "services/netpolicyd/test_fakes.h"
#include "tests/support/test_dns_server.h"
#include "tests/support/test_support.h"

namespace {

namespace dns = ::lazaret::netpolicyd::dns;
namespace apb = ::lazaret::approver::v1;
namespace cfg = ::lazaret::config::v1;
namespace sv = ::lazaret::supervisor::v1;
using Clock = std::chrono::steady_clock;

constexpr int kRuns = 200;
constexpr char kId[] = "0123456789ab";
constexpr double kBudgetHeldToAddedP99Ms = 50.0;
constexpr double kBudgetDecideToAnswerP99Ms = 100.0;

struct Stats {
  double p50_us = 0;
  double p99_us = 0;
};

Stats Of(std::vector<double> us) {
  Stats s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  s.p50_us = us[us.size() / 2];
  s.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  return s;
}

void Print(const char* what, const Stats& s, const Stats& base) {
  printf("%-34s p50 %8.1f us   p99 %8.1f us   (%.2fx / %.2fx the listed answer)\n", what, s.p50_us,
         s.p99_us, base.p50_us > 0 ? s.p50_us / base.p50_us : 0,
         base.p99_us > 0 ? s.p99_us / base.p99_us : 0);
}

std::string QueryFor(const std::string& name) {
  std::vector<std::string> labels = absl::StrSplit(name, '.');
  return dns::BuildQuery(0x4242, dns::Question{labels, dns::kTypeA, dns::kClassIn});
}

int Fail(const std::string& why) {
  printf("dns_ask_bench: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main() {
  using namespace lazaret;
  test::TempDir dir("lzab");
  const std::string rt = dir.path();

  // The upstream: one listed name, and kRuns + 1 unlisted ones.
  test::TestDnsServerOptions dns_options;
  dns_options.records.push_back(*test::ParseTestDnsRecord("listed.bench.test=A:198.51.100.20"));
  for (int i = 0; i <= kRuns; ++i) {
    dns_options.records.push_back(
        *test::ParseTestDnsRecord(absl::StrCat("n", i, ".ask.test=A:198.51.100.21")));
  }
  auto upstream = test::TestDnsServer::Start(dns_options);
  if (!upstream.ok()) return Fail(std::string(upstream.status().message()));

  netpolicyd::testing::FakeSupervisor supervisor;
  netpolicyd::testing::FakeConfigd configd;
  netpolicyd::testing::FakeRouter router;
  sv::SessionInfo info;
  info.mutable_record()->set_id(kId);
  info.mutable_record()->set_profile("bench");
  info.set_state(sv::SESSION_STATE_ATTACHED);
  supervisor.Add(info);
  cfg::NetworkPolicy network;
  network.add_dns_upstream((*upstream)->address());
  network.set_egress(cfg::EGRESS_MODE_ASK);
  network.set_ask_timeout_seconds(30);
  network.add_allow_domains()->set_pattern("listed.bench.test");
  configd.Set(network);

  // brokerd's side: the book, Ask on brokerd.sock, the approver API on its
  // own socket (one service per fake server).
  brokerd::RequestBook book(brokerd::RequestBookOptions(), nullptr, nullptr);
  brokerd::NetworkApprovalDeps deps;
  deps.look_up = [](const std::string& id) -> absl::StatusOr<brokerd::SessionFacts> {
    brokerd::SessionFacts f;
    f.record.set_id(id);
    f.record.set_profile("bench");
    f.state = sv::SESSION_STATE_ATTACHED;
    return f;
  };
  brokerd::NetworkApprovalService asks(&book, deps);
  brokerd::ApproverService approver_api(
      &book, [] { return std::vector<apb::SessionEndpoint>(); },
      [](const apb::ParseCommandRequest&) { return apb::ParseCommandResponse(); }, nullptr);

  auto sup = netpolicyd::testing::Serve(&supervisor, SocketPath(rt, "supervisor"));
  auto conf = netpolicyd::testing::Serve(&configd, SocketPath(rt, "configd"));
  auto rtr = netpolicyd::testing::Serve(&router, netpolicyd::RouterSocketPath(rt, kId));
  auto brk = netpolicyd::testing::Serve(&asks, SocketPath(rt, "brokerd"));
  auto api = netpolicyd::testing::Serve(&approver_api, SocketPath(rt, "approver"));
  if (!sup.ok() || !conf.ok() || !rtr.ok() || !brk.ok() || !api.ok()) {
    return Fail("a fake service did not start");
  }

  netpolicyd::RegistryOptions options;
  options.watch_supervisor = false;
  options.session.held.names_per_second = 1e6;  // every run is a new name
  options.session.held.burst = 1e6;
  auto registry = std::make_shared<netpolicyd::Registry>(rt, options);
  registry->Start();
  absl::StatusOr<netpolicy::v1::PolicyApplied> applied = registry->Attach(kId);
  if (!applied.ok()) return Fail(absl::StrCat("attach: ", applied.status().message()));

  auto stub = apb::ApproverService::NewStub(DialUnix(SocketPath(rt, "approver")));
  grpc::ClientContext watch_ctx;
  apb::WatchPendingRequest watch_req;
  watch_req.set_session_id(kId);
  watch_req.mutable_approver()->set_kind(apb::Approver::KIND_SCRIPT);
  watch_req.mutable_approver()->set_name("dns_ask_bench");
  auto watch = stub->WatchPending(&watch_ctx, watch_req);
  watch->WaitForInitialMetadata();

  std::vector<double> baseline, held_to_added, held_to_screen, decide_to_answer;
  int failures = 0;
  for (int i = 0; i < kRuns; ++i) {
    const auto b0 = Clock::now();
    absl::StatusOr<std::string> listed = router.Ask(QueryFor("listed.bench.test"), false);
    if (!listed.ok()) ++failures;
    baseline.push_back(std::chrono::duration<double, std::micro>(Clock::now() - b0).count());

    absl::StatusOr<std::string> answer = absl::UnknownError("no answer");
    Clock::time_point answered;
    const auto t0 = Clock::now();
    std::thread sandbox([&] {
      answer =
          router.Ask(QueryFor(absl::StrCat("n", i, ".ask.test")), false, std::chrono::seconds(30));
      answered = Clock::now();
    });
    apb::PendingEvent event;
    bool added = false;
    while (watch->Read(&event)) {
      if (event.kind() == apb::PendingEvent::KIND_ADDED) {
        added = true;
        break;
      }
    }
    const auto t1 = Clock::now();
    if (!added) {
      sandbox.join();
      return Fail("the watch ended");
    }
    held_to_added.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    const std::vector<lazaret::cli::approve::Line> screen =
        lazaret::cli::approve::RenderAdded(event, 80, 24);
    const auto t1s = Clock::now();
    bool shown = false;
    for (const auto& line : screen) {
      shown = shown || absl::StrContains(lazaret::cli::approve::PlainText(line),
                                         absl::StrCat("n", i, ".ask.test"));
    }
    if (!shown) ++failures;
    held_to_screen.push_back(std::chrono::duration<double, std::micro>(t1s - t0).count());
    apb::DecideRequest decide;
    decide.set_id(event.request().id());
    *decide.mutable_approver() = watch_req.approver();
    decide.mutable_allow_name()->set_scope(apb::AllowName::SCOPE_ONCE);
    grpc::ClientContext decide_ctx;
    apb::DecideResponse decided;
    const auto t2 = Clock::now();
    grpc::Status st = stub->Decide(&decide_ctx, decide, &decided);
    sandbox.join();
    if (!st.ok() || !answer.ok() || answer->size() < 12 || (((*answer)[3]) & 0x0f) != 0) {
      ++failures;
      continue;
    }
    decide_to_answer.push_back(std::chrono::duration<double, std::micro>(answered - t2).count());
  }
  watch_ctx.TryCancel();
  registry->Stop();

  const Stats base = Of(baseline);
  const Stats held = Of(held_to_added);
  const Stats screen = Of(held_to_screen);
  const Stats decided = Of(decide_to_answer);
  printf("dns_ask_bench: %d runs, %d failures\n", kRuns, failures);
  printf("%-34s p50 %8.1f us   p99 %8.1f us\n", "listed name answered (baseline)", base.p50_us,
         base.p99_us);
  Print("held query -> ADDED on WatchPending", held, base);
  Print("held query -> approver's screen", screen, base);
  Print("Decide(once) -> answer at router", decided, base);
  if (failures > 0) return Fail("some runs failed");
  if (held.p99_us > kBudgetHeldToAddedP99Ms * 1000 ||
      decided.p99_us > kBudgetDecideToAnswerP99Ms * 1000) {
    return Fail(absl::StrCat("over budget: p99 held->ADDED ", held.p99_us / 1000, " ms (budget ",
                             kBudgetHeldToAddedP99Ms, "), Decide->answer ", decided.p99_us / 1000,
                             " ms (budget ", kBudgetDecideToAnswerP99Ms, ")"));
  }
  return 0;
}
