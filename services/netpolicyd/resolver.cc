#include "services/netpolicyd/resolver.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::netpolicyd {
namespace {

using Clock = std::chrono::steady_clock;

// A descriptor closed at scope exit.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int RemainingMs(Clock::time_point deadline) {
  // Rounded up: poll() must not return before the deadline.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Waits for `events` on `fd` until `deadline`.
absl::Status WaitFor(int fd, short events, Clock::time_point deadline, const std::string& what) {
  while (true) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, RemainingMs(deadline));
    if (n > 0) return absl::OkStatus();
    if (n == 0) return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
    if (errno != EINTR) return ErrnoStatus(what, errno);
  }
}

}  // namespace

absl::StatusOr<Upstream> ParseUpstream(absl::string_view text) {
  std::string host;
  std::string port = "53";
  if (absl::StartsWith(text, "[")) {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("dns upstream '", text, "': no ']'"));
    }
    host = std::string(text.substr(1, close - 1));
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) {
        return absl::InvalidArgumentError(absl::StrCat("dns upstream '", text, "': bad port"));
      }
      port = std::string(rest);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    size_t colon = text.find(':');
    host = std::string(text.substr(0, colon));
    port = std::string(text.substr(colon + 1));
  } else {
    host = std::string(text);  // IPv4 without a port, or a bare IPv6 address
  }
  uint32_t port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number == 0 || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("dns upstream '", text, "': bad port"));
  }
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("dns upstream '", text, "': not an IPv4 or IPv6 address"));
  }
  Upstream u;
  memcpy(&u.address, found->ai_addr, found->ai_addrlen);
  u.length = found->ai_addrlen;
  u.text = found->ai_family == AF_INET6 ? absl::StrCat("[", host, "]:", port_number)
                                        : absl::StrCat(host, ":", port_number);
  freeaddrinfo(found);
  return u;
}

absl::StatusOr<std::vector<Upstream>> UpstreamsFromResolvConf(absl::string_view contents) {
  std::vector<Upstream> out;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.size() < 2 || words[0] != "nameserver") continue;
    absl::string_view address = words[1];
    if (address.find(':') != absl::string_view::npos) {
      auto u = ParseUpstream(absl::StrCat("[", address, "]:53"));
      if (u.ok()) out.push_back(*std::move(u));
    } else {
      auto u = ParseUpstream(address);
      if (u.ok()) out.push_back(*std::move(u));
    }
  }
  if (out.empty()) return absl::NotFoundError("resolv.conf names no nameserver");
  return out;
}

absl::StatusOr<std::vector<Upstream>> ChooseUpstreams(const std::vector<std::string>& configured,
                                                      const std::string& resolv_conf_path) {
  if (!configured.empty()) {
    std::vector<Upstream> out;
    for (const auto& text : configured) {
      LAZ_ASSIGN_OR_RETURN(Upstream u, ParseUpstream(text));
      out.push_back(std::move(u));
    }
    return out;
  }
  LAZ_ASSIGN_OR_RETURN(std::string contents, fs::ReadHostFile(resolv_conf_path, 1 << 16));
  auto found = UpstreamsFromResolvConf(contents);
  if (!found.ok()) {
    return absl::NotFoundError(absl::StrCat(resolv_conf_path,
                                            " names no nameserver and the "
                                            "profile sets no network.dns_upstream"));
  }
  return found;
}

absl::StatusOr<dns::Response> Resolver::Resolve(const dns::Question& question) const {
  if (upstreams_.empty()) return absl::UnavailableError("no DNS upstream");
  absl::Status last = absl::UnavailableError("no attempt");
  for (int attempt = 0; attempt < options_.attempts; ++attempt) {
    const Upstream& upstream = upstreams_[attempt % upstreams_.size()];
    auto response = AskUdp(upstream, question);
    if (response.ok() && response->truncated) response = AskTcp(upstream, question);
    if (response.ok() && response->rcode != dns::Rcode::kServFail) return response;
    last = response.ok() ? absl::UnavailableError(absl::StrCat(upstream.text, " answered SERVFAIL"))
                         : response.status();
  }
  return absl::UnavailableError(absl::StrCat("DNS upstream failed: ", last.message()));
}

