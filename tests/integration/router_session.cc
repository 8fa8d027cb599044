#include "tests/integration/router_session.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/netpolicyd/host_inputs.h"

namespace lazaret::test {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;
namespace sv = ::lazaret::supervisor::v1;
namespace dns = ::lazaret::netpolicyd::dns;

bool EnterNamespace(const std::string& ns) {
  int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string RouterSession::RouterBinary() {
  const char* v = std::getenv("LAZARET_TEST_NETROUTER");
  return v != nullptr && *v != '\0' ? v : Binary("lazaret-netrouter");
}

absl::StatusOr<std::unique_ptr<RouterSession>> RouterSession::Start(
    const std::string& router_bin, lazaret::config::v1::NetworkPolicy network,
    std::vector<TestDnsRecord> records) {
  std::unique_ptr<RouterSession> s(new RouterSession());
  absl::Status st = s->Build(router_bin, std::move(network), std::move(records));
  if (!st.ok()) return st;
  return s;
}

absl::Status RouterSession::Build(const std::string& router_bin,
                                  lazaret::config::v1::NetworkPolicy network,
                                  std::vector<TestDnsRecord> records) {
  if (access(router_bin.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("no ", router_bin));
  }
  r_ = absl::StrCat("lzt-policyd-r-", getpid());
  h_ = absl::StrCat("lzt-policyd-h-", getpid());
  made_namespaces_ = true;
  const std::vector<std::vector<std::string>> setup = {
      {"ip", "netns", "add", r_},
      {"ip", "netns", "add", h_},
      {"ip", "-n", r_, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", h_},
      {"ip", "-n", r_, "link", "set", "lo", "up"},
      {"ip", "-n", h_, "link", "set", "lo", "up"},
      {"ip", "-n", r_, "addr", "add", "198.51.100.100/24", "dev", "va"},
      {"ip", "-n", h_, "addr", "add", "198.51.100.1/24", "dev", "vb"},
      {"ip", "-n", h_, "addr", "add", "203.0.113.0/24", "dev", "lo"},
      {"ip", "-n", r_, "link", "set", "va", "up"},
      {"ip", "-n", h_, "link", "set", "vb", "up"},
      {"ip", "-n", r_, "route", "add", "default", "via", "198.51.100.1"},
      {"ip", "netns", "exec", r_, "sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=53"},
  };
  for (const auto& cmd : setup) {
    CommandResult res = Run(cmd);
    if (res.exit_code != 0) {
      return absl::InternalError(absl::StrCat(absl::StrJoin(cmd, " "), ": ", res.err));
    }
  }

  // Every address of H (the /24 on its loopback is local as a whole)
  // accepts TCP on kRemotePort.
  std::atomic<bool> ready{false};
  listener_ = std::thread([this, &ready] {
    EnterNamespace(h_);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kRemotePort);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd, 256);
    ready = true;
    while (!stop_listener_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) == 1) {
        int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) close(c);
      }
    }
    close(fd);
  });
  if (!WaitFor([&] { return ready.load(); }, std::chrono::seconds(5))) {
    return absl::InternalError("the test host's listener did not start");
  }

  const std::string dir = absl::StrCat(dir_.path(), "/sessions/", kRouterSessionId, "/router");
  Run({"mkdir", "-p", dir});
  chmod(dir.c_str(), 0700);
  const std::string socket = lazaret::netpolicyd::RouterSocketPath(dir_.path(), kRouterSessionId);
  std::string a0 = router_bin, a1 = "--runtime-dir=" + dir, a2 = "--socket=" + socket;
  char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  int ns = open(("/run/netns/" + r_).c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return absl::InternalError("cannot open the router's namespace");
  router_pid_ = fork();
  if (router_pid_ == 0) {
    if (setns(ns, CLONE_NEWNET) != 0) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  close(ns);
  if (!WaitFor([&] { return CheckHealth(socket, 200).ok(); }, std::chrono::seconds(10))) {
    return absl::UnavailableError(absl::StrCat("the router did not answer on ", socket));
  }
  {
    auto stub = rt::NetRouterService::NewStub(DialUnix(socket));
    grpc::ClientContext ctx;
    rt::GetPolicyResponse resp;
    grpc::Status st = stub->GetPolicy(&ctx, rt::GetPolicyRequest(), &resp);
    if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return absl::UnimplementedError(absl::StrCat(router_bin, " has no policy API yet"));
    }
    if (!st.ok()) return absl::UnavailableError(st.error_message());
  }

  TestDnsServerOptions dns;
  dns.records = std::move(records);
  auto upstream = TestDnsServer::Start(dns);
  if (!upstream.ok()) return upstream.status();
  upstream_ = *std::move(upstream);
  network.add_dns_upstream(upstream_->address());

  sv::SessionInfo info;
  info.mutable_record()->set_id(kRouterSessionId);
  info.mutable_record()->set_profile("work");
  info.mutable_record()->set_workspace("/nonexistent/project");
  info.set_state(sv::SESSION_STATE_ATTACHED);
  supervisor_.Add(info);
  configd_.Set(network);
  auto sup =
      lazaret::netpolicyd::testing::Serve(&supervisor_, SocketPath(dir_.path(), "supervisor"));
  if (!sup.ok()) return sup.status();
  supervisor_server_ = *std::move(sup);
  auto conf = lazaret::netpolicyd::testing::Serve(&configd_, SocketPath(dir_.path(), "configd"));
  if (!conf.ok()) return conf.status();
  configd_server_ = *std::move(conf);

  lazaret::netpolicyd::RegistryOptions options;
  options.watch_supervisor = false;
  registry_ = std::make_shared<lazaret::netpolicyd::Registry>(dir_.path(), options);
  registry_->Start();
  impl_ = std::make_unique<lazaret::netpolicyd::NetPolicyServiceImpl>(registry_);
  auto server =
      lazaret::netpolicyd::testing::Serve(impl_.get(), SocketPath(dir_.path(), "netpolicyd"));
  if (!server.ok()) return server.status();
  service_server_ = *std::move(server);
  stub_ = pb::NetPolicyService::NewStub(DialUnix(SocketPath(dir_.path(), "netpolicyd")));
  return absl::OkStatus();
}

