#include "services/spawn/spawn.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli {
namespace {

// The step of the child's setup that failed, sent with its errno.
enum class Step : int { kGroup = 1, kStdio, kTerminal, kChdir, kCapabilities, kExec };

struct ChildFailure {
  Step step;
  int err;
};

const char* StepName(Step s) {
  switch (s) {
    case Step::kGroup:
      return "a process group of its own";
    case Step::kStdio:
      return "setting up its descriptors";
    case Step::kTerminal:
      return "taking stdin as the controlling terminal";
    case Step::kChdir:
      return "changing to the working directory";
    case Step::kCapabilities:
      return "raising its ambient capabilities";
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

// Everything the forked child reads, prepared before fork. `sources` is the
// child's own copy to rewrite (it lives in the parent's memory, allocated
// before fork; the child's writes go to its copy of the pages).
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const int* slots;
  int* sources;
  size_t nfds;
  int max_slot;  // the highest slot of the plan, at least 2
  const char* cwd;
  int cwd_fd;
  ChildGroup group;
  bool die_with_parent;
  int death_signal;
  uint64_t ambient;
  pid_t parent;
  int fail_fd;
};

// Reports a failed step of the child's setup and ends the child.
[[noreturn]] void Fail(int fail_fd, Step step, int err) {
  const ChildFailure f{step, err};
  // Nothing to do if this fails: the parent then sees an exit code of 127.
  (void)!write(fail_fd, &f, sizeof(f));
  _exit(127);
}

// Adds the wanted capabilities that are permitted to the inheritable set,
// then to the ambient set. Raw system calls: no libcap between fork and
// execve.
bool RaiseAmbient(uint64_t wanted) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  const uint64_t permitted = data[0].permitted | (uint64_t{data[1].permitted} << 32);
  const uint64_t raise = wanted & permitted;
  if (raise == 0) return true;
  data[0].inheritable |= static_cast<uint32_t>(raise);
  data[1].inheritable |= static_cast<uint32_t>(raise >> 32);
  if (syscall(SYS_capset, &hdr, data) != 0) return false;
  for (int c = 0; c < 64; ++c) {
    if ((raise & (uint64_t{1} << c)) == 0) continue;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) != 0) return false;
  }
  return true;
}