absl::StatusOr<dns::Response> Resolver::AskUdp(const Upstream& upstream,
                                               const dns::Question& question) const {
  Socket s(socket(upstream.address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd() < 0) return ErrnoStatus("socket", errno);
  // Connected: the kernel drops datagrams from anyone but the server asked.
  if (connect(s.fd(), reinterpret_cast<const sockaddr*>(&upstream.address), upstream.length) != 0) {
    return ErrnoStatus(absl::StrCat("connect ", upstream.text), errno);
  }
  uint16_t id = dns::RandomId();
  std::string query = dns::BuildQuery(id, question);
  if (send(s.fd(), query.data(), query.size(), 0) != static_cast<ssize_t>(query.size())) {
    return ErrnoStatus(absl::StrCat("send to ", upstream.text), errno);
  }
  Clock::time_point deadline = Clock::now() + options_.timeout;
  std::string buf(65535, '\0');
  while (true) {
    LAZ_RETURN_IF_ERROR(WaitFor(s.fd(), POLLIN, deadline, upstream.text));
    ssize_t n = recv(s.fd(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("receive from ", upstream.text), errno);
    }
    auto response = dns::ParseResponse(absl::string_view(buf.data(), n), id, question);
    if (response.ok()) return response;
    // Not the answer to this query (stale, spoofed or broken): keep waiting.
  }
}

absl::StatusOr<dns::Response> Resolver::AskTcp(const Upstream& upstream,
                                               const dns::Question& question) const {
  Clock::time_point deadline = Clock::now() + options_.timeout;
  Socket s(socket(upstream.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd() < 0) return ErrnoStatus("socket", errno);
  if (connect(s.fd(), reinterpret_cast<const sockaddr*>(&upstream.address), upstream.length) != 0) {
    if (errno != EINPROGRESS) return ErrnoStatus(absl::StrCat("connect ", upstream.text), errno);
    LAZ_RETURN_IF_ERROR(WaitFor(s.fd(), POLLOUT, deadline, upstream.text));
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ErrnoStatus(absl::StrCat("connect ", upstream.text), err);
  }
  uint16_t id = dns::RandomId();
  std::string query = dns::BuildQuery(id, question);
  std::string framed = {static_cast<char>(query.size() >> 8), static_cast<char>(query.size())};
  framed += query;
  for (size_t sent = 0; sent < framed.size();) {
    LAZ_RETURN_IF_ERROR(WaitFor(s.fd(), POLLOUT, deadline, upstream.text));
    ssize_t n = send(s.fd(), framed.data() + sent, framed.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return ErrnoStatus(absl::StrCat("send to ", upstream.text), errno);
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  auto read_exactly = [&](size_t want) -> absl::StatusOr<std::string> {
    std::string out(want, '\0');
    for (size_t got = 0; got < want;) {
      LAZ_RETURN_IF_ERROR(WaitFor(s.fd(), POLLIN, deadline, upstream.text));
      ssize_t n = recv(s.fd(), out.data() + got, want - got, 0);
      if (n == 0)
        return absl::UnavailableError(absl::StrCat(upstream.text, " closed the connection"));
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return ErrnoStatus(absl::StrCat("receive from ", upstream.text), errno);
      }
      if (n > 0) got += static_cast<size_t>(n);
    }
    return out;
  };
  LAZ_ASSIGN_OR_RETURN(std::string length, read_exactly(2));
  size_t size = (static_cast<uint8_t>(length[0]) << 8) | static_cast<uint8_t>(length[1]);
  LAZ_ASSIGN_OR_RETURN(std::string message, read_exactly(size));
  return dns::ParseResponse(message, id, question);
}

}  // namespace lazaret::netpolicyd
