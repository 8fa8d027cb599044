#include "services/brokerd/command/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::command {
namespace {

// The step of the child that failed, reported to the parent with errno.
enum class Step : int { kSetpgid = 1, kSignals, kChdir, kStdio, kCloseFds, kExec };

const char* StepName(int step) {
  switch (static_cast<Step>(step)) {
    case Step::kSetpgid:
      return "setpgid";
    case Step::kSignals:
      return "resetting signals";
    case Step::kChdir:
      return "fchdir to the working directory";
    case Step::kStdio:
      return "setting up stdin/stdout/stderr";
    case Step::kCloseFds:
      return "closing descriptors";
    case Step::kExec:
      return "execve";
  }
  return "starting";
}

// A descriptor numbered 3 or above (so the dup2s onto 0, 1 and 2 in the
// child cannot overwrite one still needed), close-on-exec.
absl::StatusOr<fs::UniqueFd> AboveStdio(int fd) {
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return ErrnoStatus("duplicating a descriptor", errno);
  return fs::UniqueFd(moved);
}

absl::Status MakePipe(fs::UniqueFd* read_end, fs::UniqueFd* write_end) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  fs::UniqueFd r(p[0]), w(p[1]);
  LAZ_ASSIGN_OR_RETURN(*read_end, AboveStdio(r.get()));
  LAZ_ASSIGN_OR_RETURN(*write_end, AboveStdio(w.get()));
  return absl::OkStatus();
}

// Everything the child needs, prepared before fork.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int cwd;
  int devnull;
  int out_w;
  int err_w;
  int report_w;
  sigset_t empty_mask;
};

[[noreturn]] void Fail(int report_fd, Step step) {
  const int msg[2] = {static_cast<int>(step), errno};
  (void)!write(report_fd, msg, sizeof(msg));
  _exit(127);
}

// After fork, in the child. Async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildPlan& plan) {
  int report = plan.report_w;
  if (setpgid(0, 0) != 0) Fail(report, Step::kSetpgid);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    (void)sigaction(sig, &dfl, nullptr);  // EINVAL for SIGKILL, SIGSTOP and glibc's own
  }
  if (sigprocmask(SIG_SETMASK, &plan.empty_mask, nullptr) != 0) Fail(report, Step::kSignals);
  if (fchdir(plan.cwd) != 0) Fail(report, Step::kChdir);
  if (dup2(plan.devnull, 0) != 0 || dup2(plan.out_w, 1) != 1 || dup2(plan.err_w, 2) != 2) {
    Fail(report, Step::kStdio);
  }
  // The report pipe becomes 3 (close-on-exec); everything above goes.
  if (report != 3) {
    if (dup3(report, 3, O_CLOEXEC) != 3) Fail(report, Step::kCloseFds);
    report = 3;
  }
  if (close_range(4, ~0U, 0) != 0) Fail(report, Step::kCloseFds);
  execve(plan.path, plan.argv, plan.envp);
  Fail(report, Step::kExec);
}

}  // namespace

absl::StatusOr<Spawned> Spawn(const CheckedCommand& command, const std::vector<std::string>& env) {
  std::vector<char*> argv;
  for (const std::string& a : command.argv()) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return ErrnoStatus("opening /dev/null", errno);
  fs::UniqueFd null_owner(null_fd);
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd devnull, AboveStdio(null_fd));
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd cwd, AboveStdio(command.cwd_fd()));
  fs::UniqueFd out_r, out_w, err_r, err_w, report_r, report_w;
  LAZ_RETURN_IF_ERROR(MakePipe(&out_r, &out_w));
  LAZ_RETURN_IF_ERROR(MakePipe(&err_r, &err_w));
  LAZ_RETURN_IF_ERROR(MakePipe(&report_r, &report_w));

  ChildPlan plan;
  plan.path = command.binary().path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = cwd.get();
  plan.devnull = devnull.get();
  plan.out_w = out_w.get();
  plan.err_w = err_w.get();
  plan.report_w = report_w.get();
  sigemptyset(&plan.empty_mask);

  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork", errno);
  if (pid == 0) RunChild(plan);

  // Also from the parent, so the group exists before anyone signals it.
  (void)setpgid(pid, pid);
  out_w.reset();
  err_w.reset();
  report_w.reset();

  int msg[2];
  size_t got = 0;
  while (got < sizeof(msg)) {
    const ssize_t n = read(report_r.get(), reinterpret_cast<char*>(msg) + got, sizeof(msg) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got < sizeof(msg)) return absl::InternalError("the child failed before execve");
    return ErrnoStatus(absl::StrCat("running ", command.binary().path, ": ", StepName(msg[0])),
                       msg[1]);
  }
  for (int fd : {out_r.get(), err_r.get()}) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      const int err = errno;
      (void)kill(-pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return ErrnoStatus("making the output pipes non-blocking", err);
    }
  }
  Spawned spawned;
  spawned.pid = pid;
  spawned.out = std::move(out_r);
  spawned.err = std::move(err_r);
  return spawned;
}

}  // namespace lazaret::brokerd::command
