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

extern char** environ;

namespace lazaret::supervisor {
namespace {

namespace pb = ::lazaret::supervisor::v1;
using Clock = std::chrono::steady_clock;

constexpr auto kHealthInterval = std::chrono::seconds(2);
constexpr int kHealthTimeoutMs = 500;
constexpr int kUnhealthyStrikes = 3;
constexpr auto kStopGrace = std::chrono::seconds(5);

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
  Supervisor(std::string runtime_dir, std::vector<ManagedService> services, int wake_fd)
      : runtime_dir_(std::move(runtime_dir)), wake_fd_(wake_fd) {
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

  // The supervision loop. Returns when asked to stop.
  void Loop(int signal_fd) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Child& c : children_) StartLocked(c);
    }
    pollfd fds[2] = {{signal_fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    while (true) {
      if (poll(fds, 2, 200) < 0 && errno != EINTR) {
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
      Reap();
      Tick();
    }
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

  static void RemoveStaleSocket(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
  }

  void StartLocked(Child& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    char** argv = c.argv.data();
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
      execve(argv[0], argv, environ);
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
  std::mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Holds the supervisor lock for the process lifetime: a second `lazaret up`
// (or a second supervisor) finds it taken and leaves the running set alone.
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
    return std::unique_ptr<LockFile>(new LockFile(fd, path));
  }
  ~LockFile() {
    unlink(path_.c_str());
    close(fd_);
  }

 private:
  LockFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

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
                       LockFile::Acquire(absl::StrCat(runtime_dir, "/", kLockFile)));
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener,
                       UnixListener::Bind(SocketPath(runtime_dir, kSocketName)));

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

  Supervisor supervisor(runtime_dir, std::move(services), wake);
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<GrpcUnixServer> server,
                       GrpcUnixServer::Start(std::move(listener), {&supervisor},
                                             PeerPolicy{.allowed_uid = geteuid()}));
  LAZ_LOG_INFO << "supervising " << runtime_dir;
  supervisor.Loop(sfd);
  supervisor.StopAll(sfd);
  server->Shutdown();
  close(sfd);
  close(wake);
  LAZ_LOG_INFO << "all services stopped";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
