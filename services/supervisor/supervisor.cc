#include "services/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <sys/syscall.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "helper/mount/mounthelper.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/brokerd/brokerd.h"
#include "services/common/capabilities.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/configd/configd.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/supervisor/backoff.h"
#include "services/common/service_environment.h"
#include "services/supervisor/reaper.h"
#include "services/supervisor/registry.h"
#include "services/common/constants.h"

extern char** environ;

namespace lazaret::supervisor {
namespace {

namespace pb = ::lazaret::supervisor::v1;
using Clock = std::chrono::steady_clock;

constexpr auto kHealthInterval = std::chrono::seconds(2);
constexpr int kHealthTimeoutMs = 500;
constexpr int kUnhealthyStrikes = 3;
constexpr auto kStopGrace = std::chrono::seconds(5);
// How long `lazaret down` lets live sessions end themselves (teardown and
// Git Shadow write-back in their own `lazaret run`).
constexpr auto kSessionStopGrace = std::chrono::seconds(30);
// How long the reaper may take to finish what it was given at shutdown.
constexpr auto kReaperDrainTimeout = std::chrono::seconds(60);

template <size_t N>
std::vector<std::string> CapNames(const std::array<cap_value_t, N>& caps) {
  return caps::Names(absl::MakeConstSpan(caps.data(), caps.size()));
}

// Runtime state of one managed service. Owned by the supervisor loop thread;
// read by GetStatus under Supervisor::mu_.
struct Child {
  ManagedService spec;
  std::string socket;
  // argv/envp are built once, before any fork, so that nothing between fork
  // and execve allocates.
  std::vector<std::string> argv_storage;
  std::vector<char*> argv;
  pid_t pid = -1;
  pb::ServiceState state = pb::SERVICE_STATE_STOPPED;
  uint32_t restarts = 0;
  int strikes = 0;
  Clock::time_point started{};
  Clock::time_point next_health{};
  Clock::time_point next_start{};
  Backoff backoff;
  std::string last_exit;
};

std::string DescribeExit(int wstatus) {
  if (WIFEXITED(wstatus)) return absl::StrCat("exited with status ", WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) return absl::StrCat("killed by ", strsignal(WTERMSIG(wstatus)));
  return "stopped";
}

class Supervisor final : public pb::SupervisorService::Service {
 public:
  Supervisor(std::string runtime_dir, std::vector<ManagedService> services, int wake_fd,
             SessionRegistry* registry, int registry_wake_fd, ReaperProcess reaper,
             std::vector<std::string> env)
      : runtime_dir_(std::move(runtime_dir)),
        wake_fd_(wake_fd),
        registry_(registry),
        registry_wake_fd_(registry_wake_fd),
        reaper_(reaper),
        env_storage_(std::move(env)) {
    for (auto& e : env_storage_) envp_.push_back(e.data());
    envp_.push_back(nullptr);
    for (auto& s : services) {
      Child c;
      c.socket = SocketPath(runtime_dir_, s.name);
      c.argv_storage = {s.binary, absl::StrCat("--runtime-dir=", runtime_dir_)};
      c.spec = std::move(s);
      children_.push_back(std::move(c));
    }
    for (auto& c : children_) {
      for (auto& a : c.argv_storage) c.argv.push_back(a.data());
      c.argv.push_back(nullptr);
    }
  }

  grpc::Status GetStatus(grpc::ServerContext*, const pb::GetStatusRequest*,
                         pb::GetStatusResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    resp->set_supervisor_pid(getpid());
    resp->set_runtime_dir(runtime_dir_);
    bool all = true;
    const auto now = Clock::now();
    for (const Child& c : children_) {
      pb::ServiceStatus* s = resp->add_services();
      s->set_name(c.spec.name);
      s->set_socket(c.socket);
      s->set_pid(c.pid);
      s->set_state(c.state);
      s->set_restarts(c.restarts);
      for (const auto& cap : c.spec.capabilities) s->add_capabilities(cap);
      if (c.pid > 0) {
        s->set_uptime_seconds(
            std::chrono::duration_cast<std::chrono::seconds>(now - c.started).count());
      }
      s->set_last_exit(c.last_exit);
      all = all && c.state == pb::SERVICE_STATE_HEALTHY;
    }
    resp->set_all_healthy(all);
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext*, const pb::ShutdownRequest*,
                        pb::ShutdownResponse*) override {
    LAZ_LOG_INFO << "shutdown requested over the API";
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    return grpc::Status::OK;
  }

