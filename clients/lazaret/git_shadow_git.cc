#include "clients/lazaret/git_shadow_git.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli {
namespace {

// Closes a descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// The caller's environment minus GIT_*, LC_ALL and LANGUAGE, plus the C
// locale and no terminal prompt.
std::vector<std::string> GitEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    if (absl::StartsWith(entry, "GIT_") || absl::StartsWith(entry, "LC_ALL=") ||
        absl::StartsWith(entry, "LANGUAGE=")) {
      continue;
    }
    env.emplace_back(entry);
  }
  env.emplace_back("LC_ALL=C");
  env.emplace_back("GIT_TERMINAL_PROMPT=0");
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> GitSafetyOptions() {
  return {"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"};
}

absl::StatusOr<GitResult> RunGitRaw(const std::string& cwd, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git"};
  for (auto& o : GitSafetyOptions()) argv.push_back(o);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = GitEnvironment();
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "git", &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return ErrnoStatus(absl::StrCat("starting git in ", cwd), rc);
  out_w.Reset();
  err_w.Reset();

  GitResult result;
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("reading git output", errno);
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waiting for git", errno);
  }
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

absl::StatusOr<std::string> RunGit(const std::string& cwd, const std::vector<std::string>& args) {
  LAZ_ASSIGN_OR_RETURN(GitResult r, RunGitRaw(cwd, args));
  if (r.exit_code != 0) {
    std::string err(absl::StripTrailingAsciiWhitespace(r.err));
    return absl::FailedPreconditionError(absl::StrCat("git ", absl::StrJoin(args, " "), " (in ",
                                                      cwd, ") failed with exit code ", r.exit_code,
                                                      ": ", err));
  }
  return std::move(r.out);
}

}  // namespace lazaret::cli
