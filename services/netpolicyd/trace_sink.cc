#include "services/netpolicyd/trace_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "services/common/log.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

// The Sentry writes its handshake right after connecting.
constexpr int kHandshakeTimeoutMs = 5000;

bool Refused(int64_t err) {
  return err == EACCES || err == EPERM || err == ENETUNREACH || err == EHOSTUNREACH;
}

std::string ErrnoName(int64_t err) {
  switch (err) {
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case ENETUNREACH:
      return "ENETUNREACH";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EINPROGRESS:
      return "EINPROGRESS";
    case EALREADY:
      return "EALREADY";
    case EISCONN:
      return "EISCONN";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    case EINTR:
      return "EINTR";
    default:
      return absl::StrCat("errno ", err);
  }
}

bool SameAttempt(const pb::LogEntry& a, const pb::LogEntry& b) {
  return a.kind() == b.kind() && a.process() == b.process() && a.destination() == b.destination() &&
         a.port() == b.port() && a.detail() == b.detail();
}

}  // namespace

std::string TraceSocketPath(const std::string& runtime_dir, const std::string& id) {
  return absl::StrCat(runtime_dir, "/sessions/", id, "/trace.sock");
}

pb::LogEntry ConnectEntry(const TraceConnect& c, const CompiledPolicy* policy) {
  pb::LogEntry e;
  const bool refused = Refused(c.errno_value);
  e.set_kind(refused ? pb::LOG_KIND_CONNECT_REFUSED : pb::LOG_KIND_CONNECT_ALLOWED);
  if (c.time_ns > 0) e.set_time_unix_ms(c.time_ns / 1000000);
  e.set_destination(c.address.Address());
  e.set_port(c.port);
  e.set_process(c.process);
  e.set_count(1);
  const pb::Rule* rule = policy == nullptr ? nullptr : &policy->Evaluate(c.address);
  if (rule != nullptr) *e.mutable_rule() = *rule;
  const bool table_allows = rule != nullptr && rule->action() == pb::RULE_ACTION_ALLOW;
  if (refused && table_allows && (c.port == 53 || c.port == 853)) {
    e.set_detail(absl::StrCat("refused ahead of the table: DNS goes to the router only (",
                              ErrnoName(c.errno_value), ")"));
  } else if (refused && table_allows) {
    e.set_detail(
        absl::StrCat("refused although the table allows it: the router was closed or "
                     "the table changed since (",
                     ErrnoName(c.errno_value), ")"));
  } else if (refused) {
    e.set_detail(absl::StrCat("refused by the route table (", ErrnoName(c.errno_value), ")"));
  } else if (c.errno_value == 0) {
    e.set_detail("connected");
  } else if (c.errno_value == EINPROGRESS) {
    e.set_detail("connecting (non-blocking)");
  } else {
    e.set_detail(absl::StrCat("the route table let it through; the call failed with ",
                              ErrnoName(c.errno_value)));
  }
  return e;
}

absl::StatusOr<std::unique_ptr<TraceSink>> TraceSink::Create(const std::string& path,
                                                             Options options, Judge judge,
                                                             Sink sink) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the trace socket path ", path, " is longer than ", sizeof(addr.sun_path) - 1,
                     " bytes; use a shorter runtime directory (LAZARET_RUNTIME_DIR)"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  // A socket left by a netpolicyd that ended: its sandbox's Sentry lost
  // its connection with it, so nothing connects there any more.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
  // The session directory is 0700 and ours, so nobody else reaches the
  // socket between bind() and chmod() (umask is the process's, not this
  // thread's, and is left alone).
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, 4) != 0) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    return absl::UnavailableError(
        absl::StrCat("binding the trace socket ", path, ": ", strerror(err)));
  }
  int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) {
    close(fd);
    unlink(path.c_str());
    return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  }
  if (!options.now_ms) options.now_ms = [] { return absl::ToUnixMillis(absl::Now()); };
  return std::unique_ptr<TraceSink>(
      new TraceSink(path, fd, stop, std::move(options), std::move(judge), std::move(sink)));
}

TraceSink::TraceSink(std::string path, int listen_fd, int stop_fd, Options options, Judge judge,
                     Sink sink)
    : path_(std::move(path)),
      listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      options_(std::move(options)),
      judge_(std::move(judge)),
      sink_(std::move(sink)) {
  thread_ = std::thread([this] { Serve(); });
}

TraceSink::~TraceSink() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(stop_fd_);
  unlink(path_.c_str());
}

int64_t TraceSink::NowMs() const { return options_.now_ms(); }