  // ---- The session registry (registry.h) ----

  grpc::Status RegisterSession(grpc::ServerContext* ctx, const pb::RegisterSessionRequest* req,
                               pb::RegisterSessionResponse* resp) override {
    absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
    if (!peer.ok()) return ToGrpcStatus(peer.status());
    absl::StatusOr<pb::SessionInfo> info = registry_->Register(req->record(), *peer);
    if (!info.ok()) return ToGrpcStatus(info.status());
    *resp->mutable_session() = *std::move(info);
    return grpc::Status::OK;
  }

  grpc::Status AttachSessionRouter(grpc::ServerContext* ctx,
                                   const pb::AttachSessionRouterRequest* req,
                                   pb::AttachSessionRouterResponse*) override {
    absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
    if (!peer.ok()) return ToGrpcStatus(peer.status());
    close(peer->pidfd);
    return ToGrpcStatus(registry_->Attach(req->id(), *peer));
  }

  grpc::Status UnregisterSession(grpc::ServerContext* ctx, const pb::UnregisterSessionRequest* req,
                                 pb::UnregisterSessionResponse*) override {
    absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
    if (!peer.ok()) return ToGrpcStatus(peer.status());
    close(peer->pidfd);
    return ToGrpcStatus(registry_->Unregister(req->id(), *peer));
  }

  grpc::Status StopSession(grpc::ServerContext*, const pb::StopSessionRequest* req,
                           pb::StopSessionResponse* resp) override {
    absl::StatusOr<int> pid = registry_->Stop(req->id());
    if (!pid.ok()) return ToGrpcStatus(pid.status());
    resp->set_pid(*pid);
    return grpc::Status::OK;
  }

  grpc::Status GetSession(grpc::ServerContext*, const pb::GetSessionRequest* req,
                          pb::SessionInfo* resp) override {
    absl::StatusOr<pb::SessionInfo> info = registry_->Get(req->id());
    if (!info.ok()) return ToGrpcStatus(info.status());
    *resp = *std::move(info);
    return grpc::Status::OK;
  }

  grpc::Status ListSessions(grpc::ServerContext*, const pb::ListSessionsRequest*,
                            pb::ListSessionsResponse* resp) override {
    for (auto& s : registry_->List()) *resp->add_sessions() = std::move(s);
    return grpc::Status::OK;
  }

  grpc::Status WatchSessions(grpc::ServerContext* ctx, const pb::WatchSessionsRequest*,
                             grpc::ServerWriter<pb::SessionEvent>* writer) override {
    const bool ok = registry_->Watch([&](const pb::SessionEvent& e) { return writer->Write(e); },
                                     [&] { return ctx->IsCancelled(); });
    if (!ok) {
      return grpc::Status(grpc::StatusCode::ABORTED,
                          "the watcher fell behind or went away; watch again");
    }
    return grpc::Status::OK;
  }

  // Every session directory left in the runtime directory by a `lazaret
  // run` that died while no supervisor ran: the reaper removes each whose
  // owner is gone (`lazaret clean --session` refuses a live one).
  void ReapLeftoverSessions() {
    const std::string dir = absl::StrCat(runtime_dir_, "/sessions");
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return;
    std::vector<std::string> ids;
    while (dirent* e = readdir(d)) {
      if (IsValidSessionId(e->d_name)) ids.emplace_back(e->d_name);
    }
    closedir(d);
    for (const auto& id : ids) {
      LAZ_LOG_INFO << "session " << id << " was left by an earlier run; reaping it if its owner "
                   << "is gone";
      SendToReaper(id);
    }
  }

