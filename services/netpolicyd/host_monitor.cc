#include "services/netpolicyd/host_monitor.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <libnl3/netlink/addr.h>
#include <libnl3/netlink/cache.h>
#include <libnl3/netlink/netlink.h>
#include <libnl3/netlink/route/addr.h>
#include <libnl3/netlink/route/link.h>
#include <libnl3/netlink/route/nexthop.h>
#include <libnl3/netlink/route/route.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

namespace lazaret::netpolicyd {
namespace {

using Clock = std::chrono::steady_clock;

struct SockDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct CacheDeleter {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;

absl::Status NlError(const char* what, int err) {
  return absl::UnavailableError(absl::StrCat("netlink ", what, ": ", nl_geterror(err)));
}

// An nl_addr as a prefix of `length` bits; false for another family.
bool ToPrefix(int family, nl_addr* addr, int length, IpPrefix* out) {
  std::array<uint8_t, 16> bytes = {};
  IpPrefix::Family f;
  size_t size;
  if (family == AF_INET) {
    f = IpPrefix::Family::kIpv4;
    size = 4;
  } else if (family == AF_INET6) {
    f = IpPrefix::Family::kIpv6;
    size = 16;
  } else {
    return false;
  }
  if (addr != nullptr && nl_addr_get_len(addr) > 0) {
    if (nl_addr_get_len(addr) != size) return false;
    memcpy(bytes.data(), nl_addr_get_binary_addr(addr), size);
  } else {
    length = 0;  // a default route carries no destination
  }
  *out = IpPrefix::Make(f, bytes, std::clamp(length, 0, static_cast<int>(size * 8)));
  return true;
}

std::string LinkName(nl_cache* links, int ifindex) {
  if (ifindex <= 0) return "";
  char buf[IF_NAMESIZE + 1] = {};
  if (rtnl_link_i2name(links, ifindex, buf, sizeof(buf)) != nullptr) return buf;
  return absl::StrCat("if", ifindex);
}

// The groups whose notifications mean the host's networks may differ.
constexpr int kGroups[] = {RTNLGRP_LINK,       RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
                           RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,  RTNLGRP_IPV6_PREFIX};

}  // namespace

absl::StatusOr<HostNetworks> ReadHostNetworks() {
  std::unique_ptr<nl_sock, SockDeleter> sk(nl_socket_alloc());
  if (sk == nullptr) return absl::ResourceExhaustedError("netlink: cannot allocate a socket");
  if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0) return NlError("connect", err);
  nl_cache* raw = nullptr;
  if (int err = rtnl_link_alloc_cache(sk.get(), AF_UNSPEC, &raw); err < 0) {
    return NlError("link dump", err);
  }
  CachePtr links(raw);
  if (int err = rtnl_addr_alloc_cache(sk.get(), &raw); err < 0) return NlError("address dump", err);
  CachePtr addrs(raw);
  if (int err = rtnl_route_alloc_cache(sk.get(), AF_UNSPEC, 0, &raw); err < 0) {
    return NlError("route dump", err);
  }
  CachePtr routes(raw);

  std::vector<AddrRecord> addr_records;
  for (nl_object* o = nl_cache_get_first(addrs.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    const int family = rtnl_addr_get_family(a);
    AddrRecord r{IpPrefix::Default(IpPrefix::Family::kIpv4), "", rtnl_addr_get_flags(a)};
    if (!ToPrefix(family, rtnl_addr_get_local(a), family == AF_INET ? 32 : 128, &r.address)) {
      continue;
    }
    r.ifname = LinkName(links.get(), rtnl_addr_get_ifindex(a));
    addr_records.push_back(std::move(r));
  }
  std::vector<RouteRecord> route_records;
  for (nl_object* o = nl_cache_get_first(routes.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* route = reinterpret_cast<rtnl_route*>(o);
    nl_addr* dst = rtnl_route_get_dst(route);
    RouteRecord r;
    if (!ToPrefix(rtnl_route_get_family(route), dst,
                  dst == nullptr ? 0 : static_cast<int>(nl_addr_get_prefixlen(dst)), &r.dst)) {
      continue;
    }
    r.type = rtnl_route_get_type(route);
    r.table = rtnl_route_get_table(route);
    r.scope = rtnl_route_get_scope(route);
    const int hops = rtnl_route_get_nnexthops(route);
    for (int i = 0; i < hops; ++i) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(route, i);
      if (nh == nullptr) continue;
      if (rtnl_route_nh_get_gateway(nh) != nullptr || rtnl_route_nh_get_via(nh) != nullptr) {
        r.has_gateway = true;
      }
      if (r.oif_name.empty()) r.oif_name = LinkName(links.get(), rtnl_route_nh_get_ifindex(nh));
    }
    route_records.push_back(std::move(r));
  }
  return ExtractHostNetworks(addr_records, route_records);
}

HostMonitor::HostMonitor(Options options, Publish publish)
    : options_(options), publish_(std::move(publish)) {}

absl::StatusOr<std::unique_ptr<HostMonitor>> HostMonitor::Create(Options options, Publish publish) {
  std::unique_ptr<HostMonitor> m(new HostMonitor(options, std::move(publish)));
  m->stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m->stop_ < 0) return ErrnoStatus("eventfd", errno);
  // Subscribed before the first dump: a change between the two is seen.
  LAZ_RETURN_IF_ERROR(m->OpenSocket());
  absl::StatusOr<HostNetworks> first = ReadHostNetworks();
  if (!first.ok()) {
    return absl::Status(first.status().code(), absl::StrCat("the host's addresses and routes: ",
                                                            first.status().message()));
  }
  m->dumps_ = 1;
  {
    std::lock_guard<std::mutex> lock(m->mu_);
    m->current_ = std::make_shared<const HostNetworks>(*std::move(first));
    m->version_ = 1;
  }
  m->thread_ = std::thread([raw = m.get()] { raw->Run(); });
  return m;
}

HostMonitor::~HostMonitor() {
  const uint64_t one = 1;
  if (stop_ >= 0 && write(stop_, &one, sizeof(one)) < 0) {
    LAZ_LOG_ERROR << "host monitor: cannot signal its thread to stop";
  }
  if (thread_.joinable()) thread_.join();
  if (socket_ >= 0) close(socket_);
  if (stop_ >= 0) close(stop_);
}

std::shared_ptr<const HostNetworks> HostMonitor::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unknown_ ? nullptr : current_;
}