void TraceSink::Emit(pb::LogEntry entry) { sink_(std::move(entry)); }

void TraceSink::Fold(pb::LogEntry entry) {
  const int64_t now = NowMs();
  if (folding_.has_value() && SameAttempt(*folding_, entry) &&
      now - folding_since_ms_ < options_.fold_window.count()) {
    ++folded_;
    return;
  }
  FlushFold(true);
  folding_ = entry;
  folding_since_ms_ = now;
  folded_ = 0;
  Emit(std::move(entry));
}

void TraceSink::FlushFold(bool force) {
  if (!folding_.has_value()) return;
  if (!force && NowMs() - folding_since_ms_ < options_.fold_window.count()) return;
  if (folded_ > 0) {
    pb::LogEntry repeat = *folding_;
    repeat.set_count(folded_);
    repeat.set_time_unix_ms(NowMs());
    Emit(std::move(repeat));
  }
  folding_.reset();
  folded_ = 0;
}

void TraceSink::Serve() {
  bool served = false;
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (served) {
      // One sandbox, one connection: a second one is not its Sentry's.
      close(fd);
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        cred.uid != options_.peer_uid) {
      LAZ_LOG_WARNING << "trace socket " << path_ << ": a connection from uid " << cred.uid
                      << " was refused (only uid " << options_.peer_uid << " runs the sandbox)";
      close(fd);
      continue;
    }
    served = true;
    absl::Status ended = ServeConnection(fd);
    close(fd);
    FlushFold(true);
    if (!ended.ok()) {
      pb::LogEntry gap;
      gap.set_kind(pb::LOG_KIND_LOG_GAP);
      gap.set_detail(absl::StrCat("the sandbox's connection records stopped: ", ended.message(),
                                  "; later connects of this session are not logged"));
      Emit(std::move(gap));
    }
  }
}

absl::Status TraceSink::ServeConnection(int fd) {
  std::vector<char> buf(kMaxTraceMessage + 1);
  bool handshaken = false;
  const int64_t accepted_ms = NowMs();
  while (true) {
    int timeout = -1;
    if (!handshaken) {
      timeout =
          static_cast<int>(std::max<int64_t>(0, kHandshakeTimeoutMs - (NowMs() - accepted_ms)));
    } else if (folding_.has_value()) {
      timeout = static_cast<int>(
          std::max<int64_t>(0, options_.fold_window.count() - (NowMs() - folding_since_ms_)));
    }
    pollfd fds[3] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int ready = poll(fds, 3, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    }
    if (fds[1].revents != 0) return absl::OkStatus();
    if (fds[2].revents & POLLIN) {
      int extra = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (extra >= 0) close(extra);
    }
    if (ready == 0) {
      if (!handshaken) return absl::DeadlineExceededError("no handshake within 5 s");
      FlushFold(false);
      continue;
    }
    if (fds[0].revents == 0) continue;
    // MSG_TRUNC: the real length of a longer message, which ends the
    // connection rather than being read in pieces.
    ssize_t n = recv(fd, buf.data(), buf.size(), MSG_TRUNC | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::InternalError(absl::StrCat("recv: ", strerror(errno)));
    }
    if (n == 0) return absl::OkStatus();  // the sandbox ended
    if (static_cast<size_t>(n) > kMaxTraceMessage) {
      return absl::InvalidArgumentError(
          absl::StrCat("a trace message of ", n, " bytes (at most ", kMaxTraceMessage, ")"));
    }
    const absl::string_view bytes(buf.data(), static_cast<size_t>(n));
    if (!handshaken) {
      absl::StatusOr<uint32_t> version = ParseTraceHandshake(bytes);
      if (!version.ok()) return version.status();
      const std::string reply = TraceHandshakeReply();
      if (send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(reply.size())) {
        return absl::UnavailableError(absl::StrCat("answering the handshake: ", strerror(errno)));
      }
      handshaken = true;
      continue;
    }
    absl::StatusOr<TraceMessage> m = ParseTraceMessage(bytes);
    if (!m.ok()) return m.status();
    if (const uint32_t lost = m->dropped - last_dropped_; lost > 0) {
      last_dropped_ = m->dropped;
      FlushFold(true);
      pb::LogEntry gap;
      gap.set_kind(pb::LOG_KIND_LOG_GAP);
      gap.set_count(lost);
      gap.set_detail(absl::StrCat("the sandbox's Sentry dropped ", lost,
                                  " connection records: netpolicyd did not read them in time"));
      Emit(std::move(gap));
    }
    if (m->connect.has_value()) Fold(judge_(*m->connect));
  }
}

}  // namespace lazaret::netpolicyd
