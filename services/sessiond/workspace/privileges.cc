#include "services/sessiond/workspace/privileges.h"

#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/ownership.h"
#include "services/sessiond/workspace/walk.h"

namespace lazaret::cli::workspace {

using fs::DirFd;
using fs::UniqueFd;

void StripEntry(const ScanRoot& root, const timespec& since, const DirFd& dir,
                const std::string& name, const std::string& rel, const struct stat& st,
                std::vector<std::string>* stripped, std::vector<std::string>* problems) {
  if (!NotBefore(st.st_ctim, since)) return;
  const bool reg = S_ISREG(st.st_mode);
  if (!reg && !S_ISDIR(st.st_mode)) return;
  // File capabilities only act on an executable; the chmod that makes
  // one executable later changes its ctime, so the next sweep sees it.
  const bool may_have_caps = reg && (st.st_mode & 0111) != 0;
  if (!may_have_caps && (st.st_mode & (S_ISUID | S_ISGID)) == 0) return;
  const UniqueFd path_fd(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path_fd.valid()) return;
  const int fd = path_fd.get();
  // From here on only this inode: its own fstat decides, and the magic
  // link changes it whatever the name points to now.
  struct stat fst {};
  if (fstat(fd, &fst) != 0) return;
  const bool freg = S_ISREG(fst.st_mode);
  if (!freg && !S_ISDIR(fst.st_mode)) return;
  const std::string proc = ProcFd(fd);
  const std::string path = Join(root.path, rel);
  std::vector<std::string> what;
  mode_t mode = fst.st_mode & 07777;
  if ((mode & (S_ISUID | S_ISGID)) != 0) {
    const mode_t to = mode & ~static_cast<mode_t>(S_ISUID | S_ISGID);
    if (chmod(proc.c_str(), to) == 0) {
      std::vector<std::string> bits;
      if (mode & S_ISUID) bits.push_back("setuid");
      if (mode & S_ISGID) bits.push_back("setgid");
      what.push_back(absl::StrFormat("%s bit%s (mode %04o -> %04o)", absl::StrJoin(bits, "+"),
                                     bits.size() > 1 ? "s" : "", mode, to));
      mode = to;
    } else {
      problems->push_back(
          absl::StrCat(path, ": could not remove its setuid/setgid bits: ", std::strerror(errno)));
    }
  }
  if (freg && (fst.st_mode & 0111) != 0 &&
      getxattr(proc.c_str(), kCapabilityXattr, nullptr, 0) >= 0) {
    if (removexattr(proc.c_str(), kCapabilityXattr) == 0) {
      what.push_back("file capabilities (security.capability)");
    } else {
      const int err = errno;
      // Fail safe: a file whose capabilities stay must not be executable.
      const mode_t to = mode & ~static_cast<mode_t>(0111);
      if (chmod(proc.c_str(), to) == 0) {
        what.push_back(absl::StrFormat(
            "execute bits (mode %04o -> %04o): its file capabilities could not be removed (%s)",
            mode, to, std::strerror(err)));
      } else {
        problems->push_back(absl::StrCat(
            path, ": has file capabilities that could not be removed: ", std::strerror(err)));
      }
    }
  }
  if (!what.empty() && stripped != nullptr) {
    stripped->push_back(absl::StrCat(path, ": removed ", absl::StrJoin(what, "; ")));
  }
}

absl::Status StripPrivilegeBits(const std::vector<ScanRoot>& roots, const timespec& since,
                                const ScanLimits& limits, std::vector<std::string>* stripped,
                                std::map<std::string, uint64_t>* handed_back) {
  const int depth = AffordableDepth(limits.max_depth);
  absl::Status status;
  for (const ScanRoot& root : roots) {
    Walk w(Purpose::kStrip, root, since, limits, depth, stripped);
    status.Update(w.Run());
    if (handed_back != nullptr && w.handed_back() > 0) {
      (*handed_back)[OwnerName(root)] += w.handed_back();
    }
  }
  return status;
}

}  // namespace lazaret::cli::workspace
