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

// Where the broker's certificate roots live: a memory filesystem every
// user can write (sticky), so no name there is predictable.
inline constexpr char kCertsRootParent[] = "/dev/shm";
// The file in the runtime directory that names the broker's root.
inline constexpr char kCertsRootRecord[] = "brokerd-certs-root";

// The broker's certificate root: a directory with a random name,
// <parent>/lazaret-<euid>.XXXXXX, made by mkdtemp (so nothing another
// user created first can be it), opened O_NOFOLLOW, verified a 0700
// directory of ours on tmpfs or ramfs, and flock'ed for the broker's
// lifetime. Its path is recorded in the runtime directory, so that a
// restarted broker takes back the root its live sessions have mounted; the
// path reaches `lazaret run` in AttachSession's answer, never computed
// there. At Claim, every other lazaret-<euid>.* of ours that no broker
// holds (its flock is free) is a stale one and is removed; anything there
// of another user is left alone and never used.
class CertsRoot {
 public:
  // `parent` is kCertsRootParent outside tests; `runtime_dir` is the
  // broker's (private, checked by service startup).
  static absl::StatusOr<CertsRoot> Claim(const std::string& parent, const std::string& runtime_dir);
  const std::string& path() const { return path_; }

 private:
  CertsRoot(std::string path, fs::DirFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}
  std::string path_;
  fs::DirFd dir_;  // holds the flock
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_PRIVATE_DIR_H_
