// The per-user runtime directory that holds every service socket, the
// supervisor lock and its log. Runs in every host-side process; trusts
// nothing it finds on disk: the directory must be a real directory owned by
// the caller with mode 0700.
#ifndef LAZARET_SERVICES_COMMON_RUNTIME_DIR_H_
#define LAZARET_SERVICES_COMMON_RUNTIME_DIR_H_

#include <string>

#include "absl/status/statusor.h"

namespace lazaret {

// Resolution order: $LAZARET_RUNTIME_DIR (tests, several instances), then
// $XDG_RUNTIME_DIR/lazaret when that directory is ours, then /run/lazaret
// for root, else $XDG_STATE_HOME/lazaret/run (absolute) or
// ~/.local/state/lazaret/run: never a predictable name in a directory
// other users can write. Does not create it.
std::string DefaultRuntimeDir();

// The user's Lazaret state directory (the audit log, the fallback runtime
// directory): $XDG_STATE_HOME/lazaret when that is absolute, else
// ~/.local/state/lazaret ($HOME, or the password database's home). Does not
// create it.
std::string UserStateDir();

// Creates `path` with mode 0700 if missing (and its missing parents, 0700),
// then verifies it is a
// directory (not a symlink) owned by the effective uid with no group/other
// access. Returns the path on success.
absl::StatusOr<std::string> EnsurePrivateDir(const std::string& path);

// The socket of the service named `service` in the runtime directory: its
// socket in the service catalog (service_catalog.h); "<service>.sock" for a
// name the catalog does not have (a test's own server).
std::string SocketPath(const std::string& runtime_dir, const std::string& service);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_RUNTIME_DIR_H_
