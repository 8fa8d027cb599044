#include "sidecar/testing/test_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/status_util.h"
#include "services/spawn/subprocess.h"

namespace lazaret::netrouter::testing {
namespace {

std::atomic<int> counter{0};

// Runs a setup command (ip, sysctl) through the spawn library; its output
// is kept only to explain a failure.
absl::Status RunArgv(const std::vector<std::string>& argv) {
  LAZ_ASSIGN_OR_RETURN(cli::Captured run, cli::RunCaptured(argv));
  if (run.exit_code != 0) {
    return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "), "` failed (exit ",
                                            run.exit_code, "): ", run.err));
  }
  return absl::OkStatus();
}

absl::Status SetNs(const std::string& name) {
  const int fd = open(absl::StrCat("/run/netns/", name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening netns ", name), errno);
  const int rc = setns(fd, CLONE_NEWNET);
  const int e = errno;
  close(fd);
  if (rc != 0) return ErrnoStatus(absl::StrCat("entering netns ", name), e);
  return absl::OkStatus();
}

bool ToSockaddr(const std::string& address, uint16_t port, sockaddr_storage* ss, socklen_t* len) {
  *ss = {};
  if (address.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    *len = sizeof(*a);
    // "fe80::b%va": a scoped address names its interface.
    const size_t zone = address.find('%');
    if (zone != std::string::npos) {
      a->sin6_scope_id = if_nametoindex(address.substr(zone + 1).c_str());
      if (a->sin6_scope_id == 0) return false;
    }
    return inet_pton(AF_INET6, address.substr(0, zone).c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  *len = sizeof(*a);
  return inet_pton(AF_INET, address.c_str(), &a->sin_addr) == 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestNetwork>> TestNetwork::Create(bool with_host) {
  std::unique_ptr<TestNetwork> net(new TestNetwork());
  const std::string base = absl::StrCat("lzt-router-", getpid(), "-", counter++);
  net->router_ns_ = base + "-r";
  LAZ_RETURN_IF_ERROR(RunArgv({"ip", "netns", "add", net->router_ns_}));
  LAZ_RETURN_IF_ERROR(net->Ip({"link", "set", "lo", "up"}));
  // No duplicate address detection: a link-local address still tentative
  // sends no neighbour solicitation, and slirp's link has long finished DAD
  // when its router advertisement brings the IPv6 default route.
  const char* no_dad =
      "echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad; "
      "echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad";
  LAZ_RETURN_IF_ERROR(RunArgv({"ip", "netns", "exec", net->router_ns_, "sh", "-c", no_dad}));
  if (with_host) {
    net->host_ns_ = base + "-h";
    LAZ_RETURN_IF_ERROR(RunArgv({"ip", "netns", "add", net->host_ns_}));
    LAZ_RETURN_IF_ERROR(RunArgv({"ip", "netns", "exec", net->host_ns_, "sh", "-c", no_dad}));
    auto host = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {"-n", net->host_ns_});
      return net->Ip(args, false);
    };
    LAZ_RETURN_IF_ERROR(net->Ip(
        {"link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", net->host_ns_}));
    LAZ_RETURN_IF_ERROR(host({"link", "set", "lo", "up"}));
    for (const char* a : {"198.51.100.1/24", "198.51.100.2/24"}) {
      LAZ_RETURN_IF_ERROR(host({"addr", "add", a, "dev", "vb"}));
    }
    for (const char* a : {"2001:db8:1::1/64", "2001:db8:1::2/64", "fe80::b/64"}) {
      LAZ_RETURN_IF_ERROR(host({"addr", "add", a, "dev", "vb", "nodad"}));
    }
    for (const char* a :
         {"203.0.113.5/32", "203.0.113.6/32", "2001:db8:99::5/128", "2001:db8:99::6/128"}) {
      LAZ_RETURN_IF_ERROR(host({"addr", "add", a, "dev", "lo"}));
    }
    LAZ_RETURN_IF_ERROR(host({"link", "set", "vb", "up"}));
    LAZ_RETURN_IF_ERROR(net->Ip({"addr", "add", "198.51.100.100/24", "dev", "va"}));
    LAZ_RETURN_IF_ERROR(net->Ip({"addr", "add", "2001:db8:1::100/64", "dev", "va", "nodad"}));
    LAZ_RETURN_IF_ERROR(net->Ip({"link", "set", "va", "up"}));
    // A link without its link-local address yet sends no neighbour
    // solicitation (the kernel retries a second later): wait for it.
    LAZ_RETURN_IF_ERROR(net->Enter());
    bool ready = false;
    for (int i = 0; i < 300 && !ready; ++i) {
      std::string text;
      if (FILE* f = fopen("/proc/thread-self/net/if_inet6", "r")) {
        char line[256];
        while (fgets(line, sizeof(line), f) != nullptr) text += line;
        fclose(f);
      }
      ready = text.find("fe80") != std::string::npos && text.find(" va\n") != std::string::npos;
      if (!ready) usleep(10'000);
    }
    net->Leave();
    LAZ_RETURN_IF_ERROR(net->Ip({"route", "add", "default", "via", kGatewayV4}));
    LAZ_RETURN_IF_ERROR(net->Ip({"-6", "route", "add", "default", "via", kGatewayV6}));
  }
  LAZ_RETURN_IF_ERROR(RunArgv({"ip", "netns", "exec", net->router_ns_, "sh", "-c",
                               "echo 53 > /proc/sys/net/ipv4/ip_unprivileged_port_start"}));
  return net;
}

TestNetwork::~TestNetwork() {
  Leave();
  if (wake_ >= 0) {
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
    if (server_.joinable()) server_.join();
    close(wake_);
  }
  for (int fd : tcp_fds_) close(fd);
  for (int fd : udp_fds_) close(fd);
  if (!host_ns_.empty()) (void)RunArgv({"ip", "netns", "del", host_ns_});
  if (!router_ns_.empty()) (void)RunArgv({"ip", "netns", "del", router_ns_});
}

absl::Status TestNetwork::Ip(const std::vector<std::string>& args, bool in_router) const {
  std::vector<std::string> argv = {"ip"};
  if (in_router) argv.insert(argv.end(), {"-n", router_ns_});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunArgv(argv);
}

absl::Status TestNetwork::Enter() {
  if (entered_) return absl::OkStatus();
  if (original_ns_ < 0) {
    original_ns_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (original_ns_ < 0) return ErrnoStatus("opening this thread's netns", errno);
  }
  LAZ_RETURN_IF_ERROR(SetNs(router_ns_));
  entered_ = true;
  return absl::OkStatus();
}

void TestNetwork::Leave() {
  if (entered_) setns(original_ns_, CLONE_NEWNET);
  entered_ = false;
  if (original_ns_ >= 0) close(original_ns_);
  original_ns_ = -1;
}

absl::Status TestNetwork::Listen(const std::vector<uint16_t>& tcp_ports,
                                 const std::vector<uint16_t>& udp_ports) {
  const int back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (back < 0) return ErrnoStatus("opening this thread's netns", errno);
  absl::Status s = SetNs(host_ns_);
  auto open_socket = [&](int type, uint16_t port) -> absl::Status {
    const int fd = socket(AF_INET6, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return ErrnoStatus("socket", errno);
    int zero = 0;
    int one = 1;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        (type == SOCK_STREAM && listen(fd, 1024) != 0)) {
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("listening on port ", port), e);
    }
    (type == SOCK_STREAM ? tcp_fds_ : udp_fds_).push_back(fd);
    return absl::OkStatus();
  };
  for (uint16_t p : tcp_ports) {
    if (s.ok()) s = open_socket(SOCK_STREAM, p);
  }
  for (uint16_t p : udp_ports) {
    if (s.ok()) s = open_socket(SOCK_DGRAM, p);
  }
  setns(back, CLONE_NEWNET);
  close(back);
  LAZ_RETURN_IF_ERROR(s);
  wake_ = eventfd(0, EFD_CLOEXEC);
  server_ = std::thread([this] { ServeLoop(); });
  return absl::OkStatus();
}

void TestNetwork::ServeLoop() {
  std::vector<pollfd> fds;
  for (int fd : tcp_fds_) fds.push_back({fd, POLLIN, 0});
  for (int fd : udp_fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_, POLLIN, 0});
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds.back().revents != 0) return;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (i < tcp_fds_.size()) {
        int c;
        while ((c = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) close(c);
      } else {
        char buf[2048];
        sockaddr_storage peer{};
        socklen_t len = sizeof(peer);
        ssize_t n;
        while ((n = recvfrom(fds[i].fd, buf, sizeof(buf), MSG_DONTWAIT,
                             reinterpret_cast<sockaddr*>(&peer), &len)) >= 0) {
          sendto(fds[i].fd, buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer),
                 len);
          len = sizeof(peer);
        }
      }
    }
  }
}

int TryConnect(const std::string& address, uint16_t port, std::chrono::milliseconds timeout,
               const std::function<void(int)>& setup) {
  sockaddr_storage ss;
  socklen_t len;
  if (!ToSockaddr(address, port, &ss, &len)) return EINVAL;
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (setup) setup(fd);
  int result = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    result = errno;
    if (result == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
        result = ETIMEDOUT;
      } else {
        socklen_t elen = sizeof(result);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &elen);
      }
    }
  }
  close(fd);
  return result;
}

int TryUdp(const std::string& address, uint16_t port, std::chrono::milliseconds timeout, int flags,
           const std::function<void(int)>& setup) {
  sockaddr_storage ss;
  socklen_t len;
  if (!ToSockaddr(address, port, &ss, &len)) return EINVAL;
  const int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (setup) setup(fd);
  int result = 0;
  if (sendto(fd, "ping", 4, flags, reinterpret_cast<sockaddr*>(&ss), len) < 0) {
    result = errno;
  } else {
    pollfd p{fd, POLLIN, 0};
    char buf[16];
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0 || recv(fd, buf, sizeof(buf), 0) < 0) {
      result = ETIMEDOUT;
    }
  }
  close(fd);
  return result;
}

}  // namespace lazaret::netrouter::testing
