#include "services/configd/trust_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/fs/lock.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"

namespace lazaret::config {
namespace {

constexpr char kHeader[] =
    "# Workspace files trusted with `lazaret trust`: <sha256> <canonical path>.\n"
    "# Edit with `lazaret trust` / `lazaret trust --revoke`.\n";
constexpr size_t kMaxStoreBytes = 4 << 20;

bool IsHex64(absl::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Concurrent `lazaret trust` runs serialise on "<store>.lock", so that none
// loses another's entries.
std::string StoreLockPath(const std::string& store) { return store + ".lock"; }

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  fs::Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

absl::StatusOr<std::vector<TrustStore::Entry>> TrustStore::Read() const {
  std::vector<Entry> entries;
  const size_t slash = path_.rfind('/');
  absl::StatusOr<fs::DirFd> dir = fs::DirFd::OpenTrusted(slash == 0 ? "/" : path_.substr(0, slash));
  if (!dir.ok() && absl::IsNotFound(dir.status())) return entries;
  struct stat st {};
  absl::StatusOr<fs::UniqueFd> fd =
      dir.ok() ? fs::OpenRegularFileAt(*dir, path_.substr(slash + 1), &st) : dir.status();
  if (!fd.ok() && absl::IsNotFound(fd.status())) return entries;
  if (fd.ok() ? (st.st_uid != geteuid() || (st.st_mode & 022) != 0 ||
                 static_cast<size_t>(st.st_size) > kMaxStoreBytes)
              : absl::IsFailedPrecondition(fd.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the trust store ", path_,
        " is not a regular file owned by you without group/other "
        "write access; nothing is trusted until it is fixed (remove it and trust again)"));
  }
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat("opening the trust store: ", fd.status().message()));
  }
  LAZ_ASSIGN_OR_RETURN(std::string text, fs::ReadAll(fd->get(), kMaxStoreBytes, path_));
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const size_t sp = line.find(' ');
    if (sp == absl::string_view::npos) continue;
    absl::string_view digest = line.substr(0, sp);
    absl::string_view file = line.substr(sp + 1);
    if (!IsHex64(digest) || file.empty() || file[0] != '/') continue;  // ignore damage
    entries.push_back({std::string(digest), std::string(file)});
  }
  return entries;
}

absl::Status TrustStore::Write(const std::vector<Entry>& entries) {
  std::string text = kHeader;
  for (const Entry& e : entries) absl::StrAppend(&text, e.sha256, " ", e.file, "\n");
  return fs::WriteFileAtomic(path_, text, 0600, fs::Durability::kSync);
}

absl::StatusOr<bool> TrustStore::IsTrusted(const std::string& canonical_file,
                                           const std::string& sha256) const {
  absl::StatusOr<std::vector<Entry>> entries = Read();
  if (!entries.ok()) return entries.status();
  return std::any_of(entries->begin(), entries->end(), [&](const Entry& e) {
    return e.file == canonical_file && e.sha256 == sha256;
  });
}

absl::Status TrustStore::Trust(const std::string& canonical_file, const std::string& sha256) {
  if (canonical_file.empty() || canonical_file[0] != '/' ||
      canonical_file.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot record \"", canonical_file, "\": not an absolute one-line path"));
  }
  if (!IsHex64(sha256)) return absl::InvalidArgumentError("not a sha256 hex digest");
  const std::string dir = path_.substr(0, path_.rfind('/'));
  if (absl::Status st = fs::MakeDirs(dir, 0700).status(); !st.ok()) return st;
  absl::StatusOr<fs::FileLock> lock = fs::FileLock::Acquire(StoreLockPath(path_), {});
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<Entry>> entries = Read();
  if (!entries.ok()) {
    if (!absl::IsFailedPrecondition(entries.status())) return entries.status();
    entries = std::vector<Entry>();  // an unsafe store is replaced by a safe one
  }
  entries->erase(std::remove_if(entries->begin(), entries->end(),
                                [&](const Entry& e) { return e.file == canonical_file; }),
                 entries->end());
  entries->push_back({sha256, canonical_file});
  return Write(*entries);
}

absl::Status TrustStore::Revoke(const std::string& canonical_file) {
  struct stat st {};
  if (lstat(path_.c_str(), &st) != 0 && errno == ENOENT) {
    return absl::NotFoundError(absl::StrCat(canonical_file, " is not trusted"));
  }
  absl::StatusOr<fs::FileLock> lock = fs::FileLock::Acquire(StoreLockPath(path_), {});
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<Entry>> entries = Read();
  if (!entries.ok()) return entries.status();
  const size_t before = entries->size();
  entries->erase(std::remove_if(entries->begin(), entries->end(),
                                [&](const Entry& e) { return e.file == canonical_file; }),
                 entries->end());
  if (entries->size() == before) {
    return absl::NotFoundError(absl::StrCat(canonical_file, " is not trusted"));
  }
  return Write(*entries);
}

}  // namespace lazaret::config
