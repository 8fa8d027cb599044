#include "tests/e2e/net_test_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e {
namespace {

constexpr char kLockFile[] = "/run/lock/lazaret-net-e2e-hosts.lock";

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string AddressText(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

absl::StatusOr<sockaddr_storage> SocketAddress(const std::string& address, uint16_t port,
                                               socklen_t* len) {
  sockaddr_storage ss{};
  auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, address.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    *len = sizeof(*in4);
  } else if (inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    *len = sizeof(*in6);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("not an address literal: ", address));
  }
  return ss;
}

// A bound socket (listening for TCP); pktinfo on for UDP, so the echo can
// leave from the address it was sent to.
absl::StatusOr<int> BoundSocket(const std::string& address, uint16_t port, int type) {
  socklen_t len = 0;
  absl::StatusOr<sockaddr_storage> ss = SocketAddress(address, port, &len);
  if (!ss.ok()) return ss.status();
  const int fd = socket(ss->ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss->ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (type == SOCK_DGRAM) setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
  } else if (type == SOCK_DGRAM) {
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*ss), len) != 0 ||
      (type == SOCK_STREAM && listen(fd, 1024) != 0)) {
    const int e = errno;
    close(fd);
    return absl::InternalError(
        absl::StrCat("bind/listen ", address, " port ", port, ": ", strerror(e)));
  }
  return fd;
}

uint16_t BoundPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(ss).sin_port
                                       : reinterpret_cast<sockaddr_in6&>(ss).sin6_port);
}

absl::Status JoinNetns(const std::string& netns) {
  if (netns.empty()) return absl::OkStatus();
  const std::string path = "/run/netns/" + netns;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", strerror(errno)));
  const int r = setns(fd, CLONE_NEWNET);
  const int e = errno;
  close(fd);
  if (r != 0) return absl::InternalError(absl::StrCat("setns ", path, ": ", strerror(e)));
  return absl::OkStatus();
}

// The address a datagram was sent to, from its pktinfo.
std::string DatagramDestination(msghdr& msg) {
  char buf[INET6_ADDRSTRLEN] = {};
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info{};
      memcpy(&info, CMSG_DATA(c), sizeof(info));
      inet_ntop(AF_INET, &info.ipi_addr, buf, sizeof(buf));
      // Answer from that address.
      info.ipi_spec_dst = info.ipi_addr;
      info.ipi_ifindex = 0;
      memcpy(CMSG_DATA(c), &info, sizeof(info));
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info{};
      memcpy(&info, CMSG_DATA(c), sizeof(info));
      inet_ntop(AF_INET6, &info.ipi6_addr, buf, sizeof(buf));
    }
  }
  return buf;
}

void EchoOne(int fd, const std::function<void(Contact)>& record) {
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
  if (n < 0) return;
  // Recorded before the echo leaves: whoever got the echo finds it counted.
  record({DatagramDestination(msg), true, RealtimeNs()});
  iov.iov_len = static_cast<size_t>(n);
  msg.msg_flags = 0;
  sendmsg(fd, &msg, MSG_DONTWAIT);
}

CommandResult Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::Run(argv);
}

std::string Strip(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

}  // namespace

bool IsV6(const std::string& address) { return address.find(':') != std::string::npos; }

absl::StatusOr<std::unique_ptr<Listeners>> Listeners::Start(
    const std::string& netns, const std::vector<std::string>& addresses, uint16_t port) {
  std::unique_ptr<Listeners> l(new Listeners());
  l->stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::promise<absl::Status> ready;
  std::future<absl::Status> started = ready.get_future();
  Listeners* self = l.get();
  l->thread_ = std::thread([self, netns, addresses, port, &ready] {
    absl::Status st = JoinNetns(netns);
    // A kernel-chosen port must be free for UDP and on every address too.
    for (int attempt = 0; st.ok() && attempt < 8; ++attempt) {
      uint16_t p = port;
      std::vector<int> fds;
      st = absl::OkStatus();
      for (const auto& a : addresses) {
        for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
          absl::StatusOr<int> fd = BoundSocket(a, p, type);
          if (!fd.ok()) {
            st = fd.status();
            break;
          }
          if (p == 0) p = BoundPort(*fd);
          fds.push_back(*fd);
          (type == SOCK_STREAM ? self->tcp_ : self->udp_).push_back(*fd);
        }
        if (!st.ok()) break;
      }
      if (st.ok()) {
        self->port_ = p;
        break;
      }
      for (int fd : fds) close(fd);
      self->tcp_.clear();
      self->udp_.clear();
      if (port != 0) break;
    }
    ready.set_value(st);
    if (st.ok()) self->Serve();
  });
  absl::Status st = started.get();
  if (!st.ok()) {
    l->thread_.join();
    return st;
  }
  return l;
}

