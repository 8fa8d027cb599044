#include "services/supervisor/registry.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::supervisor {
namespace {

// The pid a pidfd refers to (-1 once that process has exited), from
// /proc/self/fdinfo.
int PidOfPidfd(int pidfd) {
  std::ifstream in(absl::StrCat("/proc/self/fdinfo/", pidfd));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Pid:", 0) != 0) continue;
    int pid = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(4)), &pid)) return pid;
  }
  return 0;
}

bool Exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

bool IsProfileName(const std::string& n) {
  if (n.empty() || n.size() > 32) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateSessionRecord(const common::v1::SessionRecord& r) {
  if (!IsValidSessionId(r.id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("session id '", r.id().substr(0, 64), "' is not 12 lowercase hex digits"));
  }
  if (!IsProfileName(r.profile())) {
    return absl::InvalidArgumentError("the record's profile is not a valid profile name");
  }
  if (!vocab::IsCleanAbsolutePath(r.workspace())) {
    return absl::InvalidArgumentError("the record's workspace is not a clean absolute path");
  }
  if (!vocab::IsCleanAbsolutePath(r.git_state_dir())) {
    return absl::InvalidArgumentError("the record's git_state_dir is not a clean absolute path");
  }
  // Empty without a --config FILE; lazaret-netpolicyd resolves the
  // session's network settings from it, so nothing but a clean path.
  if (!r.explicit_config().empty() && !vocab::IsCleanAbsolutePath(r.explicit_config())) {
    return absl::InvalidArgumentError(
        "the record's explicit_config is neither empty nor a clean absolute path");
  }
  if (r.pid() <= 0) return absl::InvalidArgumentError("the record has no owner pid");
  if (r.started_unix() <= 0) return absl::InvalidArgumentError("the record has no start time");
  return absl::OkStatus();
}

SessionRegistry::~SessionRegistry() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, e] : sessions_) {
    if (e.pidfd >= 0) close(e.pidfd);
  }
}

v1::SessionInfo SessionRegistry::InfoFor(const common::v1::SessionRecord& record) const {
  // The same names the session worker gives them (services/sessiond/session/names.h).
  v1::SessionInfo info;
  *info.mutable_record() = record;
  info.set_state(v1::SESSION_STATE_REGISTERED);
  info.set_sidecar_container(absl::StrCat("lazaret-", record.id(), "-sidecar"));
  info.set_sandbox_container(absl::StrCat("lazaret-", record.id(), "-sandbox"));
  info.set_router_socket(
      absl::StrCat(runtime_dir_, "/sessions/", record.id(), "/router/router.sock"));
  return info;
}

void SessionRegistry::Wake() const {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void SessionRegistry::Publish(v1::SessionEventKind kind, const v1::SessionInfo& info) {
  v1::SessionEvent ev;
  ev.set_kind(kind);
  *ev.mutable_session() = info;
  events_.push_back(std::move(ev));
  if (events_.size() > kMaxEvents) events_.pop_front();
  ++next_seq_;
  events_cv_.notify_all();
}

absl::StatusOr<v1::SessionInfo> SessionRegistry::Register(const common::v1::SessionRecord& record,
                                                          const PeerProcess& peer) {
  const int pidfd = peer.pidfd;
  auto refuse = [&](absl::Status s) {
    if (pidfd >= 0) close(pidfd);
    LAZ_LOG_WARNING << "refused session registration from pid " << peer.pid << ": " << s.message();
    return s;
  };
  if (absl::Status s = ValidateSessionRecord(record); !s.ok()) return refuse(s);
  // The owner is the caller: the pidfd the kernel gave us for the caller
  // must name the pid the record claims, and that process must be alive.
  const int pidfd_pid = pidfd >= 0 ? PidOfPidfd(pidfd) : 0;
  if (pidfd_pid <= 0 || pidfd_pid != peer.pid || record.pid() != peer.pid) {
    return refuse(absl::PermissionDeniedError(
        absl::StrCat("a session is registered by its own worker process: the record names pid ",
                     record.pid(), " but the caller is pid ", peer.pid)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return refuse(absl::UnavailableError("the supervisor is shutting down"));
  if (sessions_.count(record.id()) != 0) {
    return refuse(
        absl::AlreadyExistsError(absl::StrCat("session ", record.id(), " is already registered")));
  }
  Entry& e = sessions_[record.id()];
  e.info = InfoFor(record);
  e.pidfd = pidfd;
  Publish(v1::SESSION_EVENT_STARTED, e.info);
  LAZ_LOG_INFO << "session " << record.id() << " (profile " << record.profile()
               << ") registered by pid " << record.pid();
  Wake();
  return e.info;
}

absl::StatusOr<SessionRegistry::Entry*> SessionRegistry::OwnedBy(const std::string& id,
                                                                 const PeerProcess& peer) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no registered session '", id.substr(0, 64), "'"));
  }
  Entry& e = it->second;
  if (e.pidfd < 0 || Exited(e.pidfd) || peer.pid != e.info.record().pid()) {
    return absl::PermissionDeniedError(
        absl::StrCat("only the process that registered session ", id, " may do this"));
  }
  return &e;
}

absl::Status SessionRegistry::Attach(const std::string& id, const PeerProcess& peer) {
  std::string socket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LAZ_ASSIGN_OR_RETURN(Entry * e, OwnedBy(id, peer));
    if (e->hold != nullptr) return absl::OkStatus();
    socket = e->info.router_socket();
  }
  // Without the lock: the router may take a moment to answer.
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<RouterHold> hold,
                       RouterHold::Open(socket, "supervisor", std::chrono::seconds(5)));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.info.state() == v1::SESSION_STATE_REAPING) {
    return absl::FailedPreconditionError(absl::StrCat("session ", id, " ended meanwhile"));
  }
  it->second.hold = std::move(hold);
  it->second.info.set_state(v1::SESSION_STATE_ATTACHED);
  LAZ_LOG_INFO << "session " << id << ": holding its router";
  return absl::OkStatus();
}

