#include "tests/e2e/net_group_receiver.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e::net {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

std::string Text(int family, const void* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, addr, buf, sizeof(buf));
  return buf;
}

// An address literal (IPv6 with an optional %dev) and a port.
absl::StatusOr<sockaddr_storage> Parse(const std::string& address, uint16_t port, socklen_t* len) {
  sockaddr_storage ss{};
  auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  const std::string host = address.substr(0, address.find('%'));
  if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    *len = sizeof(*in4);
    return ss;
  }
  if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not an address literal: ", address));
  }
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  if (host.size() != address.size()) {
    in6->sin6_scope_id = if_nametoindex(address.substr(host.size() + 1).c_str());
    if (in6->sin6_scope_id == 0) return Errno("zone of " + address);
  }
  *len = sizeof(*in6);
  return ss;
}

absl::Status Join(int fd, int family, const GroupSocket::Join& j) {
  const unsigned int index = if_nametoindex(j.interface.c_str());
  if (index == 0) return Errno("interface " + j.interface);
  int r;
  if (family == AF_INET) {
    ip_mreqn m{};
    if (inet_pton(AF_INET, j.group.c_str(), &m.imr_multiaddr) != 1) {
      return absl::InvalidArgumentError("group " + j.group);
    }
    m.imr_ifindex = static_cast<int>(index);
    r = setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m));
  } else {
    ipv6_mreq m{};
    if (inet_pton(AF_INET6, j.group.c_str(), &m.ipv6mr_multiaddr) != 1) {
      return absl::InvalidArgumentError("group " + j.group);
    }
    m.ipv6mr_interface = index;
    r = setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &m, sizeof(m));
  }
  return r == 0 ? absl::OkStatus() : Errno(absl::StrCat("join ", j.group, " on ", j.interface));
}

// A bound UDP socket with pktinfo on, joined to its groups.
absl::StatusOr<int> OpenSocket(const GroupSocket& spec, uint16_t port) {
  socklen_t len = 0;
  absl::StatusOr<sockaddr_storage> ss = Parse(spec.bind, port, &len);
  if (!ss.ok()) return ss.status();
  const int family = ss->ss_family;
  const int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
  } else {
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  }
  absl::Status st = bind(fd, reinterpret_cast<const sockaddr*>(&*ss), len) == 0
                        ? absl::OkStatus()
                        : Errno(absl::StrCat("bind ", spec.bind, " port ", port));
  for (size_t i = 0; st.ok() && i < spec.joins.size(); ++i) st = Join(fd, family, spec.joins[i]);
  if (!st.ok()) {
    close(fd);
    return st;
  }
  return fd;
}

// Reads every datagram waiting on fd.
std::vector<Datagram> Drain(int fd) {
  std::vector<Datagram> out;
  while (true) {
    char data[2048];
    alignas(cmsghdr) char control[256];
    sockaddr_storage peer{};
    iovec iov{data, sizeof(data)};
    msghdr msg{};
    msg.msg_name = &peer;
    msg.msg_namelen = sizeof(peer);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n < 0) return out;
    Datagram d;
    d.payload.assign(data, static_cast<size_t>(n));
    if (peer.ss_family == AF_INET) {
      d.from = Text(AF_INET, &reinterpret_cast<sockaddr_in&>(peer).sin_addr);
    } else {
      d.from = Text(AF_INET6, &reinterpret_cast<sockaddr_in6&>(peer).sin6_addr);
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo info{};
        memcpy(&info, CMSG_DATA(c), sizeof(info));
        d.to = Text(AF_INET, &info.ipi_addr);
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        in6_pktinfo info{};
        memcpy(&info, CMSG_DATA(c), sizeof(info));
        d.to = Text(AF_INET6, &info.ipi6_addr);
      }
    }
    out.push_back(std::move(d));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GroupReceiver>> GroupReceiver::Start(
    const TestHost* inside, uint16_t port, const std::vector<GroupSocket>& socks) {
  std::unique_ptr<GroupReceiver> r(new GroupReceiver());
  r->stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (r->stop_ < 0) return Errno("eventfd");
  // Interface names are looked up where the sockets are made.
  absl::Status st;
  auto open_all = [&] {
    for (const auto& s : socks) {
      absl::StatusOr<int> fd = OpenSocket(s, port);
      if (!fd.ok()) {
        st = fd.status();
        return;
      }
      r->fds_.push_back(*fd);
    }
  };
  if (inside == nullptr) {
    open_all();
  } else {
    absl::Status joined = inside->RunInside(open_all);
    if (!joined.ok()) st = joined;
  }
  if (!st.ok()) return st;
  GroupReceiver* self = r.get();
  r->thread_ = std::thread([self] { self->Serve(); });
  return r;
}

