#include "services/supervisor/service_table.h"

#include <poll.h>
#include <signal.h>
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
#include "services/common/status_util.h"
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

absl::StatusOr<std::unique_ptr<ServiceTable>> ServiceTable::Create(
    const std::string& runtime_dir, std::vector<ManagedService> services,
    std::vector<std::string> env, LauncherClient* launcher) {
  std::vector<Child> children;
  for (auto& s : services) {
    Child c;
    c.socket = SocketPath(runtime_dir, s.name);
    if (s.via_launcher) {
      if (launcher == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(s.name, " is started by the launcher, but there is none"));
      }
    } else {
      cli::ChildSpec spec;
      spec.argv = s.launcher;
      spec.argv.push_back(s.binary);
      spec.argv.push_back(absl::StrCat("--runtime-dir=", runtime_dir));
      // Absolute: the service binary itself, or podman from a fixed directory.
      spec.program = spec.argv[0];
      spec.env = env;
      spec.stdin_fd = cli::ChildStdio::DevNull();
      spec.die_with_parent = true;
      spec.death_signal = SIGTERM;
      LAZ_ASSIGN_OR_RETURN(cli::PreparedChild command,
                           cli::PreparedChild::Create(std::move(spec)));
      c.command.emplace(std::move(command));
    }
    c.spec = std::move(s);
    children.push_back(std::move(c));
  }
  return std::unique_ptr<ServiceTable>(new ServiceTable(std::move(children), launcher));
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
  for (Child& c : children_) SignalLocked(c, SIGTERM);
  const auto wait_until = [&](Clock::time_point deadline) {
    while (AnyRunningLocked() && Clock::now() < deadline) {
      pollfd p[2] = {{signal_fd, POLLIN, 0},
                     {launcher_ != nullptr ? launcher_->report_fd() : -1, POLLIN, 0}};
      poll(p, 2, 100);
      signalfd_siginfo si{};
      (void)!read(signal_fd, &si, sizeof(si));
      if (p[1].revents != 0 && !ReadLauncherReportLocked()) continue;
      ReapLocked();
    }
  };
  wait_until(Clock::now() + kStopGrace);
  for (Child& c : children_) {
    if (c.pid > 0 || c.start_pending) {
      LAZ_LOG_WARNING << c.spec.name << " (pid " << c.pid << ") ignored SIGTERM; killing it";
      SignalLocked(c, SIGKILL);
    }
  }
  // A killed child of ours is reaped at once; one of the launcher's is
  // reported by it.
  wait_until(Clock::now() + std::chrono::seconds(2));
  for (Child& c : children_) {
    if (c.pid > 0 && c.command.has_value()) waitpid(c.pid, nullptr, 0);
    c.pid = -1;
    c.start_pending = false;
    RemoveStaleSocket(c.socket);
    c.state = pb::SERVICE_STATE_STOPPED;
  }
}

bool ServiceTable::AnyRunningLocked() const {
  for (const Child& c : children_) {
    if (c.pid > 0 || c.start_pending) return true;
  }
  return false;
}

ServiceTable::Child* ServiceTable::LaunchedLocked() {
  for (Child& c : children_) {
    if (!c.command.has_value()) return &c;
  }
  return nullptr;
}

void ServiceTable::StartLocked(Child& c) {
  if (!c.command.has_value()) {
    // The launcher forks it and reports its pid (ReadLauncherReport).
    if (!launcher_->Send(LauncherRequest::kStart)) {
      ExitedLocked(c, "could not be started: the launcher is gone");
      return;
    }
    c.start_pending = true;
    c.state = pb::SERVICE_STATE_STARTING;
    c.strikes = 0;
    c.started = Clock::now();
    c.next_health = c.started;
    return;
  }
  absl::StatusOr<pid_t> pid = cli::Spawn(*c.command);
  if (!pid.ok()) {
    LAZ_LOG_ERROR << c.spec.name << ": " << pid.status().message();
    ExitedLocked(c, absl::StrCat("could not be started: ", pid.status().message()));
    return;
  }
  c.pid = *pid;
  c.state = pb::SERVICE_STATE_STARTING;
  c.strikes = 0;
  c.started = Clock::now();
  c.next_health = c.started;
  LAZ_LOG_INFO << "started " << c.spec.name << " (pid " << c.pid << ")";
}

void ServiceTable::SignalLocked(Child& c, int sig) {
  if (!c.command.has_value()) {
    // Not reaped by the launcher before it reads this, so never another
    // process; one that ended meanwhile is reported as exited.
    if (c.pid > 0 || c.start_pending) {
      launcher_->Send(sig == SIGKILL ? LauncherRequest::kKill : LauncherRequest::kTerminate);
    }
    return;
  }
  if (c.pid > 0) kill(c.pid, sig);
}

void ServiceTable::ExitedLocked(Child& c, const std::string& why) {
  const std::string who =
      c.pid > 0 ? absl::StrCat(c.spec.name, " (pid ", c.pid, ")") : c.spec.name;
  c.pid = -1;
  c.start_pending = false;
  c.last_exit = why;
  if (stopping_) {
    c.state = pb::SERVICE_STATE_STOPPED;
    return;
  }
  // A service that stayed up long enough earns a fresh backoff.
  if (Clock::now() - c.started > kBackoffResetAfter) c.backoff.Reset();
  const auto delay = c.backoff.Next();
  c.state = pb::SERVICE_STATE_BACKOFF;
  c.next_start = Clock::now() + delay;
  LAZ_LOG_WARNING << who << " " << why << "; restarting in "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
                  << " ms";
}

bool ServiceTable::ReadLauncherReport() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReadLauncherReportLocked();
}

bool ServiceTable::ReadLauncherReportLocked() {
  Child* c = LaunchedLocked();
  const std::optional<LauncherReport> report =
      launcher_ != nullptr ? launcher_->Read() : std::nullopt;
  if (!report.has_value()) {
    // sessiond dies with the launcher (its death signal).
    if (c != nullptr && (c->pid > 0 || c->start_pending)) {
      c->pid = -1;
      c->start_pending = false;
      c->last_exit = "ended with the launcher";
      c->state = pb::SERVICE_STATE_STOPPED;
    }
    return false;
  }
  if (c == nullptr) return true;
  switch (report->kind) {
    case LauncherReport::Kind::kStarted:
      c->pid = report->value;
      c->start_pending = false;
      LAZ_LOG_INFO << "started " << c->spec.name << " (pid " << c->pid << ", by the launcher)";
      // Asked to stop before its pid was known.
      if (stopping_) SignalLocked(*c, SIGTERM);
      break;
    case LauncherReport::Kind::kExited:
      ExitedLocked(*c, DescribeExit(report->value));
      break;
    case LauncherReport::Kind::kFailed:
      ExitedLocked(*c, "could not be started by the launcher (see its line above)");
      break;
  }
  return true;
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
      if (c.pid != pid || !c.command.has_value()) continue;
      ours = true;
      ExitedLocked(c, DescribeExit(wstatus));
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
        SignalLocked(*c, SIGKILL);
      }
    }
  }
}

}  // namespace lazaret::supervisor
