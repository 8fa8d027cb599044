#include "services/supervisor/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/log.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

extern char** environ;

namespace lazaret::supervisor {
namespace {

using ::lazaret::cli::ChildGroup;
using ::lazaret::cli::ChildSpec;
using ::lazaret::cli::ChildStdio;
using ::lazaret::cli::PreparedChild;
using ::lazaret::cli::Spawn;

constexpr std::string_view kStartRecord = "start\n";
constexpr std::string_view kTerminateRecord = "term \n";
constexpr std::string_view kKillRecord = "kill \n";

constexpr std::string_view kStartedKind = "started";
constexpr std::string_view kExitedKind = "exited ";
constexpr std::string_view kFailedKind = "failed ";

// waitid's P_PIDFD (linux/wait.h), which glibc's idtype_t may lack.
constexpr int kPidfdIdType = 3;

// True when all `n` bytes were read; false at EOF or on an error.
bool ReadExactly(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

bool WriteAll(int fd, std::string_view s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Waits until `pidfd` is readable (the process ended) or `timeout` passed.
bool WaitReadable(int pidfd, std::chrono::milliseconds timeout) {
  pollfd p{pidfd, POLLIN, 0};
  int r;
  while ((r = poll(&p, 1, static_cast<int>(timeout.count()))) < 0 && errno == EINTR) {
  }
  return r > 0;
}

// sessiond, which is running as the unreaped child `pid` (so the pid
// cannot have been reused): SIGTERM, the grace period, then SIGKILL; reaped.
void StopSessiond(pid_t pid, int pidfd) {
  kill(pid, SIGTERM);
  if (!WaitReadable(pidfd, kLauncherStopGrace)) {
    LAZ_LOG_WARNING << "lazaret-sessiond (pid " << pid << ") did not end within "
                    << kLauncherStopGrace.count() << " s of SIGTERM; killing it";
    kill(pid, SIGKILL);
  }
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  close(pidfd);
}

}  // namespace

std::string EncodeLauncherRequest(LauncherRequest request) {
  switch (request) {
    case LauncherRequest::kStart:
      return std::string(kStartRecord);
    case LauncherRequest::kTerminate:
      return std::string(kTerminateRecord);
    case LauncherRequest::kKill:
      return std::string(kKillRecord);
  }
  return std::string(kKillRecord);
}

std::optional<LauncherRequest> ParseLauncherRequest(std::string_view bytes) {
  if (bytes == kStartRecord) return LauncherRequest::kStart;
  if (bytes == kTerminateRecord) return LauncherRequest::kTerminate;
  if (bytes == kKillRecord) return LauncherRequest::kKill;
  return std::nullopt;
}

std::string EncodeLauncherReport(const LauncherReport& report) {
  std::string_view kind = kFailedKind;
  int value = 0;
  if (report.kind == LauncherReport::Kind::kStarted) {
    kind = kStartedKind;
    value = report.value;
  } else if (report.kind == LauncherReport::Kind::kExited) {
    kind = kExitedKind;
    value = report.value;
  }
  return absl::StrFormat("%s %010d\n", kind, value < 0 ? 0 : value);
}

std::optional<LauncherReport> ParseLauncherReport(std::string_view bytes) {
  if (bytes.size() != kLauncherReportSize || bytes[7] != ' ' || bytes.back() != '\n') {
    return std::nullopt;
  }
  const std::string_view kind = bytes.substr(0, 7);
  long long value = 0;
  for (char c : bytes.substr(8, 10)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > INT_MAX) return std::nullopt;
  LauncherReport r;
  r.value = static_cast<int>(value);
  if (kind == kStartedKind) {
    if (r.value <= 0) return std::nullopt;
    r.kind = LauncherReport::Kind::kStarted;
  } else if (kind == kExitedKind) {
    // A wait status has 16 bits.
    if (r.value > 0xffff) return std::nullopt;
    r.kind = LauncherReport::Kind::kExited;
  } else if (kind == kFailedKind) {
    if (r.value != 0) return std::nullopt;
    r.kind = LauncherReport::Kind::kFailed;
  } else {
    return std::nullopt;
  }
  return r;
}

// ---- LauncherClient ----

LauncherClient::~LauncherClient() {
  if (request_fd_ >= 0) close(request_fd_);
  if (report_fd_ >= 0) close(report_fd_);
  if (pidfd_ >= 0) close(pidfd_);
}

bool LauncherClient::Send(LauncherRequest request) {
  return request_fd_ >= 0 && WriteAll(request_fd_, EncodeLauncherRequest(request));
}

std::optional<LauncherReport> LauncherClient::Read() {
  char buf[kLauncherReportSize];
  if (report_fd_ < 0 || !ReadExactly(report_fd_, buf, sizeof(buf))) return std::nullopt;
  return ParseLauncherReport(std::string_view(buf, sizeof(buf)));
}

void LauncherClient::Finish(std::chrono::milliseconds timeout) {
  if (request_fd_ >= 0) close(request_fd_);
  request_fd_ = -1;
  if (pidfd_ < 0) return;
  // The launcher may already have been reaped by the supervision loop; the
  // pidfd still names it, so nothing else is ever signalled or waited for.
  if (!WaitReadable(pidfd_, timeout)) {
    LAZ_LOG_WARNING << "the launcher (pid " << pid_ << ") did not exit in time; killing it";
    syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
  }
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(kPidfdIdType), pidfd_, &info, WEXITED) < 0 &&
         errno == EINTR) {
  }
  close(pidfd_);
  pidfd_ = -1;
}

absl::StatusOr<std::unique_ptr<LauncherClient>> StartLauncher(
    const std::string& self_exe, const std::string& runtime_dir, const std::string& libexec_dir,
    const std::vector<std::string>& env) {
  int req[2], rep[2];
  if (pipe2(req, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  if (pipe2(rep, O_CLOEXEC) != 0) {
    const int e = errno;
    close(req[0]);
    close(req[1]);
    return ErrnoStatus("pipe", e);
  }
  ChildSpec spec;
  spec.program = self_exe;
  spec.argv = {self_exe, "--launcher", absl::StrCat("--runtime-dir=", runtime_dir),
               absl::StrCat("--libexec-dir=", libexec_dir)};
  spec.env = env;
  spec.stdin_fd = ChildStdio::Fd(req[0]);
  spec.stdout_fd = ChildStdio::Fd(rep[1]);
  spec.die_with_parent = true;
  spec.death_signal = SIGTERM;
  absl::StatusOr<pid_t> pid = [&]() -> absl::StatusOr<pid_t> {
    LAZ_ASSIGN_OR_RETURN(PreparedChild child, PreparedChild::Create(std::move(spec)));
    return Spawn(child);
  }();
  close(req[0]);
  close(rep[1]);
  if (!pid.ok()) {
    close(req[1]);
    close(rep[0]);
    return pid.status();
  }
  // Not reaped yet, so the pid is the launcher's.
  const int pidfd = PidfdOpen(*pid);
  if (pidfd < 0) {
    const int e = errno;
    kill(*pid, SIGKILL);
    waitpid(*pid, nullptr, 0);
    close(req[1]);
    close(rep[0]);
    return ErrnoStatus("pidfd_open of the launcher", e);
  }
  return std::make_unique<LauncherClient>(*pid, pidfd, req[1], rep[0]);
}

// ---- The launcher process ----

absl::Status RunLauncher(const LauncherOptions& options) {
  if (options.libexec_dir.empty() || options.libexec_dir[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "--libexec-dir='", options.libexec_dir, "' is not an absolute directory"));
  }
  const std::string sessiond = absl::StrCat(options.libexec_dir, "/", kSessiondService.binary);
  if (access(sessiond.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        sessiond, " is missing or not executable; build or install Lazaret completely"));
  }
  // sessiond's whole command, built once, before any fork.
  ChildSpec spec;
  spec.program = sessiond;
  spec.argv = {sessiond, absl::StrCat("--runtime-dir=", options.runtime_dir),
               absl::StrCat("--libexec-dir=", options.libexec_dir)};
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  spec.env = std::move(env);
  spec.stdin_fd = ChildStdio::DevNull();
  // Never fd 1, the report pipe: sessiond writes to the supervisor's log.
  spec.stdout_fd = ChildStdio::Fd(2);
  // Its own group: a Ctrl-C meant for `lazaret up --foreground` reaches the
  // supervisor, which ends the sessions first and sessiond after them.
  spec.group = ChildGroup::kOwnGroup;
  spec.die_with_parent = true;
  spec.death_signal = SIGTERM;
  LAZ_ASSIGN_OR_RETURN(PreparedChild child, PreparedChild::Create(std::move(spec)));
  LAZ_LOG_INFO << "launcher ready (uid " << geteuid() << "); starts " << sessiond;

  pid_t pid = -1;
  int pidfd = -1;
  while (true) {
    pollfd fds[2] = {{0, POLLIN, 0}, {pidfd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      if (pid > 0) StopSessiond(pid, pidfd);
      return ErrnoStatus("poll", e);
    }
    // Exits first: the supervisor starts sessiond again only once it has
    // read that it exited, and then it must find it reaped here.
    if (pid > 0 && fds[1].revents != 0) {
      int wstatus = 0;
      while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      close(pidfd);
      pid = -1;
      pidfd = -1;
      if (!WriteAll(1, EncodeLauncherReport({LauncherReport::Kind::kExited, wstatus}))) break;
    }
    if (fds[0].revents == 0) continue;
    char buf[kLauncherRequestSize];
    if (!ReadExactly(0, buf, sizeof(buf))) break;  // EOF: the supervisor is done
    const std::optional<LauncherRequest> request =
        ParseLauncherRequest(std::string_view(buf, sizeof(buf)));
    if (!request.has_value() || (*request == LauncherRequest::kStart && pid > 0)) {
      if (pid > 0) StopSessiond(pid, pidfd);
      return absl::InvalidArgumentError(
          request.has_value() ? "asked to start lazaret-sessiond while it runs; the launcher stops"
                              : "malformed launcher request; the launcher stops");
    }
    switch (*request) {
      case LauncherRequest::kStart: {
        absl::StatusOr<pid_t> started = Spawn(child);
        LauncherReport report;
        if (started.ok() && (pidfd = PidfdOpen(*started)) >= 0) {
          pid = *started;
          report = {LauncherReport::Kind::kStarted, pid};
        } else if (started.ok()) {
          // Without a pidfd its exit could not be noticed: do not keep it.
          LAZ_LOG_ERROR << "pidfd_open of lazaret-sessiond: " << std::strerror(errno);
          kill(*started, SIGKILL);
          waitpid(*started, nullptr, 0);
        } else {
          LAZ_LOG_ERROR << started.status().message();
        }
        if (!WriteAll(1, EncodeLauncherReport(report))) {
          if (pid > 0) StopSessiond(pid, pidfd);
          return absl::OkStatus();
        }
        break;
      }
      case LauncherRequest::kTerminate:
      case LauncherRequest::kKill:
        // Not reaped yet, so `pid` is still sessiond. None running: it
        // exited after the supervisor asked; its exit report is on its way.
        if (pid > 0) kill(pid, *request == LauncherRequest::kKill ? SIGKILL : SIGTERM);
        break;
    }
  }
  if (pid > 0) StopSessiond(pid, pidfd);
  LAZ_LOG_INFO << "launcher done";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
