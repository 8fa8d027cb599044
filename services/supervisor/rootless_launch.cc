#include "services/supervisor/rootless_launch.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::supervisor {
namespace {

constexpr const char* kPodmanPaths[] = {"/usr/local/bin/podman", "/usr/bin/podman", "/bin/podman"};

}  // namespace

absl::StatusOr<std::vector<std::string>> MountHelperLauncher(const std::vector<std::string>& env) {
  if (geteuid() == 0) return std::vector<std::string>{};
  std::string podman;
  for (const char* p : kPodmanPaths) {
    if (access(p, X_OK) == 0) {
      podman = p;
      break;
    }
  }
  if (podman.empty()) {
    return absl::NotFoundError(
        "podman is not installed in /usr/local/bin, /usr/bin or /bin; rootless Lazaret needs it "
        "(deploy/setup-host.sh)");
  }
  std::vector<std::string> args = {podman, "unshare", "true"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = env;
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) return ErrnoStatus("open /dev/null", errno);
  const pid_t pid = fork();
  if (pid < 0) {
    close(devnull);
    return ErrnoStatus("fork", errno);
  }
  if (pid == 0) {
    dup2(devnull, 0);
    dup2(devnull, 1);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(devnull);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waitpid podman unshare", errno);
  }
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "`", podman, " unshare true` failed (", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
        "); the mount helper runs in rootless podman's namespace. Check that this user has "
        "/etc/subuid and /etc/subgid entries and that `podman unshare true` works"));
  }
  return std::vector<std::string>{podman, "unshare"};
}

}  // namespace lazaret::supervisor
