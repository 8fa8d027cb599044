// The neighbour discipline of the sidecar's namespace. Runs in
// lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only); trusts the
// kernel's routes and neighbour entries.
//
// Why: a socket bound to a device (SO_BINDTODEVICE, which the sandbox may
// set) whose route lookup fails is treated by the kernel as on-link - it
// resolves the destination itself on that device, past every prohibit
// route and rule. So on-link resolution must be useless: the gateways'
// entries are made PERMANENT with the address they answered with, every
// other non-permanent entry is flushed, and every non-loopback link gets
// mcast/ucast/app probes 0 in arp_cache and ndisc_cache, so that no new
// neighbour can ever be resolved. Routed traffic only ever needs the
// gateways.
#ifndef LAZARET_SIDECAR_NEIGHBOURS_H_
#define LAZARET_SIDECAR_NEIGHBOURS_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "sidecar/netlink_routes.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

// How long a gateway may take to answer resolution at startup.
inline constexpr std::chrono::milliseconds kGatewayResolveTimeout{2000};

// Startup: for every default route's gateway, resolve it when it has no
// link-layer address yet (NTF_USE: the kernel solicits it, whatever the
// policy says), wait up to `timeout`, pin it PERMANENT; then the probes and
// the flush above. Any failure is returned (the router then does not start).
absl::Status EnforceNeighbourDiscipline(RtnlSocket& rtnl, std::chrono::milliseconds timeout);

// Makes one gateway's entry PERMANENT with the link-layer address it has
// (solicits it first when `resolve`; waits up to `timeout` for it).
absl::Status PinGateway(RtnlSocket& rtnl, const Gateway& gateway, bool resolve,
                        std::chrono::milliseconds timeout);

// Watches for default routes that appear after startup - IPv6's, learned
// from slirp's router advertisement, which also gives the router's
// link-layer address - and pins their gateways. Probes are 0 by then, so a
// gateway without a learned address cannot be resolved: logged as an
// error (that family then has no working gateway; nothing opens).
class GatewayWatcher {
 public:
  static absl::StatusOr<std::unique_ptr<GatewayWatcher>> Start();
  ~GatewayWatcher();
  GatewayWatcher(const GatewayWatcher&) = delete;
  GatewayWatcher& operator=(const GatewayWatcher&) = delete;

  // Gateways pinned by the watcher so far.
  int pinned() const { return pinned_.load(); }

 private:
  GatewayWatcher(int fd, int wake, std::unique_ptr<RtnlSocket> rtnl)
      : fd_(fd), wake_(wake), rtnl_(std::move(rtnl)) {}
  void Loop();

  const int fd_;                      // subscribed to the route groups; watcher thread only
  const int wake_;                    // eventfd: stop
  std::unique_ptr<RtnlSocket> rtnl_;  // watcher thread only
  std::atomic<int> pinned_{0};
  std::thread thread_;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_NEIGHBOURS_H_
