// Typed description of what a sandbox container mounts. Produced by the
// planners in the CLI (Git Shadow, volumes, terminfo) from already-checked
// host paths, and turned into podman arguments in exactly one place.
#ifndef LAZARET_SERVICES_PODMAN_MOUNT_SPEC_H_
#define LAZARET_SERVICES_PODMAN_MOUNT_SPEC_H_

#include <string>
#include <variant>
#include <vector>

namespace lazaret::cli {

// A host path bind-mounted into the container. `host` is absolute and
// canonical (symlinks resolved when it was checked).
struct BindMount {
  std::string host;
  std::string container;
  bool read_only = true;
  bool selinux_shared = false;  // ":z"
  bool selinux_private = false;  // ":Z" (a profile volume may ask for it)
};

// A memory-backed tmpfs at `container`.
struct TmpfsMount {
  std::string container;
  std::string mode = "0755";
};

using Mount = std::variant<BindMount, TmpfsMount>;

// An environment variable set in the sandbox. `secret` values are written
// only to the 0600 env file and redacted in every log and dry-run.
struct EnvSetting {
  std::string name;
  std::string value;
  bool secret = false;
};

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_PODMAN_MOUNT_SPEC_H_
