#include "services/supervisor/reaper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::supervisor {
namespace {

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

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

// Runs argv/envp (built by the caller) with stdin on /dev/null and stdout
// on our stderr (the supervisor's log); returns its exit code, 128+N when
// killed by N, 255 when it could not run or ran out of time.
int RunOne(char* const* argv, char* const* envp) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Async-signal-safe calls only.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(2, 1) < 0) _exit(127);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  if (pid < 0) return 255;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    const int ms = static_cast<int>(std::chrono::milliseconds(kReapTimeout).count());
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR) {
    }
    if (r == 0) {
      LAZ_LOG_ERROR << argv[0] << " clean --session " << argv[3] << " did not finish within "
                    << kReapTimeout.count() << " s; killing it";
      kill(pid, SIGKILL);
    }
    close(pidfd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

std::string EncodeReapRequest(std::string_view id) { return std::string(id) + "\n"; }

std::optional<std::string> ParseReapRequest(std::string_view bytes) {
  if (bytes.size() != kReapRequestSize || bytes.back() != '\n') return std::nullopt;
  const std::string_view id = bytes.substr(0, 12);
  if (!IsValidSessionId(id)) return std::nullopt;
  return std::string(id);
}

std::string EncodeReapResult(std::string_view id, int exit_code) {
  return absl::StrFormat("%s %03d\n", std::string(id), exit_code < 0 || exit_code > 255 ? 255 : exit_code);
}

std::optional<std::pair<std::string, int>> ParseReapResult(std::string_view bytes) {
  if (bytes.size() != kReapResultSize || bytes[12] != ' ' || bytes.back() != '\n') {
    return std::nullopt;
  }
  const std::string_view id = bytes.substr(0, 12);
  if (!IsValidSessionId(id)) return std::nullopt;
  int code = 0;
  for (char c : bytes.substr(13, 3)) {
    if (c < '0' || c > '9') return std::nullopt;
    code = code * 10 + (c - '0');
  }
  return std::make_pair(std::string(id), code);
}

absl::StatusOr<ReaperProcess> StartReaper(const std::string& self_exe, const std::string& cli,
                                          const std::string& runtime_dir,
                                          const std::vector<std::string>& env) {
  int req[2], res[2];
  if (pipe2(req, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  if (pipe2(res, O_CLOEXEC) != 0) {
    const int e = errno;
    close(req[0]);
    close(req[1]);
    return ErrnoStatus("pipe", e);
  }
  // Everything the child needs, built before fork.
  std::vector<std::string> argv_s = {self_exe, "--reaper", absl::StrCat("--runtime-dir=", runtime_dir),
                                     absl::StrCat("--cli=", cli)};
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = env;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // Async-signal-safe calls only. dup2 clears FD_CLOEXEC on 0 and 1;
    // every other descriptor (lock, listener, our pipe ends) is CLOEXEC.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (dup2(req[0], 0) < 0 || dup2(res[1], 1) < 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(req[0]);
  close(res[1]);
  if (pid < 0) {
    close(req[1]);
    close(res[0]);
    return ErrnoStatus("fork of the reaper", fork_errno);
  }
  return ReaperProcess{.pid = pid, .request_fd = req[1], .result_fd = res[0]};
}

absl::Status RunReaper(const ReaperOptions& options) {
  if (options.cli.empty() || options.cli[0] != '/' || access(options.cli.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the lazaret CLI '", options.cli, "' is not an executable absolute path"));
  }
  std::vector<std::string> env_s;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LAZARET_RUNTIME_DIR=", 20) != 0) env_s.emplace_back(*e);
  }
  env_s.push_back(absl::StrCat("LAZARET_RUNTIME_DIR=", options.runtime_dir));
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  LAZ_LOG_INFO << "reaper ready (uid " << geteuid() << ")";
  char buf[kReapRequestSize];
  while (ReadExactly(0, buf, sizeof(buf))) {
    std::optional<std::string> id = ParseReapRequest(std::string_view(buf, sizeof(buf)));
    if (!id.has_value()) {
      return absl::InvalidArgumentError("malformed reap request; the reaper stops");
    }
    std::string a0 = options.cli, a1 = "clean", a2 = "--session", a3 = *id;
    char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), nullptr};
    const int code = RunOne(argv, envp.data());
    if (!WriteAll(1, EncodeReapResult(*id, code))) break;
  }
  LAZ_LOG_INFO << "reaper done";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
