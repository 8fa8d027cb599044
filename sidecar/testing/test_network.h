// Test networks for the router's kernel tests and benchmark: a fresh
// network namespace for the router and, joined to it by a veth pair, a
// second one acting as every host the tests talk to, on documentation
// addresses that exist only inside this machine. Runs in test processes as
// root; trusts nothing but the `ip` tool.
#ifndef LAZARET_SIDECAR_TESTING_TEST_NETWORK_H_
#define LAZARET_SIDECAR_TESTING_TEST_NETWORK_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::netrouter::testing {

// The router's side (namespace R, link "va"): 198.51.100.100/24 and
// 2001:db8:1::100/64, default routes via the test host's .1 / ::1.
inline constexpr char kRouterV4[] = "198.51.100.100";
inline constexpr char kRouterV6[] = "2001:db8:1::100";
// The test host (namespace H, link "vb"): the gateway, a second on-link
// address, and "remote" addresses on its loopback reached via the gateway.
inline constexpr char kGatewayV4[] = "198.51.100.1";
inline constexpr char kGatewayV6[] = "2001:db8:1::1";
inline constexpr char kOnLinkV4[] = "198.51.100.2";
inline constexpr char kOnLinkV6[] = "2001:db8:1::2";
// H's link-local address on the veth, scoped to R's end of it.
inline constexpr char kLinkLocalV6[] = "fe80::b%va";
inline constexpr char kRemoteAV4[] = "203.0.113.5";
inline constexpr char kRemoteBV4[] = "203.0.113.6";
inline constexpr char kRemoteAV6[] = "2001:db8:99::5";
inline constexpr char kRemoteBV6[] = "2001:db8:99::6";

class TestNetwork {
 public:
  // `with_host`: the veth and the test host; without it only R with its
  // loopback up (the benchmark's empty namespace).
  static absl::StatusOr<std::unique_ptr<TestNetwork>> Create(bool with_host = true);
  ~TestNetwork();
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  const std::string& router_ns() const { return router_ns_; }
  const std::string& host_ns() const { return host_ns_; }

  // Moves the calling thread into R (sockets it opens are R's) / back.
  absl::Status Enter();
  void Leave();

  // Listeners in H on [::] (both families): TCP accept-and-close on each
  // port, UDP echo on each of `udp_ports`.
  absl::Status Listen(const std::vector<uint16_t>& tcp_ports,
                      const std::vector<uint16_t>& udp_ports);

  // Runs `ip <args>` (prefixed with -n R when `in_router`).
  absl::Status Ip(const std::vector<std::string>& args, bool in_router = true) const;

 private:
  TestNetwork() = default;
  void ServeLoop();

  std::string router_ns_;
  std::string host_ns_;
  int original_ns_ = -1;
  bool entered_ = false;
  std::vector<int> tcp_fds_;
  std::vector<int> udp_fds_;
  int wake_ = -1;
  std::thread server_;
};

// A TCP connect from the calling thread's namespace: 0 when it connected,
// else the errno (ETIMEDOUT when nothing happened within `timeout`).
// `setup` runs on the socket before connect (SO_MARK, SO_BINDTODEVICE...).
int TryConnect(const std::string& address, uint16_t port, std::chrono::milliseconds timeout,
               const std::function<void(int)>& setup = {});

// One UDP datagram to address:port and its echo: 0 when the echo came
// back, else the errno of sendto (or ETIMEDOUT). `flags` go to sendto.
int TryUdp(const std::string& address, uint16_t port, std::chrono::milliseconds timeout,
           int flags = 0, const std::function<void(int)>& setup = {});

}  // namespace lazaret::netrouter::testing

#endif  // LAZARET_SIDECAR_TESTING_TEST_NETWORK_H_
