#include "services/supervisor/rootless_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

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
  cli::ChildSpec spec;
  spec.program = podman;
  spec.argv = {podman, "unshare", "true"};
  spec.env = env;
  spec.stdin_fd = cli::ChildStdio::DevNull();
  spec.stdout_fd = cli::ChildStdio::DevNull();
  LAZ_ASSIGN_OR_RETURN(cli::PreparedChild child, cli::PreparedChild::Create(std::move(spec)));
  LAZ_ASSIGN_OR_RETURN(const pid_t pid, cli::Spawn(child));
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
