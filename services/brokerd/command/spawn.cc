#include "services/brokerd/command/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

namespace lazaret::brokerd::command {

absl::StatusOr<Spawned> Spawn(const CheckedCommand& command, const std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  fs::UniqueFd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  fs::UniqueFd err_r(err[0]), err_w(err[1]);

  // The checked binary by its path, never looked up again; exactly `env`;
  // the directory the check opened; a process group of its own, so a
  // timeout or a cancel kills whatever the command started too.
  cli::ChildSpec spec;
  spec.argv = command.argv();
  spec.program = command.binary().path;
  spec.env = env;
  spec.stdin_fd = cli::ChildStdio::DevNull();
  spec.stdout_fd = cli::ChildStdio::Fd(out_w.get());
  spec.stderr_fd = cli::ChildStdio::Fd(err_w.get());
  spec.cwd_fd = command.cwd_fd();
  spec.group = cli::ChildGroup::kOwnGroup;
  LAZ_ASSIGN_OR_RETURN(cli::PreparedChild child, cli::PreparedChild::Create(std::move(spec)));
  LAZ_ASSIGN_OR_RETURN(const pid_t pid, cli::Spawn(child));
  out_w.reset();
  err_w.reset();

  for (int fd : {out_r.get(), err_r.get()}) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      const int e = errno;
      (void)kill(-pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return ErrnoStatus("making the output pipes non-blocking", e);
    }
  }
  Spawned spawned;
  spawned.pid = pid;
  spawned.out = std::move(out_r);
  spawned.err = std::move(err_r);
  return spawned;
}

}  // namespace lazaret::brokerd::command