void Listeners::Serve() {
  std::vector<pollfd> fds = {{stop_, POLLIN, 0}};
  for (int fd : tcp_) fds.push_back({fd, POLLIN, 0});
  for (int fd : udp_) fds.push_back({fd, POLLIN, 0});
  while (true) {
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    std::vector<Contact> seen;
    for (size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      if (i <= tcp_.size()) {
        sockaddr_storage local{};
        for (int c; (c = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
          socklen_t len = sizeof(local);
          getsockname(c, reinterpret_cast<sockaddr*>(&local), &len);
          seen.push_back({AddressText(local), false, RealtimeNs()});
          close(c);
        }
      } else {
        EchoOne(fds[i].fd, [&](Contact c) {
          std::lock_guard<std::mutex> lock(mu_);
          contacts_.push_back(std::move(c));
        });
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    contacts_.insert(contacts_.end(), seen.begin(), seen.end());
  }
}

Listeners::~Listeners() {
  const uint64_t one = 1;
  if (stop_ >= 0 && write(stop_, &one, sizeof(one)) < 0) {
    // The thread then blocks until the process ends; nothing else to do.
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : tcp_) close(fd);
  for (int fd : udp_) close(fd);
  if (stop_ >= 0) close(stop_);
}

std::vector<Contact> Listeners::Contacts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return contacts_;
}

size_t Listeners::CountTo(const std::string& address, bool udp) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(contacts_.begin(), contacts_.end(), [&](const Contact& c) {
    return c.udp == udp && (address.empty() || c.address == address);
  });
}

size_t Listeners::CountAfter(const std::string& address, int64_t after_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(contacts_.begin(), contacts_.end(), [&](const Contact& c) {
    return !c.udp && c.address == address && c.realtime_ns > after_ns;
  });
}

bool Listeners::WaitForCount(const std::string& address, bool udp, size_t at_least,
                             std::chrono::milliseconds timeout) const {
  return test::WaitFor([&] { return CountTo(address, udp) >= at_least; }, timeout);
}

std::vector<std::string> TestHost::Addresses() const {
  std::vector<std::string> out;
  for (const auto& a : spec_.addresses) out.push_back(Strip(a));
  out.insert(out.end(), spec_.routed.begin(), spec_.routed.end());
  return out;
}

std::vector<std::string> TestHost::HostSideAddresses() const {
  std::vector<std::string> out;
  for (const auto& a : {spec_.host_v4, spec_.host_v6}) {
    if (!a.empty()) out.push_back(Strip(a));
  }
  out.insert(out.end(), spec_.host_only.begin(), spec_.host_only.end());
  return out;
}

namespace {

absl::Status IpStep(const std::vector<std::string>& args) {
  CommandResult r = Ip(args);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("ip ", absl::StrJoin(args, " "), ": ", r.err));
  }
  return absl::OkStatus();
}

// "ip addr add|del" arguments for a host-side address: a bare address is a
// /32 (/128) without a prefix route.
std::vector<std::string> HostAddressArgs(const std::string& verb, const std::string& address,
                                         const std::string& link) {
  const bool v6 = IsV6(address);
  std::vector<std::string> args = {v6 ? "-6" : "-4", "addr", verb};
  if (address.find('/') == std::string::npos) {
    args.push_back(address + (v6 ? "/128" : "/32"));
    args.insert(args.end(), {"dev", link});
    if (verb == "add") args.push_back("noprefixroute");
  } else {
    args.insert(args.end(), {address, "dev", link});
  }
  if (v6 && verb == "add") args.push_back("nodad");
  return args;
}

}  // namespace

absl::Status TestHost::AddHostAddress(const std::string& address) const {
  return IpStep(HostAddressArgs("add", address, host_link()));
}

absl::Status TestHost::DelHostAddress(const std::string& address) const {
  return IpStep(HostAddressArgs("del", address, host_link()));
}

absl::Status TestHost::AddOnLinkPrefix(const std::string& cidr) const {
  return IpStep({IsV6(cidr) ? "-6" : "-4", "route", "add", cidr, "dev", host_link()});
}

absl::Status TestHost::DelOnLinkPrefix(const std::string& cidr) const {
  return IpStep({IsV6(cidr) ? "-6" : "-4", "route", "del", cidr, "dev", host_link()});
}

absl::Status TestHost::RunInside(const std::function<void()>& fn) const {
  absl::Status st;
  std::thread t([&] {
    st = JoinNetns(netns());
    if (st.ok()) fn();
  });
  t.join();
  return st;
}

void TestHosts::RemoveLeftovers() {
  std::istringstream netns(Ip({"netns", "list"}).out);
  for (std::string line; std::getline(netns, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kTestHostPrefix, 0) == 0) Ip({"netns", "del", name});
  }
  std::istringstream links(Ip({"-o", "link", "show"}).out);
  for (std::string line; std::getline(links, line);) {
    // "12: lztn-pub-h@if2: <...": the name sits between ": " and '@' or ':'.
    const size_t start = line.find(": ");
    if (start == std::string::npos) continue;
    const std::string rest = line.substr(start + 2);
    const std::string name = rest.substr(0, rest.find_first_of("@:"));
    if (name.rfind(kTestHostPrefix, 0) == 0) Ip({"link", "del", name});
  }
}