void GroupReceiver::Serve() {
  std::vector<pollfd> fds = {{stop_, POLLIN, 0}};
  for (int fd : fds_) fds.push_back({fd, POLLIN, 0});
  while (true) {
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      std::vector<Datagram> got = Drain(fds[i].fd);
      std::lock_guard<std::mutex> lock(mu_);
      received_.insert(received_.end(), got.begin(), got.end());
    }
  }
}

GroupReceiver::~GroupReceiver() {
  const uint64_t one = 1;
  if (stop_ >= 0 && write(stop_, &one, sizeof(one)) < 0) {
    // The thread then blocks until the process ends; nothing else to do.
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : fds_) close(fd);
  if (stop_ >= 0) close(stop_);
}

std::vector<Datagram> GroupReceiver::Received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

size_t GroupReceiver::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_.size();
}

bool GroupReceiver::WaitForPayload(const std::string& payload,
                                   std::chrono::milliseconds timeout) const {
  return test::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu_);
        return std::any_of(received_.begin(), received_.end(),
                           [&](const Datagram& d) { return d.payload == payload; });
      },
      timeout);
}

std::string GroupReceiver::Describe() const {
  std::string out;
  for (const Datagram& d : Received()) {
    absl::StrAppend(&out, "  to ", d.to, " from ", d.from, ": \"", d.payload, "\"\n");
  }
  return out.empty() ? "  (nothing)\n" : out;
}

absl::StatusOr<std::unique_ptr<HostRoutes>> HostRoutes::Add(const std::vector<Route>& routes) {
  std::unique_ptr<HostRoutes> h(new HostRoutes());
  for (const Route& r : routes) {
    std::vector<std::string> argv = {"ip", r.family, "route", "replace"};
    argv.insert(argv.end(), r.spec.begin(), r.spec.end());
    CommandResult res = test::Run(argv);
    if (res.exit_code != 0) {
      // The destructor removes those already added.
      return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), ": ", res.err));
    }
    h->added_.push_back(r);
  }
  return h;
}

HostRoutes::~HostRoutes() {
  for (auto it = added_.rbegin(); it != added_.rend(); ++it) {
    std::vector<std::string> argv = {"ip", it->family, "route", "del"};
    argv.insert(argv.end(), it->spec.begin(), it->spec.end());
    test::Run(argv);
  }
}

absl::Status SendDatagram(const std::string& address, uint16_t port, const std::string& payload) {
  socklen_t len = 0;
  absl::StatusOr<sockaddr_storage> ss = Parse(address, port, &len);
  if (!ss.ok()) return ss.status();
  const int fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  const ssize_t n =
      sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&*ss), len);
  absl::Status st = n < 0 ? Errno("send to " + address) : absl::OkStatus();
  close(fd);
  return st;
}

bool HostHasMdnsListener() {
  for (const char* table : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::istringstream in(test::ReadFile(table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      // f[1] is the local "ADDRESS:PORT", both in hex.
      if (f.size() > 1 && absl::EndsWith(f[1], ":14E9")) return true;
    }
  }
  return false;
}

}  // namespace lazaret::test::e2e::net
