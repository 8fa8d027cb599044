// Receivers and host routes for the multicast and broadcast end-to-end
// case (net_e2e_multicast_test.cc). Runs in the test process as root, in
// the host's network namespace (or, for sockets of a test host, in its
// namespace); its input is the test's own constants, and what arrives is
// only recorded, never answered: a datagram a receiver got is the finding.
#ifndef LAZARET_TESTS_E2E_NET_GROUP_RECEIVER_H_
#define LAZARET_TESTS_E2E_NET_GROUP_RECEIVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/e2e/net_test_hosts.h"

namespace lazaret::test::e2e::net {

// One datagram a receiver got: the address it was sent to (from its
// pktinfo), the sender and what it carried.
struct Datagram {
  std::string to;
  std::string from;
  std::string payload;
};

// One UDP socket of a receiver: bound to `bind` ("0.0.0.0", "::") on the
// receiver's port, joined to each group on its interface.
struct GroupSocket {
  std::string bind;
  struct Join {
    std::string group;
    std::string interface;
  };
  std::vector<Join> joins;
};

// UDP sockets on one port, read by one thread, each datagram recorded.
class GroupReceiver {
 public:
  // `inside` null: the sockets are the host's; else they are created in
  // that test host's namespace.
  static absl::StatusOr<std::unique_ptr<GroupReceiver>> Start(
      const TestHost* inside, uint16_t port, const std::vector<GroupSocket>& socks);
  ~GroupReceiver();
  GroupReceiver(const GroupReceiver&) = delete;
  GroupReceiver& operator=(const GroupReceiver&) = delete;

  std::vector<Datagram> Received() const;
  size_t Count() const;
  // Waits until a datagram carrying `payload` arrived; false on timeout.
  bool WaitForPayload(const std::string& payload, std::chrono::milliseconds timeout) const;
  // Every datagram, one line each, for failure messages.
  std::string Describe() const;

 private:
  GroupReceiver() = default;
  void Serve();

  std::vector<int> fds_;
  int stop_ = -1;  // eventfd
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Datagram> received_ ABSL_GUARDED_BY(mu_);
};

// Routes of the host's namespace, each `ip FAMILY route replace SPEC...`,
// removed (`ip FAMILY route del SPEC...`) on destruction, also when the
// test failed. A route on a test host's link also goes with that link.
class HostRoutes {
 public:
  struct Route {
    std::string family;  // "-4", "-6"
    std::vector<std::string> spec;
  };
  static absl::StatusOr<std::unique_ptr<HostRoutes>> Add(const std::vector<Route>& routes);
  ~HostRoutes();
  HostRoutes(const HostRoutes&) = delete;
  HostRoutes& operator=(const HostRoutes&) = delete;

 private:
  HostRoutes() = default;
  std::vector<Route> added_;
};

// One datagram carrying `payload` from a socket of the host to
// address:port (an IPv6 link-local or multicast one may carry "%dev").
absl::Status SendDatagram(const std::string& address, uint16_t port, const std::string& payload);

// True when something on the host listens on UDP port 5353 (an mDNS
// responder), which a host route for 224.0.0.251 would disturb.
bool HostHasMdnsListener();

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_GROUP_RECEIVER_H_