std::pair<uint64_t, std::shared_ptr<const HostNetworks>> HostMonitor::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {version_, unknown_ ? nullptr : current_};
}

uint64_t HostMonitor::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

absl::Status HostMonitor::OpenSocket() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return ErrnoStatus("netlink socket", errno);
  if (options_.receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options_.receive_buffer,
               sizeof(options_.receive_buffer));
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus("netlink bind", e);
  }
  for (int group : kGroups) {
    if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("netlink group ", group), e);
    }
  }
  socket_ = fd;
  return absl::OkStatus();
}

bool HostMonitor::Drain(bool* seen) {
  alignas(nlmsghdr) char buf[65536];
  while (true) {
    const ssize_t n = recv(socket_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      *seen = true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {
      // Notifications were lost: which ones does not matter, a full dump
      // follows anyway.
      ++overruns_;
      *seen = true;
      continue;
    }
    return false;
  }
}

void HostMonitor::SetUnknown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unknown_) return;
    unknown_ = true;
    ++version_;
  }
  LAZ_LOG_ERROR << "host networks unknown: no dump of the host's addresses and routes for "
                << options_.unknown_after.count() << " ms; every session is closed until one works";
  publish_(version(), nullptr);
}

bool HostMonitor::Dump() {
  absl::StatusOr<HostNetworks> now = ReadHostNetworks();
  ++dumps_;
  if (!now.ok()) {
    LAZ_LOG_WARNING << "host monitor: " << now.status().message();
    return false;
  }
  std::shared_ptr<const HostNetworks> published;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!unknown_ && current_ != nullptr && *current_ == *now) return true;
    unknown_ = false;
    current_ = std::make_shared<const HostNetworks>(*std::move(now));
    published = current_;
    version = ++version_;
  }
  publish_(version, std::move(published));
  return true;
}

void HostMonitor::Run() {
  bool dirty = false;
  bool unknown = false;  // published as unknown since the state went dirty
  Clock::time_point dirty_since{};
  Clock::time_point next_attempt{};
  Clock::time_point reopen_at{};
  while (true) {
    const Clock::time_point now = Clock::now();
    Clock::time_point wake = Clock::time_point::max();
    if (dirty) wake = std::min(wake, next_attempt);
    if (dirty && !unknown) wake = std::min(wake, dirty_since + options_.unknown_after);
    if (socket_ < 0) wake = std::min(wake, reopen_at);
    int timeout = -1;
    if (wake != Clock::time_point::max()) {
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1));
    }
    pollfd fds[2] = {{stop_, POLLIN, 0}, {socket_, POLLIN, 0}};
    const int r = poll(fds, socket_ >= 0 ? 2 : 1, timeout);
    if (r < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "host monitor: poll: " << strerror(errno);
      return;
    }
    if (fds[0].revents != 0) return;
    const Clock::time_point after = Clock::now();
    auto mark = [&] {
      if (dirty) return;
      dirty = true;
      dirty_since = after;
      next_attempt = after + options_.debounce;
    };
    if (socket_ >= 0 && fds[1].revents != 0) {
      bool seen = false;
      if (!Drain(&seen)) {
        LAZ_LOG_WARNING << "host monitor: netlink socket failed (" << strerror(errno)
                        << "), reopening";
        close(socket_);
        socket_ = -1;
        reopen_at = after + options_.retry;
        mark();
      } else if (seen) {
        mark();
      }
    }
    if (socket_ < 0 && after >= reopen_at) {
      if (OpenSocket().ok()) {
        mark();  // whatever happened while it was closed
        next_attempt = after;
      } else {
        reopen_at = after + options_.retry;
      }
    }
    if (dirty && socket_ >= 0 && after >= next_attempt) {
      if (Dump()) {
        dirty = false;
        unknown = false;
      } else {
        next_attempt = after + options_.retry;  // tried again; unknown after a while
      }
    }
    if (dirty && !unknown && Clock::now() - dirty_since >= options_.unknown_after) {
      unknown = true;
      SetUnknown();
    }
  }
}

}  // namespace lazaret::netpolicyd
