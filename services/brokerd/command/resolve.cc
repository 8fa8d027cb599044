#include "services/brokerd/command/resolve.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::brokerd::command {
namespace {

bool IsExecutableFile(const struct stat& st) {
  return S_ISREG(st.st_mode) && (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
}

// `name` quoted for an error message: only printable ASCII is shown.
std::string QuotedName(absl::string_view name) {
  std::string out = "'";
  for (char c : name.substr(0, 64)) {
    out.push_back(c >= 0x21 && c <= 0x7E ? c : '?');
  }
  if (name.size() > 64) out += "...";
  return out + "'";
}

}  // namespace

absl::Status CheckCommandName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("argv[0] must be a command name, not empty");
  if (name.find('/') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("argv[0] must be a command name, not a path (", QuotedName(name), ")"));
  }
  for (char c : name) {
    if (c < 0x21 || c > 0x7E) {
      return absl::InvalidArgumentError(
          absl::StrCat("argv[0] must be a command name of printable ASCII without spaces (",
                       QuotedName(name), ")"));
    }
  }
  if (name.front() == '-' || name.front() == '.') {
    return absl::InvalidArgumentError(absl::StrCat(
        "argv[0] must be a command name, not starting with '-' or '.' (", QuotedName(name), ")"));
  }
  if (name.find('=') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "argv[0] must be a command name, not an assignment (VAR=value) (", QuotedName(name), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedBinary> ResolveCommandName(absl::string_view name,
                                                  absl::string_view search_path) {
  if (absl::Status s = CheckCommandName(name); !s.ok()) return s;
  for (absl::string_view dir : absl::StrSplit(search_path, ':')) {
    if (dir.empty() || dir.front() != '/') continue;
    const std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st {};
    if (stat(candidate.c_str(), &st) != 0 || !IsExecutableFile(st)) continue;
    std::unique_ptr<char, decltype(&free)> real(realpath(candidate.c_str(), nullptr), &free);
    if (real == nullptr) continue;
    // The identity is taken from the canonical path, the one that is run.
    if (stat(real.get(), &st) != 0 || !IsExecutableFile(st)) continue;
    return ResolvedBinary{real.get(), st.st_dev, st.st_ino};
  }
  return absl::NotFoundError(
      absl::StrCat(QuotedName(name), " is not a command on the host's PATH (", search_path, ")"));
}

}  // namespace lazaret::brokerd::command
