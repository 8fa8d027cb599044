#include "services/spawn/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli {
namespace {

// Signals the CLI blocks or handles; every child gets them back at default
// (an ignored one too, since SIG_IGN survives execve).
constexpr int kDefaultSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGCHLD, SIGPIPE,
                                   SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};

// The step of the child's setup that failed, sent with its errno.
enum class Step : int { kGroup = 1, kStdio, kTerminal, kChdir, kExec };

struct ChildFailure {
  Step step;
  int err;
};

const char* StepName(Step s) {
  switch (s) {
    case Step::kGroup:
      return "a process group of its own";
    case Step::kStdio:
      return "setting up stdin/stdout/stderr";
    case Step::kTerminal:
      return "taking stdin as the controlling terminal";
    case Step::kChdir:
      return "changing to the working directory";
    case Step::kExec:
      break;
  }
  return "execve";
}

std::vector<char*> CArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reports a failed step of the child's setup and ends the child.
[[noreturn]] void Fail(int fail_fd, Step step, int err) {
  const ChildFailure f{step, err};
  // Nothing to do if this fails: the parent then sees an exit code of 127.
  (void)!write(fail_fd, &f, sizeof(f));
  _exit(127);
}

// The forked child: only async-signal-safe calls, nothing allocated, never
// returns. `fail_fd` is the close-on-exec write end of the report pipe.
[[noreturn]] void RunChild(const char* path, char* const* argv, char* const* envp,
                           const int stdio_in[3], const char* cwd, ChildGroup group,
                           bool die_with_parent, pid_t parent, int fail_fd) {
  // Every handler the CLI installed is the CLI's code; the child must not
  // run it before execve resets it. All signals are blocked here (see
  // Spawn), so none arrives until the mask is emptied below.
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction sa;
    if (sigaction(s, nullptr, &sa) != 0) continue;
    if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) continue;
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    sigaction(s, &sa, nullptr);
  }
  for (int s : kDefaultSignals) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigaction(s, &sa, nullptr);
  }
  if (die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Too late for the signal: the parent is already gone, and nobody
    // reads a report.
    if (getppid() != parent) _exit(125);
  }
  if (group == ChildGroup::kOwnGroup && setpgid(0, 0) != 0) Fail(fail_fd, Step::kGroup, errno);
  if ((group == ChildGroup::kOwnSession || group == ChildGroup::kTerminalSession) && setsid() < 0) {
    Fail(fail_fd, Step::kGroup, errno);
  }
  // A descriptor the plan uses that is itself 0, 1 or 2 (the caller had
  // closed its own stdio) is moved out of the way first, so no dup2 below
  // overwrites a source a later slot still needs.
  if (fail_fd < 3) {
    const int moved = fcntl(fail_fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) _exit(127);
    fail_fd = moved;
  }
  int stdio[3] = {stdio_in[0], stdio_in[1], stdio_in[2]};
  for (int i = 0; i < 3; ++i) {
    if (stdio[i] >= 0 && stdio[i] < 3 && stdio[i] != i) {
      const int moved = fcntl(stdio[i], F_DUPFD_CLOEXEC, 3);
      if (moved < 0) Fail(fail_fd, Step::kStdio, errno);
      for (int j = i + 1; j < 3; ++j) {
        if (stdio[j] == stdio[i]) stdio[j] = moved;
      }
      stdio[i] = moved;
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (stdio[i] < 0) continue;
    if (stdio[i] == i) {
      // Already in place: only the close-on-exec flag must go.
      if (fcntl(i, F_SETFD, 0) != 0) Fail(fail_fd, Step::kStdio, errno);
    } else if (dup2(stdio[i], i) < 0) {
      Fail(fail_fd, Step::kStdio, errno);
    }
  }
  if (group == ChildGroup::kTerminalSession && ioctl(STDIN_FILENO, TIOCSCTTY, 0) != 0) {
    Fail(fail_fd, Step::kTerminal, errno);
  }
  if (cwd != nullptr && chdir(cwd) != 0) Fail(fail_fd, Step::kChdir, errno);
  // Only the planned stdio reaches the program: a descriptor the caller
  // inherited without close-on-exec (a shell's redirection, a lock held by
  // whoever started `lazaret`) would otherwise live on in a daemon.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) Fail(fail_fd, Step::kStdio, errno);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(path, argv, envp);
  Fail(fail_fd, Step::kExec, errno);
}

}  // namespace

