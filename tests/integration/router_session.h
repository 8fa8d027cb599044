// A session's network as lazaret-netpolicyd meets it, for integration tests
// and the DNS relay benchmark: the real lazaret-netrouter in a fresh network
// namespace R (as in the sidecar), joined by a veth pair to a namespace H
// that plays every remote host (198.51.100.0/24 on the link, 203.0.113.0/24
// on H's loopback: documentation addresses inside this machine only), the
// netpolicyd service in this process with fake supervisor and configd, and
// a TestDnsServer as the upstream on the host's loopback. Runs in test
// processes as root; trusts what it starts.
#ifndef LAZARET_TESTS_INTEGRATION_ROUTER_SESSION_H_
#define LAZARET_TESTS_INTEGRATION_ROUTER_SESSION_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/unix_server.h"
#include "services/netpolicyd/dns_message.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/netpolicyd/test_fakes.h"
#include "tests/support/test_dns_server.h"
#include "tests/support/test_support.h"

namespace lazaret::test {

inline constexpr char kRouterSessionId[] = "00c0ffee0042";
inline constexpr uint16_t kRemotePort = 8080;  // TCP accept-and-close on every H address

class RouterSession {
 public:
  // `router_bin`: the lazaret-netrouter to run. `network` gets the upstream
  // added to its dns_upstream. UNIMPLEMENTED when the router has no policy
  // API (callers skip).
  static absl::StatusOr<std::unique_ptr<RouterSession>> Start(
      const std::string& router_bin, lazaret::config::v1::NetworkPolicy network,
      std::vector<TestDnsRecord> records);
  ~RouterSession();
  RouterSession(const RouterSession&) = delete;
  RouterSession& operator=(const RouterSession&) = delete;

  // The router binary the tests use: $LAZARET_TEST_NETROUTER, else the tree's.
  static std::string RouterBinary();

  lazaret::netpolicy::v1::NetPolicyService::Stub& stub() { return *stub_; }
  TestDnsServer& upstream() { return *upstream_; }

  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Attach();

  // Runs `fn` on a thread inside R (sockets it opens are the sandbox's).
  void InSandbox(const std::function<void()>& fn) const;
  // A TCP connect from R to address:kRemotePort: 0 or the errno
  // (ETIMEDOUT after 1 s).
  int Connect(const std::string& address) const;
  // A UDP query from R to the router's 127.0.0.1:53.
  std::optional<lazaret::netpolicyd::dns::Response> Ask(const std::string& name,
                                                        uint16_t type) const;

 private:
  RouterSession() = default;
  absl::Status Build(const std::string& router_bin, lazaret::config::v1::NetworkPolicy network,
                     std::vector<TestDnsRecord> records);

  TempDir dir_{"lzi"};
  std::string r_, h_;
  bool made_namespaces_ = false;
  pid_t router_pid_ = -1;
  std::atomic<bool> stop_listener_{false};
  std::thread listener_;
  lazaret::netpolicyd::testing::FakeSupervisor supervisor_;
  lazaret::netpolicyd::testing::FakeConfigd configd_;
  std::unique_ptr<TestDnsServer> upstream_;
  std::unique_ptr<GrpcUnixServer> supervisor_server_, configd_server_, service_server_;
  std::shared_ptr<lazaret::netpolicyd::Registry> registry_;
  std::unique_ptr<lazaret::netpolicyd::NetPolicyServiceImpl> impl_;
  std::unique_ptr<lazaret::netpolicy::v1::NetPolicyService::Stub> stub_;
};

// A UDP DNS query from the calling thread's namespace to address:53 (the
// answer, or none within 8 s).
std::optional<lazaret::netpolicyd::dns::Response> AskUdp(const std::string& name, uint16_t type,
                                                         const sockaddr* to, socklen_t to_len);

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_INTEGRATION_ROUTER_SESSION_H_
