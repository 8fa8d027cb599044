#include "services/vocab/host_path.h"

#include "absl/strings/str_cat.h"

namespace lazaret::vocab {

bool IsCleanAbsolutePath(absl::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  if (path == "/") return true;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == absl::string_view::npos) end = path.size();
    const absl::string_view seg = path.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

absl::Status CheckOneComponent(absl::string_view name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(absl::string_view("/\0", 2)) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not one path component"));
  }
  return absl::OkStatus();
}

bool IsAtOrUnder(absl::string_view path, absl::string_view dir) {
  if (dir == "/") return !path.empty() && path[0] == '/';
  return path == dir ||
         (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

std::string Dirname(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

std::string Basename(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

}  // namespace lazaret::vocab
