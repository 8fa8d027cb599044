#include "clients/lazaret/serviceset/launch.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/spawn/spawn.h"
#include "clients/lazaret/serviceset/status.h"
#include "services/common/constants.h"
#include "services/common/service_environment.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli::serviceset {

using Clock = std::chrono::steady_clock;

absl::StatusOr<SupervisorCommand> SupervisorCommandFor(const std::string& runtime_dir,
                                                       const std::string& libexec_dir) {
  SupervisorCommand c;
  c.binary = absl::StrCat(libexec_dir, "/lazaret-supervisord");
  if (access(c.binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        c.binary, " not found; build Lazaret (see README) or set LAZARET_LIBEXEC_DIR"));
  }
  c.argv = {c.binary, absl::StrCat("--runtime-dir=", runtime_dir),
            absl::StrCat("--libexec-dir=", libexec_dir)};
  // Only the variables the services and the launcher need (service_environment.h),
  // never the whole environment of the shell that ran `lazaret up`.
  c.env = ServiceEnvironment(environ);
  return c;
}

std::string SupervisorLogPath(const std::string& runtime_dir) {
  return absl::StrCat(runtime_dir, "/", kSupervisorLogFile);
}

absl::Status ExecInForeground(const SupervisorCommand& command) {
  std::vector<std::string> argv = command.argv;
  std::vector<std::string> env = command.env;
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The supervisor keeps no descriptor of the shell that ran `lazaret up`
  // beyond stdio (see Spawn).
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return ErrnoStatus("close_range", errno);
  execve(command.binary.c_str(), args.data(), envp.data());
  return ErrnoStatus("execv", errno);
}

absl::StatusOr<pid_t> StartDetached(const SupervisorCommand& command, const std::string& log_path) {
  const int log =
      open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (log < 0) {
    return ErrnoStatus(absl::StrCat("starting ", command.binary, ": opening ", log_path), errno);
  }
  ChildSpec spec;
  // The binary by its path, as checked by SupervisorCommandFor.
  spec.argv = command.argv;
  spec.env = command.env;
  spec.stdin_fd = ChildStdio::DevNull();
  spec.stdout_fd = ChildStdio::Fd(log);
  spec.stderr_fd = ChildStdio::Fd(log);
  spec.group = ChildGroup::kOwnSession;
  absl::StatusOr<pid_t> pid = [&]() -> absl::StatusOr<pid_t> {
    LAZ_ASSIGN_OR_RETURN(PreparedChild child, PreparedChild::Create(std::move(spec)));
    return Spawn(child);
  }();
  close(log);
  return pid;
}

UpResult WaitUntilUp(const std::string& runtime_dir, pid_t pid, std::chrono::milliseconds timeout) {
  UpResult r;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid, &wstatus, WNOHANG) == pid) {
      if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kSupervisorAlreadyRunningExit) {
        r.outcome = UpResult::Outcome::kLostRace;
        r.status = QueryStatus(runtime_dir, std::chrono::milliseconds(2000));
        return r;
      }
      r.outcome = UpResult::Outcome::kExited;
      return r;
    }
    r.status = QueryStatus(runtime_dir, std::chrono::milliseconds(1000));
    if (r.status.ok() && r.status->all_healthy()) {
      r.outcome = UpResult::Outcome::kHealthy;
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.outcome = UpResult::Outcome::kTimedOut;
  return r;
}

std::string TailOfFile(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - max_lines);
  return absl::StrJoin(lines, "\n");
}

}  // namespace lazaret::cli::serviceset
