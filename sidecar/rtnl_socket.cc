#include "sidecar/rtnl_socket.h"

#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::netrouter {
namespace {

// Requests per sendmsg: the kernel handles them inside the call and queues
// one ack each, so a chunk's acks must fit the receive buffer at once.
constexpr size_t kChunkBytes = 32 * 1024;
constexpr int kReceiveBuffer = 8 << 20;

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

// The extended-ack text of an NLMSG_ERROR message, if any.
std::string ExtAckText(const nlmsghdr* h) {
  if ((h->nlmsg_flags & NLM_F_ACK_TLVS) == 0) return "";
  const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
  size_t offset = NLMSG_HDRLEN + sizeof(nlmsgerr);
  // Without NLM_F_CAPPED the refused request follows in full.
  if ((h->nlmsg_flags & NLM_F_CAPPED) == 0) offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
  if (offset >= h->nlmsg_len) return "";
  auto* attrs = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(const_cast<nlmsghdr*>(h)) +
                                          NLMSG_ALIGN(offset));
  nlattr* msg =
      nla_find(attrs, static_cast<int>(h->nlmsg_len - NLMSG_ALIGN(offset)), NLMSGERR_ATTR_MSG);
  if (msg == nullptr) return "";
  return std::string(static_cast<const char*>(nla_data(msg)),
                     strnlen(static_cast<const char*>(nla_data(msg)), nla_len(msg)));
}

}  // namespace

absl::Status NlStatus(const std::string& what, int libnl_error) {
  return absl::InternalError(absl::StrCat(what, ": ", nl_geterror(libnl_error)));
}

absl::StatusOr<NlSockPtr> ConnectLibnl() {
  NlSockPtr sk(nl_socket_alloc());
  if (sk == nullptr) return absl::ResourceExhaustedError("nl_socket_alloc");
  if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0) {
    return NlStatus("connecting to rtnetlink", err);
  }
  return sk;
}

NlRequest::NlRequest(int type, int flags) : msg_(nlmsg_alloc_simple(type, flags)) {
  ok_ = msg_ != nullptr;
}

NlRequest::~NlRequest() {
  if (msg_ != nullptr) nlmsg_free(msg_);
}

NlRequest& NlRequest::Header(const void* data, size_t size) {
  if (ok_ && nlmsg_append(msg_, const_cast<void*>(data), size, NLMSG_ALIGNTO) < 0) ok_ = false;
  return *this;
}

NlRequest& NlRequest::Attr(int type, const void* data, size_t size) {
  if (ok_ && nla_put(msg_, type, static_cast<int>(size), data) < 0) ok_ = false;
  return *this;
}

NlRequest& NlRequest::NestStart(int type) {
  if (ok_) nest_ = nla_nest_start(msg_, type);
  if (nest_ == nullptr) ok_ = false;
  return *this;
}

NlRequest& NlRequest::NestEnd() {
  if (ok_ && nest_ != nullptr) nla_nest_end(msg_, nest_);
  nest_ = nullptr;
  return *this;
}

const nlmsghdr* NlRequest::header() const { return nlmsg_hdr(msg_); }

void NlBatch::Add(const NlRequest& request) {
  const nlmsghdr* h = request.header();
  offsets_.push_back(bytes_.size());
  bytes_.append(reinterpret_cast<const char*>(h), NLMSG_ALIGN(h->nlmsg_len));
}

absl::StatusOr<std::unique_ptr<RtnlSocket>> RtnlSocket::Open() {
  nl_sock* sk = nl_socket_alloc();
  if (sk == nullptr) return absl::ResourceExhaustedError("nl_socket_alloc");
  if (int err = nl_connect(sk, NETLINK_ROUTE); err < 0) {
    nl_socket_free(sk);
    return NlStatus("connecting to rtnetlink", err);
  }
  const int fd = nl_socket_get_fd(sk);
  int size = kReceiveBuffer;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    // Without CAP_NET_ADMIN only the capped SO_RCVBUF is possible.
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  if (setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one)) != 0) {
    const int e = errno;
    nl_socket_free(sk);
    return ErrnoStatus("strict netlink dump checking (needs Linux 4.20 or later)", e);
  }
  return std::unique_ptr<RtnlSocket>(new RtnlSocket(sk, fd));
}

RtnlSocket::~RtnlSocket() { nl_socket_free(sk_); }

absl::Status RtnlSocket::SendRaw(const char* data, size_t size) {
  const int rc = nl_sendto(sk_, const_cast<char*>(data), size);
  if (rc < 0) return NlStatus("sending to rtnetlink", rc);
  return absl::OkStatus();
}

