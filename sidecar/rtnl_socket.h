// The rtnetlink transport of lazaret-netrouter (inside the sidecar,
// CAP_NET_ADMIN only): requests built with libnl's message API, sent many at
// a time and acknowledged in order, dumps read in one pass. Trusts the
// kernel's answers; everything it sends was built by the router itself.
#ifndef LAZARET_SIDECAR_RTNL_SOCKET_H_
#define LAZARET_SIDECAR_RTNL_SOCKET_H_

// Spelled with libnl3/ so the header is found where Debian installs it
// (check-deps); its own includes resolve through pkg-config's -isystem.
#include <libnl3/netlink/msg.h>
#include <libnl3/netlink/netlink.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::netrouter {

// One netlink request under construction (libnl's nl_msg).
class NlRequest {
 public:
  NlRequest(int type, int flags);
  ~NlRequest();
  NlRequest(const NlRequest&) = delete;
  NlRequest& operator=(const NlRequest&) = delete;

  // The fixed header that follows nlmsghdr (rtmsg, ndmsg, ...).
  NlRequest& Header(const void* data, size_t size);
  NlRequest& Attr(int type, const void* data, size_t size);
  NlRequest& U8(int type, uint8_t v) { return Attr(type, &v, sizeof(v)); }
  NlRequest& U16(int type, uint16_t v) { return Attr(type, &v, sizeof(v)); }
  NlRequest& U32(int type, uint32_t v) { return Attr(type, &v, sizeof(v)); }
  // Attributes between NestStart and NestEnd are nested in `type`.
  NlRequest& NestStart(int type);
  NlRequest& NestEnd();

  const nlmsghdr* header() const;
  bool ok() const { return ok_; }

 private:
  nl_msg* msg_;
  bool ok_;
  nlattr* nest_ = nullptr;
};

// Requests sent in order; each is acknowledged.
class NlBatch {
 public:
  void Add(const NlRequest& request);
  size_t size() const { return offsets_.size(); }
  bool empty() const { return offsets_.empty(); }

 private:
  friend class RtnlSocket;
  std::string bytes_;
  std::vector<size_t> offsets_;
};

class RtnlSocket {
 public:
  // A NETLINK_ROUTE socket with a large receive buffer (SO_RCVBUFFORCE,
  // CAP_NET_ADMIN), extended and capped acks, and strict dump filtering.
  static absl::StatusOr<std::unique_ptr<RtnlSocket>> Open();
  ~RtnlSocket();
  RtnlSocket(const RtnlSocket&) = delete;
  RtnlSocket& operator=(const RtnlSocket&) = delete;

  // Sends every request of `batch` (many per sendmsg, in order) and collects
  // every ack. The kernel goes on with the requests after a refused one, so
  // a batch must only hold requests that are safe to apply in any subset.
  // Returns the first refusal: its index in the batch and the kernel's
  // reason (extended ack text when there is one).
  struct BatchError {
    size_t index = 0;
    int error = 0;  // positive errno
    std::string message;
  };
  absl::Status Run(const NlBatch& batch, BatchError* first_error = nullptr);

  // Sends a dump request and calls `each` for every message of the answer.
  absl::Status Dump(const NlRequest& request,
                    const std::function<absl::Status(const nlmsghdr*)>& each);

  // Sends one request that the kernel answers with one message (or an
  // error: returned as an errno in *error, the status stays OK).
  absl::StatusOr<std::string> Ask(const NlRequest& request, int* error);

 private:
  RtnlSocket(nl_sock* sk, int fd) : sk_(sk), fd_(fd) {}
  absl::Status SendRaw(const char* data, size_t size);
  absl::StatusOr<ssize_t> Receive();

  nl_sock* sk_;
  int fd_;
  uint32_t next_seq_ = 1;
  std::vector<char> buffer_ = std::vector<char>(1 << 16);
};

// Opens a libnl socket connected to NETLINK_ROUTE for libnl's own
// synchronous calls (rules, neighbours, caches).
struct NlSockDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
using NlSockPtr = std::unique_ptr<nl_sock, NlSockDeleter>;
absl::StatusOr<NlSockPtr> ConnectLibnl();

// A libnl error code as a Status naming what was being done.
absl::Status NlStatus(const std::string& what, int libnl_error);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_RTNL_SOCKET_H_