absl::StatusOr<std::string> FindProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) == 0) return program;
    return absl::NotFoundError(absl::StrCat(program, ": ", std::strerror(errno)));
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr && *path_env != '\0'
                               ? path_env
                               : "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH (", path, ")"));
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 125;
}

absl::StatusOr<PreparedChild> PreparedChild::Create(ChildSpec spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("empty command");
  LAZ_ASSIGN_OR_RETURN(std::string path, FindProgram(spec.argv[0]));
  PreparedChild child(std::move(spec));
  child.path_ = std::move(path);
  // The char* arrays point into spec_'s strings; moving a PreparedChild
  // moves the vectors' buffers, not the strings, so they stay valid.
  child.argv_ = CArray(child.spec_.argv);
  if (child.spec_.env.has_value()) child.envp_ = CArray(*child.spec_.env);
  const ChildStdio* plan[3] = {&child.spec_.stdin_fd, &child.spec_.stdout_fd,
                               &child.spec_.stderr_fd};
  for (int i = 0; i < 3; ++i) {
    switch (plan[i]->kind) {
      case ChildStdio::Kind::kInherit:
        break;
      case ChildStdio::Kind::kFd:
        if (plan[i]->fd < 0) return absl::InvalidArgumentError("negative descriptor for stdio");
        child.stdio_[i] = plan[i]->fd;
        break;
      case ChildStdio::Kind::kDevNull:
        if (child.dev_null_ < 0) {
          child.dev_null_ = open("/dev/null", O_RDWR | O_CLOEXEC);
          if (child.dev_null_ < 0) return ErrnoStatus("opening /dev/null", errno);
        }
        child.stdio_[i] = child.dev_null_;
        break;
    }
  }
  return child;
}

PreparedChild::PreparedChild(PreparedChild&& other) noexcept
    : spec_(std::move(other.spec_)),
      path_(std::move(other.path_)),
      argv_(std::move(other.argv_)),
      envp_(std::move(other.envp_)),
      dev_null_(other.dev_null_) {
  for (int i = 0; i < 3; ++i) stdio_[i] = other.stdio_[i];
  other.dev_null_ = -1;
}

PreparedChild::~PreparedChild() {
  if (dev_null_ >= 0) close(dev_null_);
}

absl::StatusOr<pid_t> Spawn(const PreparedChild& child) {
  const ChildSpec& spec = child.spec_;
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  char* const* envp = child.envp_.empty() ? environ : child.envp_.data();
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  // Blocked across fork, so no signal runs one of the CLI's handlers in the
  // child before RunChild resets it; the child empties its mask itself.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    RunChild(child.path_.c_str(), child.argv_.data(), envp, child.stdio_, cwd, spec.group,
             spec.die_with_parent, parent, report[1]);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return ErrnoStatus("fork", fork_errno);
  }
  ChildFailure failure{};
  ssize_t got;
  do {
    got = read(report[0], &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got != static_cast<ssize_t>(sizeof(failure))) return pid;  // EOF: execve succeeded
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string what = absl::StrCat("starting ", spec.argv[0],
                                  spec.cwd.empty() ? "" : absl::StrCat(" in ", spec.cwd));
  if (failure.step != Step::kExec) absl::StrAppend(&what, ": ", StepName(failure.step));
  return ErrnoStatus(what, failure.err);
}

}  // namespace lazaret::cli