absl::StatusOr<ssize_t> RtnlSocket::Receive() {
  for (;;) {
    const ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    // ENOBUFS: acks or dump parts were lost; what the kernel did is unknown.
    return ErrnoStatus("receiving from rtnetlink", errno);
  }
}

absl::Status RtnlSocket::Run(const NlBatch& batch, BatchError* first_error) {
  const uint32_t base = next_seq_;
  next_seq_ += static_cast<uint32_t>(batch.size()) + 1;
  std::string bytes = batch.bytes_;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto* h = reinterpret_cast<nlmsghdr*>(bytes.data() + batch.offsets_[i]);
    h->nlmsg_seq = base + static_cast<uint32_t>(i);
    h->nlmsg_flags |= NLM_F_ACK;
  }
  BatchError error;
  bool failed = false;
  size_t sent = 0;
  while (sent < batch.size()) {
    // One chunk: [sent, end), at most kChunkBytes unless one request is larger.
    auto message_end = [&](size_t i) {
      return i + 1 < batch.size() ? batch.offsets_[i + 1] : bytes.size();
    };
    const size_t start_byte = batch.offsets_[sent];
    size_t end = sent + 1;
    while (end < batch.size() && message_end(end) - start_byte <= kChunkBytes) ++end;
    const size_t end_byte = end < batch.size() ? batch.offsets_[end] : bytes.size();
    if (absl::Status s = SendRaw(bytes.data() + start_byte, end_byte - start_byte); !s.ok()) {
      return s;
    }
    size_t acked = 0;
    while (acked < end - sent) {
      LAZ_ASSIGN_OR_RETURN(ssize_t n, Receive());
      int len = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buffer_.data()); NLMSG_OK(h, len);
           h = NLMSG_NEXT(h, len)) {
        if (h->nlmsg_type != NLMSG_ERROR) continue;
        const size_t index = h->nlmsg_seq - base;
        if (h->nlmsg_seq < base || index < sent || index >= end) continue;
        ++acked;
        const int code = static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        if (code != 0 && !failed) {
          failed = true;
          error = {.index = index, .error = -code, .message = ExtAckText(h)};
        }
      }
    }
    sent = end;
  }
  if (!failed) return absl::OkStatus();
  if (first_error != nullptr) *first_error = error;
  return absl::InternalError(absl::StrCat(
      "the kernel refused request ", error.index, ": ", std::strerror(error.error),
      error.message.empty() ? "" : " (", error.message, error.message.empty() ? "" : ")"));
}

absl::Status RtnlSocket::Dump(const NlRequest& request,
                              const std::function<absl::Status(const nlmsghdr*)>& each) {
  std::string bytes(reinterpret_cast<const char*>(request.header()), request.header()->nlmsg_len);
  auto* req = reinterpret_cast<nlmsghdr*>(bytes.data());
  const uint32_t seq = next_seq_++;
  req->nlmsg_seq = seq;
  req->nlmsg_flags |= NLM_F_DUMP;
  LAZ_RETURN_IF_ERROR(SendRaw(bytes.data(), bytes.size()));
  absl::Status status;
  for (;;) {
    LAZ_ASSIGN_OR_RETURN(ssize_t n, Receive());
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer_.data()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq) continue;
      if ((h->nlmsg_flags & NLM_F_DUMP_INTR) != 0 && status.ok()) {
        status = absl::AbortedError("the kernel's table changed during the dump");
      }
      if (h->nlmsg_type == NLMSG_DONE) return status;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const int code = static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        if (code == 0) continue;
        return absl::InternalError(absl::StrCat(
            "the kernel refused the dump: ", std::strerror(-code), " ", ExtAckText(h)));
      }
      if (status.ok()) status = each(h);
    }
  }
}

absl::StatusOr<std::string> RtnlSocket::Ask(const NlRequest& request, int* error) {
  std::string bytes(reinterpret_cast<const char*>(request.header()), request.header()->nlmsg_len);
  auto* req = reinterpret_cast<nlmsghdr*>(bytes.data());
  const uint32_t seq = next_seq_++;
  req->nlmsg_seq = seq;
  *error = 0;
  LAZ_RETURN_IF_ERROR(SendRaw(bytes.data(), bytes.size()));
  for (;;) {
    LAZ_ASSIGN_OR_RETURN(ssize_t n, Receive());
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer_.data()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        *error = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        return std::string();
      }
      return std::string(reinterpret_cast<const char*>(h), h->nlmsg_len);
    }
  }
}

}  // namespace lazaret::netrouter