absl::Status SessionRegistry::Unregister(const std::string& id, const PeerProcess& peer) {
  std::unique_ptr<RouterHold> hold;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LAZ_ASSIGN_OR_RETURN(Entry * e, OwnedBy(id, peer));
    hold = std::move(e->hold);
    close(e->pidfd);
    Publish(v1::SESSION_EVENT_ENDED, e->info);
    sessions_.erase(id);
    LAZ_LOG_INFO << "session " << id << " ended by its owner";
    Wake();
  }
  return absl::OkStatus();  // the hold ends here, outside the lock
}

absl::StatusOr<int> SessionRegistry::Stop(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no registered session '", id.substr(0, 64), "'"));
  }
  const Entry& e = it->second;
  if (e.pidfd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", id, "'s owner is gone; it is being reaped"));
  }
  if (syscall(SYS_pidfd_send_signal, e.pidfd, SIGTERM, nullptr, 0) != 0) {
    return ErrnoStatus(absl::StrCat("signalling the owner of session ", id), errno);
  }
  LAZ_LOG_INFO << "session " << id << ": asked its owner (pid " << e.info.record().pid()
               << ") to stop";
  return e.info.record().pid();
}

absl::StatusOr<v1::SessionInfo> SessionRegistry::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no registered session '", id.substr(0, 64), "'"));
  }
  return it->second.info;
}

std::vector<v1::SessionInfo> SessionRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::SessionInfo> out;
  for (const auto& [id, e] : sessions_) out.push_back(e.info);
  return out;
}

std::vector<std::pair<std::string, int>> SessionRegistry::WatchedPidfds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [id, e] : sessions_) {
    if (e.pidfd >= 0) out.emplace_back(id, e.pidfd);
  }
  return out;
}

bool SessionRegistry::BeginReap(const std::string& id) {
  std::unique_ptr<RouterHold> hold;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.pidfd < 0) return false;
    close(it->second.pidfd);
    it->second.pidfd = -1;
    it->second.info.set_state(v1::SESSION_STATE_REAPING);
    hold = std::move(it->second.hold);
  }
  return true;
}

void SessionRegistry::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (it->second.pidfd >= 0) close(it->second.pidfd);
  Publish(v1::SESSION_EVENT_ENDED, it->second.info);
  sessions_.erase(it);
}

int SessionRegistry::StopAll() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;  // no new registrations
  int n = 0;
  for (const auto& [id, e] : sessions_) {
    if (e.pidfd >= 0 && syscall(SYS_pidfd_send_signal, e.pidfd, SIGTERM, nullptr, 0) == 0) ++n;
  }
  return n;
}

bool SessionRegistry::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.empty();
}

void SessionRegistry::ShutdownWatchers() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  events_cv_.notify_all();
}

}  // namespace lazaret::supervisor
