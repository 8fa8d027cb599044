#include "services/common/persist_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/vocab/host_path.h"

namespace lazaret {

std::string PersistName(const std::string& directory) {
  std::string p = directory;
  while (!p.empty() && p[0] == '/') p.erase(0, 1);
  std::string out;
  for (unsigned char c : p) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  if (out.empty() || out == "." || out == "..") out = absl::StrCat("%2E", out);
  return out;
}

PersistPaths PersistPathsFor(const std::string& profile_dir, const std::string& directory) {
  const std::string name = PersistName(directory);
  const std::string inside = absl::StrCat(PersistMountPath(profile_dir), "/", name);
  return PersistPaths{absl::StrCat(inside, "_changes"), absl::StrCat(inside, "_work"),
                      absl::StrCat(profile_dir, "/", name, "_merged")};
}

std::string PersistImagePath(const std::string& profile_dir) {
  return absl::StrCat(profile_dir, "/", kPersistImageName);
}

std::string PersistMountPath(const std::string& profile_dir) {
  return absl::StrCat(profile_dir, "/", kPersistMountName);
}

PersistPaths UncappedPathsFor(const std::string& profile_dir, const std::string& directory) {
  const std::string base = absl::StrCat(profile_dir, "/", PersistName(directory));
  return PersistPaths{absl::StrCat(base, "_changes"), absl::StrCat(base, "_work"),
                      absl::StrCat(base, "_merged")};
}

absl::Status CheckPersistentDir(const std::string& d) {
  const std::string key = absl::StrCat("persistent_dirs entry '", d, "'");
  if (!vocab::IsCleanAbsolutePath(d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, " must be a clean absolute path inside the container"));
  }
  if (d == "/") {
    return absl::InvalidArgumentError(absl::StrCat(
        key, ": the whole root cannot persist; name the directories (/usr, /etc, /root, ...)"));
  }
  for (const char* r : {"/workspace", "/run/lazaret", "/proc", "/sys", "/dev"}) {
    if (vocab::IsAtOrUnder(d, r)) {
      return absl::FailedPreconditionError(
          absl::StrCat(key, ": ", r, " belongs to Lazaret or the kernel and cannot be persisted"));
    }
  }
  return absl::OkStatus();
}

}  // namespace lazaret