absl::StatusOr<std::unique_ptr<TestHosts>> TestHosts::Create(
    const std::vector<TestHostSpec>& specs) {
  std::unique_ptr<TestHosts> hosts(new TestHosts());
  hosts->lock_fd_ = open(kLockFile, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (hosts->lock_fd_ < 0 || flock(hosts->lock_fd_, LOCK_EX) != 0) {
    return absl::InternalError(absl::StrCat(kLockFile, ": ", strerror(errno)));
  }
  RemoveLeftovers();
  for (const auto& spec : specs) {
    absl::Status st = hosts->Build(spec);
    if (!st.ok()) return st;  // the destructor removes what was built
  }
  return hosts;
}

absl::Status TestHosts::Build(const TestHostSpec& spec) {
  const std::string ns = kTestHostPrefix + spec.name;
  const std::string h = ns + "-h";
  const std::string n = ns + "-n";
  hosts_.push_back(std::unique_ptr<TestHost>(new TestHost(spec)));
  std::vector<std::vector<std::string>> steps = {
      {"netns", "add", ns},
      // No duplicate address detection inside (addresses are usable at
      // once; the namespace's own settings, gone with it). The host end's
      // addresses are added with nodad.
      {"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"},
      {"link", "add", h, "type", "veth", "peer", "name", n, "netns", ns},
      {"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"},
      {"-n", ns, "link", "set", "lo", "up"},
      {"-n", ns, "link", "set", n, "up"},
  };
  for (const auto& a : spec.addresses) {
    steps.push_back({"-n", ns, "addr", "add", a, "dev", n});
    if (IsV6(a)) steps.back().push_back("nodad");
  }
  for (const auto& r : spec.routed) {
    steps.push_back({"-n", ns, "addr", "add", r + (IsV6(r) ? "/128" : "/32"), "dev", n});
    if (IsV6(r)) steps.back().push_back("nodad");
  }
  // The inner end's default routes only need their gateway on-link there.
  if (!spec.host_v4.empty()) {
    steps.push_back({"-n", ns, "route", "add", "default", "via", Strip(spec.host_v4)});
    steps.push_back({"addr", "add", spec.host_v4, "dev", h});
  }
  if (!spec.host_v6.empty()) {
    steps.push_back({"-n", ns, "-6", "route", "add", "default", "via", Strip(spec.host_v6)});
    steps.push_back({"-6", "addr", "add", spec.host_v6, "dev", h, "nodad"});
  }
  for (const auto& a : spec.host_only) {
    steps.push_back(HostAddressArgs("add", a, h));
  }
  steps.push_back({"link", "set", h, "up"});
  for (const auto& r : spec.routed) {
    std::vector<std::string> route = {IsV6(r) ? "-6" : "-4", "route", "add", r};
    if (spec.gateway_routed) {
      const auto gateway = std::find_if(spec.addresses.begin(), spec.addresses.end(),
                                        [&](const std::string& a) { return IsV6(a) == IsV6(r); });
      if (gateway == spec.addresses.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(spec.name, ": no inner address to route ", r, " through"));
      }
      route.insert(route.end(), {"via", Strip(*gateway)});
    }
    route.insert(route.end(), {"dev", h});
    steps.push_back(std::move(route));
  }
  for (const auto& s : steps) {
    CommandResult r = Ip(s);
    if (r.exit_code != 0) {
      return absl::InternalError(absl::StrCat("ip ", absl::StrJoin(s, " "), ": ", r.err));
    }
  }
  // Traffic to these addresses must never leave the machine: each one is
  // routed through this host's link, or nothing is built.
  for (const auto& a : hosts_.back()->Addresses()) {
    CommandResult r = Ip({"route", "get", a});
    if (r.out.find(" dev " + h + " ") == std::string::npos) {
      return absl::FailedPreconditionError(
          absl::StrCat(a, " is not routed through ", h, ": ", r.out, r.err));
    }
  }
  absl::StatusOr<std::unique_ptr<Listeners>> l = Listeners::Start(ns, {"0.0.0.0", "::"}, kTestPort);
  if (!l.ok()) return l.status();
  hosts_.back()->listeners_ = std::move(*l);
  return absl::OkStatus();
}

TestHosts::~TestHosts() {
  for (auto& host : hosts_) {
    host->listeners_.reset();
    Ip({"netns", "del", host->netns()});
    const std::string h = host->netns() + "-h";
    if (Ip({"link", "show", h}).exit_code == 0) Ip({"link", "del", h});
  }
  if (lock_fd_ >= 0) close(lock_fd_);
}

const TestHost* TestHosts::Find(const std::string& name) const {
  for (const auto& h : hosts_) {
    if (h->name() == name) return h.get();
  }
  return nullptr;
}

std::vector<std::string> HostInterfaceAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    sockaddr_storage ss{};
    memcpy(&ss, i->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (family == AF_INET6) {
      const in6_addr& a = reinterpret_cast<sockaddr_in6&>(ss).sin6_addr;
      if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_LINKLOCAL(&a)) continue;
    } else if ((ntohl(reinterpret_cast<sockaddr_in&>(ss).sin_addr.s_addr) >> 24) == 127) {
      continue;
    }
    const std::string text = AddressText(ss);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace lazaret::test::e2e