  // The supervision loop. Returns when asked to stop.
  void Loop(int signal_fd) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Child& c : children_) StartLocked(c);
    }
    ReapLeftoverSessions();
    std::vector<pollfd> fds;
    std::vector<std::string> ids;
    while (true) {
      // Fixed slots first, then one pidfd per watched session owner.
      fds = {{signal_fd, POLLIN, 0},
             {wake_fd_, POLLIN, 0},
             {registry_wake_fd_, POLLIN, 0},
             {reaper_.result_fd, POLLIN, 0}};
      ids.clear();
      for (const auto& [id, pidfd] : registry_->WatchedPidfds()) {
        fds.push_back({pidfd, POLLIN, 0});
        ids.push_back(id);
      }
      if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) {
        LAZ_LOG_ERROR << "poll: " << std::strerror(errno);
        return;
      }
      if (fds[1].revents != 0) return;
      if (fds[0].revents != 0) {
        signalfd_siginfo si{};
        if (read(signal_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD) {
          LAZ_LOG_INFO << "received " << strsignal(si.ssi_signo) << ", shutting down";
          return;
        }
      }
      if (fds[2].revents != 0) {
        uint64_t n;
        (void)!read(registry_wake_fd_, &n, sizeof(n));
      }
      for (size_t i = 4; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        // The owner is gone, however it ended: reap now.
        if (registry_->BeginReap(ids[i - 4])) {
          LAZ_LOG_WARNING << "session " << ids[i - 4]
                          << ": its lazaret run is gone; reaping the session";
          SendToReaper(ids[i - 4]);
        }
      }
      if (fds[3].revents != 0 && !ReadReaperResult()) {
        LAZ_LOG_ERROR << "the reaper is gone; without it no session can be reaped, so the "
                         "supervisor stops (live sessions end themselves)";
        return;
      }
      Reap();
      if (reaper_lost_) {
        LAZ_LOG_ERROR << "the reaper exited; the supervisor stops (live sessions end themselves)";
        return;
      }
      Tick();
    }
  }

  // Before the services stop: every live session's owner is asked to end
  // its session (its own teardown and write-back); an owner that died
  // without unregistering is reaped; then the reaper finishes what it has.
  void StopSessions() {
    const int asked = registry_->StopAll();
    if (asked > 0) LAZ_LOG_INFO << "asked " << asked << " live session(s) to end";
    const auto deadline = Clock::now() + kSessionStopGrace;
    while (!registry_->empty() && Clock::now() < deadline) {
      std::vector<pollfd> fds = {{reaper_.result_fd, POLLIN, 0}};
      std::vector<std::string> ids;
      for (const auto& [id, pidfd] : registry_->WatchedPidfds()) {
        fds.push_back({pidfd, POLLIN, 0});
        ids.push_back(id);
      }
      poll(fds.data(), fds.size(), 100);
      if (fds[0].revents != 0 && !ReadReaperResult()) break;
      for (size_t i = 1; i < fds.size(); ++i) {
        // Give the owner a moment to unregister after it ended normally.
        if (fds[i].revents != 0 && registry_->BeginReap(ids[i - 1])) SendToReaper(ids[i - 1]);
      }
    }
    registry_->ShutdownWatchers();
    // EOF ends the reaper once it has done every request it was sent.
    if (reaper_.request_fd >= 0) close(reaper_.request_fd);
    reaper_.request_fd = -1;
    const auto drain = Clock::now() + kReaperDrainTimeout;
    while (!reaper_lost_ && Clock::now() < drain) {
      pollfd p{reaper_.result_fd, POLLIN, 0};
      if (poll(&p, 1, 100) > 0 && !ReadReaperResult()) break;
    }
    int status = 0;
    if (!reaper_lost_ && waitpid(reaper_.pid, &status, WNOHANG) == 0) {
      LAZ_LOG_WARNING << "the reaper did not finish in time; killing it";
      kill(reaper_.pid, SIGKILL);
      waitpid(reaper_.pid, &status, 0);
    }
    reaper_lost_ = true;
  }

  // SIGTERM to every service, SIGKILL after the grace period, then make sure
  // no socket is left behind by one that could not clean up.
  void StopAll(int signal_fd) {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (Child& c : children_) {
      if (c.pid > 0) kill(c.pid, SIGTERM);
    }
    const auto deadline = Clock::now() + kStopGrace;
    while (AnyRunningLocked() && Clock::now() < deadline) {
      pollfd p{signal_fd, POLLIN, 0};
      poll(&p, 1, 100);
      signalfd_siginfo si{};
      (void)!read(signal_fd, &si, sizeof(si));
      ReapLocked();
    }
    for (Child& c : children_) {
      if (c.pid > 0) {
        LAZ_LOG_WARNING << c.spec.name << " (pid " << c.pid << ") ignored SIGTERM; killing it";
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        c.pid = -1;
      }
      RemoveStaleSocket(c.socket);
      c.state = pb::SERVICE_STATE_STOPPED;
    }
  }

 private:
  bool AnyRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const Child& c : children_) {
      if (c.pid > 0) return true;
    }
    return false;
  }

  void SendToReaper(const std::string& id) {
    const std::string req = EncodeReapRequest(id);
    if (reaper_.request_fd < 0 ||
        write(reaper_.request_fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      LAZ_LOG_ERROR << "session " << id << ": could not hand it to the reaper: "
                    << std::strerror(errno) << "; run: lazaret clean";
    }
  }

  // One result line from the reaper; false when the reaper is gone.
  bool ReadReaperResult() {
    char buf[kReapResultSize];
    size_t got = 0;
    while (got < sizeof(buf)) {
      const ssize_t n = read(reaper_.result_fd, buf + got, sizeof(buf) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    auto result = ParseReapResult(std::string_view(buf, sizeof(buf)));
    if (!result.has_value()) return false;
    const auto& [id, code] = *result;
    if (code == 0) {
      LAZ_LOG_INFO << "session " << id << " reaped (containers removed, git written back)";
    } else if (code == kCleanOwnerAliveExitCode) {
      LAZ_LOG_INFO << "session " << id << ": its owner is alive; left alone";
    } else {
      LAZ_LOG_ERROR << "session " << id << ": reaping failed (lazaret clean --session exit "
                    << code << "); see above, and run: lazaret clean";
    }
    registry_->Forget(id);
    return true;
  }

  static void RemoveStaleSocket(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
  }

  void StartLocked(Child& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    char** argv = c.argv.data();
    char** envp = envp_.data();
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Child: async-signal-safe calls only, nothing allocates.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGPIPE, SIG_DFL);
      int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (devnull >= 0) dup2(devnull, 0);
      execve(argv[0], argv, envp);
      _exit(127);
    }
    if (pid < 0) {
      c.last_exit = absl::StrCat("fork failed: ", std::strerror(errno));
      c.state = pb::SERVICE_STATE_BACKOFF;
      c.next_start = Clock::now() + c.backoff.Next();
      return;
    }
    c.pid = pid;
    c.state = pb::SERVICE_STATE_STARTING;
    c.strikes = 0;
    c.started = Clock::now();
    c.next_health = c.started;
    LAZ_LOG_INFO << "started " << c.spec.name << " (pid " << pid << ")";
  }

  void Reap() {
    std::lock_guard<std::mutex> lock(mu_);
    ReapLocked();
  }

  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int wstatus = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
      if (pid == reaper_.pid) {
        LAZ_LOG_WARNING << "reaper (pid " << pid << ") " << DescribeExit(wstatus);
        reaper_lost_ = true;
        continue;
      }
      for (Child& c : children_) {
        if (c.pid != pid) continue;
        c.pid = -1;
        c.last_exit = DescribeExit(wstatus);
        if (stopping_) {
          c.state = pb::SERVICE_STATE_STOPPED;
          break;
        }
        // A service that stayed up long enough earns a fresh backoff.
        if (Clock::now() - c.started > kBackoffResetAfter) c.backoff.Reset();
        const auto delay = c.backoff.Next();
        c.state = pb::SERVICE_STATE_BACKOFF;
        c.next_start = Clock::now() + delay;
        LAZ_LOG_WARNING << c.spec.name << " (pid " << pid << ") " << c.last_exit
                        << "; restarting in "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
                        << " ms";
        break;
      }
    }
  }

  // Restarts what is due and health-checks what is running.
  void Tick() {
    std::vector<Child*> to_check;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = Clock::now();
      for (Child& c : children_) {
        if (c.state == pb::SERVICE_STATE_BACKOFF && now >= c.next_start) {
          ++c.restarts;
          StartLocked(c);
        }
        if (c.pid > 0 && now >= c.next_health) {
          c.next_health = now + (c.state == pb::SERVICE_STATE_STARTING
                                     ? std::chrono::milliseconds(100)
                                     : std::chrono::milliseconds(kHealthInterval));
          to_check.push_back(&c);
        }
      }
    }
    // Health RPCs run without the lock so GetStatus never waits on them.
    // Only this thread mutates children_, so the pointers stay valid.
    for (Child* c : to_check) {
      const absl::Status health = CheckHealth(c->socket, kHealthTimeoutMs);
      std::lock_guard<std::mutex> lock(mu_);
      if (c->pid <= 0) continue;
      if (health.ok()) {
        if (c->state != pb::SERVICE_STATE_HEALTHY) {
          LAZ_LOG_INFO << c->spec.name << " is healthy";
        }
        c->state = pb::SERVICE_STATE_HEALTHY;
        c->strikes = 0;
      } else if (c->state != pb::SERVICE_STATE_STARTING ||
                 Clock::now() - c->started > kStartTimeout) {
        ++c->strikes;
        c->state = pb::SERVICE_STATE_UNHEALTHY;
        if (c->strikes >= kUnhealthyStrikes) {
          LAZ_LOG_WARNING << c->spec.name << " failed " << c->strikes << " health checks ("
                          << health.message() << "); killing it";
          kill(c->pid, SIGKILL);
        }
      }
    }
  }

  static constexpr auto kBackoffResetAfter = std::chrono::seconds(60);
  static constexpr auto kStartTimeout = std::chrono::seconds(10);

  const std::string runtime_dir_;
  const int wake_fd_;
  SessionRegistry* const registry_;
  const int registry_wake_fd_;
  ReaperProcess reaper_;  // loop thread only
  bool reaper_lost_ = false;  // loop thread only
  // The services' environment (service_environment.h), built once before any fork.
  std::vector<std::string> env_storage_;
  std::vector<char*> envp_;
  std::mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Holds the supervisor lock for the process lifetime: a second `lazaret up`