RouterSession::~RouterSession() {
  if (registry_ != nullptr) registry_->Stop();
  service_server_.reset();
  if (router_pid_ > 0) {
    kill(router_pid_, SIGTERM);
    int status;
    waitpid(router_pid_, &status, 0);
  }
  stop_listener_ = true;
  if (listener_.joinable()) listener_.join();
  if (made_namespaces_) {
    Run({"ip", "netns", "del", r_});
    Run({"ip", "netns", "del", h_});
  }
}

absl::StatusOr<pb::PolicyApplied> RouterSession::Attach() {
  grpc::ClientContext ctx;
  pb::AttachSessionRequest req;
  req.mutable_session()->set_id(kRouterSessionId);
  pb::PolicyApplied applied;
  grpc::Status st = stub_->AttachSession(&ctx, req, &applied);
  if (!st.ok()) return FromGrpcStatus(st);
  return applied;
}

void RouterSession::InSandbox(const std::function<void()>& fn) const {
  std::thread t([&] {
    if (EnterNamespace(r_)) fn();
  });
  t.join();
}

int RouterSession::Connect(const std::string& address) const {
  int err = -1;
  InSandbox([&] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kRemotePort);
    inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    err = 0;
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, 1000) == 1) {
          socklen_t len = sizeof(err);
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = ETIMEDOUT;
        }
      }
    }
    close(fd);
  });
  return err;
}

std::optional<dns::Response> AskUdp(const std::string& name, uint16_t type, const sockaddr* to,
                                    socklen_t to_len) {
  std::vector<std::string> labels = absl::StrSplit(name, '.');
  dns::Question q{labels, type, dns::kClassIn};
  const uint16_t id = dns::RandomId();
  std::string query = dns::BuildQuery(id, q);
  int fd = socket(to->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  timeval tv{.tv_sec = 8, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sendto(fd, query.data(), query.size(), 0, to, to_len);
  std::string buf(4096, '\0');
  ssize_t n = recv(fd, buf.data(), buf.size(), 0);
  close(fd);
  if (n <= 0) return std::nullopt;
  auto resp = dns::ParseResponse(absl::string_view(buf.data(), n), id, q);
  if (!resp.ok()) return std::nullopt;
  return *resp;
}

std::optional<dns::Response> RouterSession::Ask(const std::string& name, uint16_t type) const {
  std::optional<dns::Response> out;
  InSandbox([&] {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    out = AskUdp(name, type, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  });
  return out;
}

}  // namespace lazaret::test
