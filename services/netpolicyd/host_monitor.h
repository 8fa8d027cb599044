// Follows the host's addresses and routes live: one NETLINK_ROUTE socket
// subscribed to link, address, route and prefix notifications, each of
// which only marks the state dirty; after a short debounce a full dump
// (libnl-route-3) goes through ExtractHostNetworks (host_networks.h) and a
// changed result is published. Notifications are never parsed one by one,
// so a lost one (ENOBUFS: the socket overran) costs only a resync. Runs in
// lazaret-netpolicyd, unprivileged: receiving route multicast in the host's
// network namespace needs no capability. Its input is the host kernel's.
//
// Fail closed: when no good dump has been possible for `unknown_after`
// after a change was seen (or the socket cannot be reopened), the state is
// published as unknown (null), and sessions are closed until a dump works.
#ifndef LAZARET_SERVICES_NETPOLICYD_HOST_MONITOR_H_
#define LAZARET_SERVICES_NETPOLICYD_HOST_MONITOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "services/netpolicyd/host_networks.h"

namespace lazaret::netpolicyd {

// One dump of the caller's network namespace: every address, every route
// of every table.
absl::StatusOr<HostNetworks> ReadHostNetworks();

class HostMonitor {
 public:
  struct Options {
    // From the first notification of a burst to the dump.
    std::chrono::milliseconds debounce{20};
    // Between attempts to dump or to reopen the socket after an error.
    std::chrono::milliseconds retry{50};
    // Without a good dump for this long after a change: unknown.
    std::chrono::milliseconds unknown_after{1000};
    // SO_RCVBUF of the notification socket; 0: the kernel's default.
    int receive_buffer = 0;
  };
  // Called on the monitor's thread with every change; `host` null: unknown.
  using Publish = std::function<void(uint64_t version, std::shared_ptr<const HostNetworks> host)>;

  // Subscribes, then takes the first snapshot before returning: an error
  // when either fails (netpolicyd cannot judge anything without it).
  static absl::StatusOr<std::unique_ptr<HostMonitor>> Create(Options options, Publish publish);
  ~HostMonitor();
  HostMonitor(const HostMonitor&) = delete;
  HostMonitor& operator=(const HostMonitor&) = delete;

  // The latest snapshot; null while unknown.
  std::shared_ptr<const HostNetworks> Current() const;
  uint64_t version() const;
  // Both at once: one version always comes with the same snapshot.
  std::pair<uint64_t, std::shared_ptr<const HostNetworks>> Latest() const;
  // Dumps taken, and overruns seen (ENOBUFS), since Create.
  uint64_t dumps() const { return dumps_.load(); }
  uint64_t overruns() const { return overruns_.load(); }

 private:
  HostMonitor(Options options, Publish publish);
  absl::Status OpenSocket();
  void Run();
  // Reads every pending notification; false on a socket error other than
  // an overrun. Sets *seen when anything arrived.
  bool Drain(bool* seen);
  // One dump, published when it differs; false when it failed.
  bool Dump();
  void SetUnknown();

  const Options options_;
  const Publish publish_;
  int socket_ = -1;
  int stop_ = -1;  // eventfd
  std::thread thread_;
  std::atomic<uint64_t> dumps_{0};
  std::atomic<uint64_t> overruns_{0};
  mutable std::mutex mu_;
  std::shared_ptr<const HostNetworks> current_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool unknown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HOST_MONITOR_H_
