#include "services/sessiond/workspace/roots.h"

#include "absl/strings/str_cat.h"

namespace lazaret::cli::workspace {

bool NotBefore(const timespec& t, const timespec& since) {
  return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
}

std::string ProcFd(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

std::string Join(const std::string& root, const std::string& rel) {
  if (rel.empty() || rel == ".") return root;
  return absl::StrCat(root, "/", rel);
}

}  // namespace lazaret::cli::workspace
