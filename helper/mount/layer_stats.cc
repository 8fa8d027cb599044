#include "helper/mount/layer_stats.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/fs/dir.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

constexpr int kMaxDepth = 512;
constexpr char kWhiteoutPrefix[] = ".wh.";
constexpr char kOpaqueMarker[] = ".wh..wh..opq";

struct Walk {
  LayerStats stats;
  std::vector<std::string> changed;
  std::vector<std::string> deleted;
};

absl::Status WalkDir(const fs::DirFd& dir, const std::string& rel, int depth, Walk& w) {
  if (depth > kMaxDepth) {
    return absl::ResourceExhaustedError(absl::StrCat("upper layer nested deeper than ", kMaxDepth));
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
  for (const std::string& name : names) {
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string path = rel.empty() ? name : absl::StrCat(rel, "/", name);
    ++w.stats.files;
    if (S_ISDIR(st.st_mode)) {
      const int fd =
          openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;
      LAZ_RETURN_IF_ERROR(WalkDir(fs::DirFd::Adopt(fd), path, depth + 1, w));
      continue;
    }
    w.stats.bytes += static_cast<uint64_t>(st.st_size);
    if (name == kOpaqueMarker) continue;
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
      w.deleted.push_back(path);
    } else if (absl::StartsWith(name, kWhiteoutPrefix)) {
      const std::string target = name.substr(sizeof(kWhiteoutPrefix) - 1);
      w.deleted.push_back(rel.empty() ? target : absl::StrCat(rel, "/", target));
    } else {
      w.changed.push_back(path);
    }
  }
  return absl::OkStatus();
}

void Keep(std::vector<std::string>& all, std::vector<std::string>& out, uint64_t& total) {
  std::sort(all.begin(), all.end());
  total = all.size();
  if (all.size() > kMaxListedPaths) all.resize(kMaxListedPaths);
  out = std::move(all);
}

}  // namespace

absl::StatusOr<LayerStats> StatLayer(const fs::DirFd& upper) {
  Walk w;
  LAZ_RETURN_IF_ERROR(WalkDir(upper, "", 0, w));
  Keep(w.changed, w.stats.changed, w.stats.changed_total);
  Keep(w.deleted, w.stats.deleted, w.stats.deleted_total);
  return w.stats;
}

}  // namespace lazaret::mounthelper
