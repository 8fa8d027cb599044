// How the proxy reaches an upstream. In the service, a dial asks
// netpolicyd for the name's addresses (the session's policy decides, and
// adds the name routes) and the session's router for a connected socket
// in the sandbox's network namespace (the routes decide again): the proxy
// never connects from the host's own network. Tests dial loopback.
#ifndef LAZARET_SERVICES_EGRESSD_UPSTREAM_H_
#define LAZARET_SERVICES_EGRESSD_UPSTREAM_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::egressd {

class UpstreamDialer {
 public:
  virtual ~UpstreamDialer() = default;
  // A connected TCP socket to `host`:`port`, blocking mode unspecified (the
  // caller sets O_NONBLOCK). The error says why (refused by policy, no
  // address, timeout) and never names anything but host and port.
  virtual absl::StatusOr<fs::UniqueFd> Dial(const std::string& host, uint16_t port) = 0;
};

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_UPSTREAM_H_
