#include "services/common/runtime_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"

namespace lazaret {
namespace {

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') return home;
  passwd pw{};
  passwd* found = nullptr;
  std::string buf(16384, '\0');
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/') {
    return found->pw_dir;
  }
  return "/";
}

// mkdir -p of the parents of `path` (mode 0700 for those it creates): the
// runtime directory below the home may be the first thing of Lazaret's
// there. What exists is left as it is; EnsurePrivateDir checks the last
// component only.
void MakeParents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    (void)mkdir(path.substr(0, slash).c_str(), 0700);
  }
}

}  // namespace

std::string DefaultRuntimeDir() {
  if (const char* v = std::getenv("LAZARET_RUNTIME_DIR"); v != nullptr && *v == '/') {
    return v;
  }
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/') {
    // Only use XDG_RUNTIME_DIR when it really is ours (it is inherited
    // verbatim by `su`/`sudo`, and pointing at another user's is a trap).
    struct stat st {};
    if (lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
      return absl::StrCat(xdg, "/lazaret");
    }
  }
  // Never a fixed name in a directory every user can write (/tmp): another
  // user could create it first and so block or redirect every session.
  // Root's /run and the user's own home are writable by nobody else.
  if (geteuid() == 0) return "/run/lazaret";
  return absl::StrCat(UserStateDir(), "/run");
}

std::string UserStateDir() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    return absl::StrCat(state, "/lazaret");
  }
  return absl::StrCat(HomeDir(), "/.local/state/lazaret");
}

absl::StatusOr<std::string> EnsurePrivateDir(const std::string& path) {
  std::string p(path);
  if (p.empty() || p[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime directory '", p, "' must be an absolute path"));
  }
  if (mkdir(p.c_str(), 0700) != 0 && errno == ENOENT) {
    MakeParents(p);
    (void)mkdir(p.c_str(), 0700);
  }
  if (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("creating runtime directory ", p), errno);
  }
  struct stat st {};
  if (lstat(p.c_str(), &st) != 0) {
    return ErrnoStatus(absl::StrCat("inspecting runtime directory ", p), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("runtime directory ", p, " is not a directory (a symlink or file is there); ",
                     "remove it or set LAZARET_RUNTIME_DIR"));
  }
  if (st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("runtime directory %s belongs to uid %d, not to you (uid %d); "
                        "remove it or set LAZARET_RUNTIME_DIR",
                        p, st.st_uid, geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("runtime directory %s has mode %04o; it must be 0700 "
                        "(run: chmod 700 %s)",
                        p, st.st_mode & 07777, p));
  }
  return p;
}

std::string SocketPath(const std::string& runtime_dir, const std::string& service) {
  if (const ServiceEntry* s = FindService(service); s != nullptr) {
    return ServiceSocketPath(runtime_dir, *s);
  }
  return absl::StrCat(runtime_dir, "/", service, ".sock");
}

}  // namespace lazaret
