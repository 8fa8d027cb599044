// The directories a session endpoint lives in: a root the broker owns (the
// socket directory, or the memory-backed certificate root) and one fresh
// directory per session below it. Runs in lazaret-brokerd (host, the
// user's uid or root, no capabilities). The root paths come from the
// user's configuration and are trusted as names, not as what they name:
// each is lstat'ed and opened O_NOFOLLOW, and the descriptor's owner, mode
// and (for certificates) filesystem are checked, so a symlink, a directory
// of another user or a group-writable one is refused, never repaired.
#ifndef LAZARET_SERVICES_BROKERD_TLS_PRIVATE_DIR_H_
#define LAZARET_SERVICES_BROKERD_TLS_PRIVATE_DIR_H_

#include <string>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::tls {

enum class Backing { kAny, kMemory };

// Opens `path` (absolute, clean) as a private root: created 0700 when
// missing (that one level only; its parent must exist), then it must be a
// directory - not a symlink -, owned by geteuid(), with no group or other
// permission bits, and for kMemory on tmpfs or ramfs. `what` names it in
// messages ("socket directory"), each of which says how to fix it.
absl::StatusOr<fs::DirFd> OpenPrivateRoot(const std::string& path, const char* what,
                                          Backing backing);

// Creates `name` below `root` (whose path is `root_path`, for messages) with
// mode 0700. Anything already there is refused unless `adopt_existing`: then
// it must be a 0700 directory owned by geteuid() (a restarted broker taking
// a live session back), and its contents are removed.
absl::StatusOr<fs::DirFd> CreateSessionDir(const fs::DirFd& root, const std::string& root_path,
                                           const std::string& name, bool adopt_existing);

// The certificate root for the broker's euid: /dev/shm/lazaret-<euid>.
std::string DefaultCertsRoot();

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_PRIVATE_DIR_H_
