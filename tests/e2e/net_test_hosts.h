// Test hosts for the network end-to-end tests. Runs in the test process, as
// root, in the host's network namespace; its input is the test's own
// constants. Each test host is a network namespace ("lztn-<name>") joined
// to the host's namespace by a veth pair ("lztn-<name>-h" on the host,
// "lztn-<name>-n" inside), with addresses this machine does not otherwise
// use, host routes to the addresses it carries (through the link, or
// through the inner end as a gateway, so that the address is not on one of
// the host's own networks), and a TCP listener and a
// UDP echo on every one of them (port kTestPort) that record who reached
// which address when. Everything is removed on destruction, and whatever
// an earlier run left under the "lztn-" prefix is removed first. No host
// sysctl is changed: the traffic the sandbox sends reaches the test hosts
// through slirp4netns, which connects from the host's own namespace, so
// nothing is forwarded. Two test processes never build them at once (a
// lock file in /run/lock).
#ifndef LAZARET_TESTS_E2E_NET_TEST_HOSTS_H_
#define LAZARET_TESTS_E2E_NET_TEST_HOSTS_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::test::e2e {

// The port of every test host's listeners.
inline constexpr uint16_t kTestPort = 7357;
// Names of everything this library creates start with it.
inline constexpr char kTestHostPrefix[] = "lztn-";

// One contact a listener saw: a TCP connection accepted or a datagram
// echoed, the local address it was sent to ("10.203.0.2", "fd42:203::2";
// an IPv4 peer of a dual-stack socket in dotted form) and when
// (CLOCK_REALTIME, ns).
struct Contact {
  std::string address;
  bool udp = false;
  int64_t realtime_ns = 0;
};

// TCP and UDP listeners on a set of socket addresses, served by one thread
// (created inside a network namespace, when one is named). TCP
// connections are accepted, recorded and closed; datagrams are echoed.
class Listeners {
 public:
  // `netns` empty: the caller's namespace. A port 0 in the first address
  // is chosen by the kernel and used for every address.
  static absl::StatusOr<std::unique_ptr<Listeners>> Start(const std::string& netns,
                                                          const std::vector<std::string>& addresses,
                                                          uint16_t port);
  ~Listeners();
  Listeners(const Listeners&) = delete;
  Listeners& operator=(const Listeners&) = delete;

  uint16_t port() const { return port_; }
  std::vector<Contact> Contacts() const;
  // Contacts to `address` (every address when empty), over TCP or UDP.
  size_t CountTo(const std::string& address, bool udp = false) const;
  // Contacts to `address` later than `after_ns` (CLOCK_REALTIME).
  size_t CountAfter(const std::string& address, int64_t after_ns) const;
  // Waits until CountTo(address, udp) >= at_least (connections are
  // accepted asynchronously); false on timeout.
  bool WaitForCount(const std::string& address, bool udp, size_t at_least,
                    std::chrono::milliseconds timeout = std::chrono::seconds(3)) const;

 private:
  Listeners() = default;
  void Serve();

  uint16_t port_ = 0;
  std::vector<int> tcp_;
  std::vector<int> udp_;
  int stop_ = -1;  // eventfd
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Contact> contacts_ ABSL_GUARDED_BY(mu_);
};

struct TestHostSpec {
  std::string name{};  // at most 8 characters: link names have 15 at most
  // Host side of the veth, with prefix ("198.51.100.1/24"); empty: none.
  std::string host_v4{};
  std::string host_v6{};
  // Addresses inside, with prefix, on the subnets of host_v4/host_v6.
  std::vector<std::string> addresses{};
  // Further addresses inside (no prefix), each routed from the host as a
  // /32 or /128 through the veth.
  std::vector<std::string> routed{};
  // Routes `routed` via the inner end's first address of the same family
  // (a gateway) instead of through the link: netpolicyd denies every
  // prefix the host is directly connected to, and these addresses stand for
  // hosts beyond the host's own networks.
  bool gateway_routed = false;
  // Addresses of the host side without an on-link prefix (/32 or /128,
  // noprefixroute): a host address that puts no network on the host.
  std::vector<std::string> host_only{};
};

class TestHost {
 public:
  const std::string& name() const { return spec_.name; }
  std::string netns() const { return kTestHostPrefix + spec_.name; }
  // Every address it carries, without prefix.
  std::vector<std::string> Addresses() const;
  // The host side's addresses, without prefix.
  std::vector<std::string> HostSideAddresses() const;
  const Listeners& listeners() const { return *listeners_; }
  // Runs fn on a thread that joined this host's namespace and waits for
  // it: sockets fn creates (and threads it starts) live in that namespace.
  absl::Status RunInside(const std::function<void()>& fn) const;
  // The host side's link ("lztn-<name>-h").
  std::string host_link() const { return netns() + "-h"; }

  // Changes to the host while tests run (gone with the link at the end).
  // An address on the host side: "198.51.100.77" as a /32 (/128) without
  // a prefix route, "203.0.114.1/24" with its on-link prefix.
  absl::Status AddHostAddress(const std::string& address) const;
  absl::Status DelHostAddress(const std::string& address) const;
  // An on-link route ("198.51.100.192/27 dev lztn-<name>-h") without an
  // address: the host becomes directly connected to that prefix.
  absl::Status AddOnLinkPrefix(const std::string& cidr) const;
  absl::Status DelOnLinkPrefix(const std::string& cidr) const;

 private:
  friend class TestHosts;
  explicit TestHost(TestHostSpec spec) : spec_(std::move(spec)) {}
  TestHostSpec spec_;
  std::unique_ptr<Listeners> listeners_;
};

class TestHosts {
 public:
  // Removes leftovers, then builds every host; on any error removes what
  // it built and says which command failed.
  static absl::StatusOr<std::unique_ptr<TestHosts>> Create(const std::vector<TestHostSpec>& specs);
  ~TestHosts();
  TestHosts(const TestHosts&) = delete;
  TestHosts& operator=(const TestHosts&) = delete;

  // nullptr when there is no such host.
  const TestHost* Find(const std::string& name) const;
  // Removes every namespace and link named with kTestHostPrefix.
  static void RemoveLeftovers();

 private:
  TestHosts() = default;
  absl::Status Build(const TestHostSpec& spec);

  int lock_fd_ = -1;
  std::vector<std::unique_ptr<TestHost>> hosts_;
};

// The addresses of the host's own interfaces (getifaddrs), loopback and
// link-local ones left out: what a sandbox could try to reach the host by.
std::vector<std::string> HostInterfaceAddresses();

// True for an IPv6 literal.
bool IsV6(const std::string& address);

}  // namespace lazaret::test::e2e

#endif  // LAZARET_TESTS_E2E_NET_TEST_HOSTS_H_