// (or a second supervisor) finds it taken and leaves the running set alone.
// The file is never removed: unlinking it would let a second supervisor
// lock a new file at the same path while someone still holds the old one,
// so that two supervisors each believe they own the runtime directory.
// Only the flock says who owns it; the pid written in it is informational.
class LockFile {
 public:
  static absl::StatusOr<std::unique_ptr<LockFile>> Acquire(const std::string& path) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", path), errno);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      char buf[32] = {};
      (void)!pread(fd, buf, sizeof(buf) - 1, 0);
      close(fd);
      if (e == EWOULDBLOCK) {
        return absl::AlreadyExistsError(
            absl::StrCat("Lazaret is already up (supervisor pid ", buf, ")"));
      }
      return ErrnoStatus(absl::StrCat("locking ", path), e);
    }
    std::string pid = absl::StrCat(getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("writing ", path), e);
    }
    return std::unique_ptr<LockFile>(new LockFile(fd));
  }
  ~LockFile() { close(fd_); }

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

absl::StatusOr<std::string> SelfExe() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ErrnoStatus("readlink /proc/self/exe", errno);
  return std::string(self, n);
}

// The `lazaret` CLI the reaper runs: beside the services (a build tree) or
// in the bin directory of the installation prefix.
absl::StatusOr<std::string> FindCli(const std::string& libexec) {
  for (const std::string& c :
       {absl::StrCat(libexec, "/lazaret"), absl::StrCat(libexec, "/../../bin/lazaret")}) {
    char resolved[4096];
    if (realpath(c.c_str(), resolved) != nullptr && access(resolved, X_OK) == 0) {
      return std::string(resolved);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "the lazaret CLI is neither in ", libexec, " nor in ", libexec,
      "/../../bin; the supervisor needs it to reap sessions. Install Lazaret completely"));
}

}  // namespace

