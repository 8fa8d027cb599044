// What a session asks of podman: Lazaret's containers.conf, and the few
// queries (list, inspect,
// logs, remove) that session management needs; the command lines that
// create a session's containers are composed in plan.h. Runs in the CLI,
// as the user; podman runs rootful when the user is root and rootless
// otherwise. Output parsed here comes from podman's own Go templates over
// labels Lazaret set itself.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_PODMAN_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_PODMAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/podman/host.h"

namespace lazaret::cli::session {

// Lazaret's own containers.conf. Every podman call of a session runs with
// CONTAINERS_CONF naming it, which replaces podman's whole containers.conf
// chain (/usr/share, /etc, /etc/containers/containers.conf.d, the user's
// ~/.config/containers, and any CONTAINERS_CONF the user set): what podman
// then uses is its compiled-in defaults plus this file. It sets explicitly
// every isolation-relevant key the command line cannot override (volumes,
// devices, env, annotations, default_sysctls, hooks_dir, conmon/runtime
// environment, network_cmd_options, ...) - docs/operations.md lists them.
// `hooks_dir` is an empty directory Lazaret owns: no OCI hook, the host's
// or the user's, runs for a session.
std::string ContainersConfText(const std::string& hooks_dir);

// Writes <runtime_dir>/podman/containers.conf (0600, replaced atomically)
// and the empty <runtime_dir>/podman/hooks.d, and sets CONTAINERS_CONF in
// this process's environment so that every podman it starts reads only
// that file. Precondition: no other thread exists yet (setenv). Returns the
// file's path.
absl::StatusOr<std::string> InstallContainersConf(const std::string& runtime_dir);

// Where InstallContainersConf puts the file (for --dry-run).
std::string ContainersConfPath(const std::string& runtime_dir);

// A container carrying Lazaret's labels.
struct ContainerInfo {
  std::string id;
  std::string name;
  std::string state;  // podman's: created, running, exited, ...
  int64_t created_unix = 0;
  std::string session;
  std::string profile;
  std::string role;
  std::string runtime_dir;
};

// Every container (any state) with an io.lazaret.session label.
absl::StatusOr<std::vector<ContainerInfo>> ListLazaretContainers();

// Parses the tab-separated lines ListLazaretContainers asks podman for.
std::vector<ContainerInfo> ParseContainerLines(const std::string& text);

// `podman rm --force --ignore [--depend] --time=<grace> NAME`, the one
// place this command line is written (run, --dry-run, stop, clean).
std::vector<std::string> RemoveArgv(const std::string& name, int grace_seconds,
                                    bool with_dependents);

// `podman rm -f -i -t <grace> NAME`: removes a container whether running
// or not; a missing one is not an error.
absl::Status RemoveContainer(const std::string& name, int grace_seconds);

// Removes `name` and every container that depends on it (a sidecar and the
// sandbox in its network namespace) in one podman call, forcing and
// ignoring missing ones.
absl::Status RemoveWithDependents(const std::string& name, int grace_seconds);

// podman inspect's State.Status of `name` ("created", "running",
// "exited", ...), or nullopt when podman inspect fails (no such
// container). An error when podman could not be run at all.
absl::StatusOr<std::optional<std::string>> ContainerStatus(const std::string& name);

// The full id of a local image (`podman image inspect --format {{.Id}}`):
// FAILED_PRECONDITION with MissingImageHint when there is no such image,
// INTERNAL with podman's words for any other failure. Never pulls.
absl::StatusOr<std::string> ImageId(const std::string& image);

// The last `lines` lines `name` logged (stdout and stderr), or "" when
// podman could not be run.
std::string ContainerLogTail(const std::string& name, int lines);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_PODMAN_H_
