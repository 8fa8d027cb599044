#include "services/supervisor/service_table.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"

namespace lazaret::supervisor {
namespace {

namespace pb = ::lazaret::supervisor::v1;

constexpr auto kHealthInterval = std::chrono::seconds(2);
constexpr int kHealthTimeoutMs = 500;
constexpr int kUnhealthyStrikes = 3;
constexpr auto kStopGrace = std::chrono::seconds(5);

void RemoveStaleSocket(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
}

}  // namespace

std::string DescribeExit(int wstatus) {
  if (WIFEXITED(wstatus)) return absl::StrCat("exited with status ", WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) return absl::StrCat("killed by ", strsignal(WTERMSIG(wstatus)));
  return "stopped";
}

ServiceTable::ServiceTable(const std::string& runtime_dir, std::vector<ManagedService> services,
                           std::vector<std::string> env)
    : env_storage_(std::move(env)) {
  for (auto& e : env_storage_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : services) {
    Child c;
    c.socket = SocketPath(runtime_dir, s.name);
    c.argv_storage = s.launcher;
    c.argv_storage.push_back(s.binary);
    c.argv_storage.push_back(absl::StrCat("--runtime-dir=", runtime_dir));
    c.spec = std::move(s);
    children_.push_back(std::move(c));
  }
  for (auto& c : children_) {
    for (auto& a : c.argv_storage) c.argv.push_back(a.data());
    c.argv.push_back(nullptr);
  }
}

void ServiceTable::StartAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Child& c : children_) StartLocked(c);
}

void ServiceTable::Status(pb::GetStatusResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
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
}

void ServiceTable::StopAll(int signal_fd) {
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

bool ServiceTable::AnyRunningLocked() const {
  for (const Child& c : children_) {
    if (c.pid > 0) return true;
  }
  return false;
}

void ServiceTable::StartLocked(Child& c) {
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

std::vector<OtherExit> ServiceTable::Reap() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReapLocked();
}

std::vector<OtherExit> ServiceTable::ReapLocked() {
  std::vector<OtherExit> others;
  int wstatus = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
    bool ours = false;
    for (Child& c : children_) {
      if (c.pid != pid) continue;
      ours = true;
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
      LAZ_LOG_WARNING << c.spec.name << " (pid " << pid << ") " << c.last_exit << "; restarting in "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
                      << " ms";
      break;
    }
    if (!ours) others.push_back({pid, wstatus});
  }
  return others;
}

void ServiceTable::Tick() {
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

}  // namespace lazaret::supervisor