std::vector<ManagedService> DefaultServiceSet(const std::string& libexec_dir) {
  auto bin = [&](const char* name) { return absl::StrCat(libexec_dir, "/lazaret-", name); };
  return {
      {"configd", bin("configd"), CapNames(configd::kCapabilities)},
      {"netpolicyd", bin("netpolicyd"), CapNames(netpolicyd::kCapabilities)},
      {"brokerd", bin("brokerd"), CapNames(brokerd::kCapabilities)},
      {"mount-helper", bin("mount-helper"), CapNames(mounthelper::kCapabilities)},
  };
}

absl::Status Run(const Options& options) {
  const std::string runtime_dir =
      options.runtime_dir.empty() ? DefaultRuntimeDir() : options.runtime_dir;
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  std::string libexec = options.libexec_dir;
  if (libexec.empty()) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return ErrnoStatus("readlink /proc/self/exe", errno);
    std::string exe(self, n);
    libexec = exe.substr(0, exe.rfind('/'));
  }
  std::vector<ManagedService> services = DefaultServiceSet(libexec);
  for (const auto& s : services) {
    if (access(s.binary.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("service binary ", s.binary,
                                              " is missing or not executable; build or install "
                                              "Lazaret completely"));
    }
  }

  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<LockFile> lock,
                       LockFile::Acquire(absl::StrCat(runtime_dir, "/", kSupervisorLockFile)));
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener,
                       UnixListener::Bind(SocketPath(runtime_dir, kSupervisorSocketName)));

  // The reaper, forked before the drop so it keeps what `lazaret up` had
  // (reaper.h). Without one, no session could be reaped: refuse to start.
  const std::vector<std::string> env = ServiceEnvironment(environ);
  LAZ_ASSIGN_OR_RETURN(std::string cli, FindCli(libexec));
  LAZ_ASSIGN_OR_RETURN(std::string self, SelfExe());
  LAZ_ASSIGN_OR_RETURN(ReaperProcess reaper, StartReaper(self, cli, runtime_dir, env));
  LAZ_LOG_INFO << "reaper started (pid " << reaper.pid << ", runs " << cli
               << " clean --session ID)";

  caps::Declaration declaration{
      .required = {kCapabilities.begin(), kCapabilities.end()},
      .delegated = {kDelegatedCapabilities.begin(), kDelegatedCapabilities.end()}};
  LAZ_ASSIGN_OR_RETURN(caps::Report report, caps::DropToDeclared(declaration));
  LAZ_LOG_INFO << "capabilities held (delegation only): {"
               << absl::StrJoin(caps::Names(report.held), ",") << "}";

  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return ErrnoStatus("signalfd", errno);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return ErrnoStatus("eventfd", errno);
  int registry_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (registry_wake < 0) return ErrnoStatus("eventfd", errno);

  SessionRegistry registry(runtime_dir, registry_wake);
  Supervisor supervisor(runtime_dir, std::move(services), wake, &registry, registry_wake, reaper,
                        env);
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<GrpcUnixServer> server,
                       GrpcUnixServer::Start(std::move(listener), {&supervisor},
                                             PeerPolicy{.allowed_uid = geteuid()}));
  LAZ_LOG_INFO << "supervising " << runtime_dir;
  supervisor.Loop(sfd);
  supervisor.StopSessions();
  supervisor.StopAll(sfd);
  server->Shutdown();
  close(sfd);
  close(wake);
  close(registry_wake);
  LAZ_LOG_INFO << "all services stopped";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