// The forked child: only async-signal-safe calls, nothing allocated, never
// returns. `plan.fail_fd` is the close-on-exec write end of the report pipe.
[[noreturn]] void RunChild(const ChildPlan& plan) {
  int fail_fd = plan.fail_fd;
  // Every handler the caller installed is the caller's code, and an ignored
  // signal stays ignored across execve: the program starts with every
  // disposition at its default. All signals are blocked here (see Spawn),
  // so none arrives until the mask is emptied below.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    (void)sigaction(s, &dfl, nullptr);  // EINVAL for SIGKILL, SIGSTOP and libc's own
  }
  if (plan.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, plan.death_signal);
    // Too late for the signal: the parent is already gone, and nobody
    // reads a report.
    if (getppid() != plan.parent) _exit(125);
  }
  if (plan.group == ChildGroup::kOwnGroup && setpgid(0, 0) != 0) {
    Fail(fail_fd, Step::kGroup, errno);
  }
  if ((plan.group == ChildGroup::kOwnSession || plan.group == ChildGroup::kTerminalSession) &&
      setsid() < 0) {
    Fail(fail_fd, Step::kGroup, errno);
  }
  // A descriptor the plan uses that is itself one of the planned slots (the
  // caller had closed its own stdio, or a source sits where another one
  // goes) is moved above every slot first, so no dup2 below overwrites a
  // source a later slot still needs.
  if (fail_fd <= plan.max_slot) {
    const int moved = fcntl(fail_fd, F_DUPFD_CLOEXEC, plan.max_slot + 1);
    if (moved < 0) _exit(127);
    fail_fd = moved;
  }
  int* src = plan.sources;
  for (size_t i = 0; i < plan.nfds; ++i) {
    if (src[i] == plan.slots[i]) continue;
    bool taken = src[i] <= 2;
    for (size_t j = 0; j < plan.nfds && !taken; ++j) taken = plan.slots[j] == src[i];
    if (!taken) continue;
    const int old = src[i];
    const int moved = fcntl(old, F_DUPFD_CLOEXEC, plan.max_slot + 1);
    if (moved < 0) Fail(fail_fd, Step::kStdio, errno);
    for (size_t j = i; j < plan.nfds; ++j) {
      if (src[j] == old && plan.slots[j] != old) src[j] = moved;
    }
  }
  // Only the planned descriptors reach the program: one the caller
  // inherited without close-on-exec (a shell's redirection, a lock held by
  // whoever started the caller) would otherwise live on in a daemon.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) Fail(fail_fd, Step::kStdio, errno);
  for (size_t i = 0; i < plan.nfds; ++i) {
    const int slot = plan.slots[i];
    if (src[i] == slot) {
      // Already in place: only the close-on-exec flag must go.
      if (fcntl(slot, F_SETFD, 0) != 0) Fail(fail_fd, Step::kStdio, errno);
    } else if (dup2(src[i], slot) < 0) {
      Fail(fail_fd, Step::kStdio, errno);
    }
  }
  if (plan.group == ChildGroup::kTerminalSession && ioctl(STDIN_FILENO, TIOCSCTTY, 0) != 0) {
    Fail(fail_fd, Step::kTerminal, errno);
  }
  if (plan.cwd != nullptr && chdir(plan.cwd) != 0) Fail(fail_fd, Step::kChdir, errno);
  if (plan.cwd_fd >= 0 && fchdir(plan.cwd_fd) != 0) Fail(fail_fd, Step::kChdir, errno);
  if (plan.ambient != 0 && !RaiseAmbient(plan.ambient)) {
    Fail(fail_fd, Step::kCapabilities, errno);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(plan.path, plan.argv, plan.envp);
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
  std::string path;
  if (spec.program.empty()) {
    LAZ_ASSIGN_OR_RETURN(path, FindProgram(spec.argv[0]));
  } else {
    if (spec.program[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("program ", spec.program, " is not an absolute path"));
    }
    path = spec.program;
  }
  if (!spec.cwd.empty() && spec.cwd_fd >= 0) {
    return absl::InvalidArgumentError("both a working directory path and descriptor given");
  }
  if (spec.die_with_parent && (spec.death_signal <= 0 || spec.death_signal >= NSIG)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid death signal ", spec.death_signal));
  }
  for (size_t i = 0; i < spec.extra_fds.size(); ++i) {
    const auto [slot, fd] = spec.extra_fds[i];
    if (slot < 3 || fd < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("descriptor ", fd, " for slot ", slot,
                       ": extra slots are 3 or above (0, 1 and 2 are stdin_fd, stdout_fd and "
                       "stderr_fd) and descriptors are not negative"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.extra_fds[j].first == slot) {
        return absl::InvalidArgumentError(absl::StrCat("slot ", slot, " planned twice"));
      }
    }
  }
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
        child.slots_.push_back(i);
        child.sources_.push_back(plan[i]->fd);
        break;
      case ChildStdio::Kind::kDevNull:
        if (child.dev_null_ < 0) {
          child.dev_null_ = open("/dev/null", O_RDWR | O_CLOEXEC);
          if (child.dev_null_ < 0) return ErrnoStatus("opening /dev/null", errno);
        }
        child.slots_.push_back(i);
        child.sources_.push_back(child.dev_null_);
        break;
    }
  }
  for (const auto& [slot, fd] : child.spec_.extra_fds) {
    child.slots_.push_back(slot);
    child.sources_.push_back(fd);
  }
  return child;
}

PreparedChild::PreparedChild(PreparedChild&& other) noexcept
    : spec_(std::move(other.spec_)),
      path_(std::move(other.path_)),
      argv_(std::move(other.argv_)),
      envp_(std::move(other.envp_)),
      slots_(std::move(other.slots_)),
      sources_(std::move(other.sources_)),
      dev_null_(other.dev_null_) {
  other.dev_null_ = -1;
}

PreparedChild::~PreparedChild() {
  if (dev_null_ >= 0) close(dev_null_);
}

absl::StatusOr<pid_t> Spawn(const PreparedChild& child) {
  const ChildSpec& spec = child.spec_;
  // The child's copy of the sources to rewrite, allocated before fork.
  std::vector<int> sources = child.sources_;
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  ChildPlan plan;
  plan.path = child.path_.c_str();
  plan.argv = child.argv_.data();
  plan.envp = child.envp_.empty() ? environ : child.envp_.data();
  plan.slots = child.slots_.data();
  plan.sources = sources.data();
  plan.nfds = sources.size();
  plan.max_slot = 2;
  for (int slot : child.slots_) plan.max_slot = std::max(plan.max_slot, slot);
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.cwd_fd = spec.cwd_fd;
  plan.group = spec.group;
  plan.die_with_parent = spec.die_with_parent;
  plan.death_signal = spec.death_signal;
  plan.ambient = spec.ambient_capabilities;
  plan.fail_fd = report[1];
  // Blocked across fork, so no signal runs one of the caller's handlers in
  // the child before RunChild resets it; the child empties its mask itself.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  plan.parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) RunChild(plan);
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
  std::string what =
      absl::StrCat("starting ", spec.program.empty() ? spec.argv[0] : spec.program,
                   spec.cwd.empty() ? "" : absl::StrCat(" in ", spec.cwd));
  absl::StrAppend(&what, ": ", StepName(failure.step));
  return ErrnoStatus(what, failure.err);
}

}  // namespace lazaret::cli
