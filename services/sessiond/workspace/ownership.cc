#include "services/sessiond/workspace/ownership.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/privileges.h"

namespace lazaret::cli::workspace {

using fs::DirFd;
using fs::UniqueFd;

std::string OwnerName(const ScanRoot& root) {
  std::vector<std::string> ids;
  std::string name;
  if (root.owner_uid.has_value()) {
    ids.push_back(absl::StrCat("uid ", *root.owner_uid));
    if (const passwd* pw = getpwuid(*root.owner_uid); pw != nullptr) name = pw->pw_name;
  }
  if (root.owner_gid.has_value()) {
    ids.push_back(absl::StrCat("gid ", *root.owner_gid));
    if (!root.owner_uid.has_value()) {
      if (const group* gr = getgrgid(*root.owner_gid); gr != nullptr) {
        name = absl::StrCat("group ", gr->gr_name);
      }
    }
  }
  const std::string joined = absl::StrJoin(ids, ", ");
  return name.empty() ? joined : absl::StrCat(name, " (", joined, ")");
}

bool HandsBackOwnership(const ScanRoot& root) {
  return root.hand_back_ownership && (root.owner_uid.has_value() || root.owner_gid.has_value());
}

bool NotTheOwners(const ScanRoot& root, const struct stat& st) {
  return (root.owner_uid.has_value() && st.st_uid != *root.owner_uid) ||
         (root.owner_gid.has_value() && st.st_gid != *root.owner_gid);
}

bool GiveBack(const ScanRoot& root, int fd, const std::string& path, struct stat* st,
              std::vector<std::string>* stripped, std::vector<std::string>* problems) {
  const uid_t uid = root.owner_uid.value_or(static_cast<uid_t>(-1));
  const gid_t gid = root.owner_gid.value_or(static_cast<gid_t>(-1));
  const bool had_caps = S_ISREG(st->st_mode) && (st->st_mode & 0111) != 0 &&
                        getxattr(ProcFd(fd).c_str(), kCapabilityXattr, nullptr, 0) >= 0;
  if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0) {
    problems->push_back(absl::StrCat(path, ": could not be given to ", OwnerName(root), ": ",
                                     std::strerror(errno), "; it stays owned by uid ", st->st_uid,
                                     ", gid ", st->st_gid));
    return false;
  }
  const mode_t before = st->st_mode & 07777;
  if (fstat(fd, st) != 0) return true;
  const mode_t after = st->st_mode & 07777;
  std::vector<std::string> what;
  if ((before & ~after & (S_ISUID | S_ISGID)) != 0) {
    std::vector<std::string> bits;
    if (before & ~after & S_ISUID) bits.push_back("setuid");
    if (before & ~after & S_ISGID) bits.push_back("setgid");
    what.push_back(absl::StrFormat("%s bit%s (mode %04o -> %04o)", absl::StrJoin(bits, "+"),
                                   bits.size() > 1 ? "s" : "", before, after));
  }
  if (had_caps && getxattr(ProcFd(fd).c_str(), kCapabilityXattr, nullptr, 0) < 0) {
    what.push_back("file capabilities (security.capability)");
  }
  if (!what.empty() && stripped != nullptr) {
    stripped->push_back(absl::StrCat(path, ": removed ", absl::StrJoin(what, "; "),
                                     " by giving it to ", OwnerName(root)));
  }
  return true;
}

bool MaybeGiveBack(const ScanRoot& root, const timespec& since, const DirFd& dir,
                   const std::string& name, const std::string& rel, struct stat* st,
                   std::vector<std::string>* stripped, std::vector<std::string>* problems) {
  if (!HandsBackOwnership(root) || !NotBefore(st->st_ctim, since) || !NotTheOwners(root, *st)) {
    return false;
  }
  const UniqueFd path_fd(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path_fd.valid()) return false;
  const int fd = path_fd.get();
  // Only this inode from here on: its own fstat decides.
  struct stat fst {};
  if (fstat(fd, &fst) != 0 || !NotTheOwners(root, fst)) return false;
  const bool given = GiveBack(root, fd, Join(root.path, rel), &fst, stripped, problems);
  *st = fst;
  return given;
}

}  // namespace lazaret::cli::workspace
