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
#include "services/common/sha256.h"
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

// Creates each missing component of `dir` below an existing ancestor with
// mode 0700.
absl::Status MakeDirs(const std::string& dir) {
  std::string partial;
  for (absl::string_view part : absl::StrSplit(dir, '/', absl::SkipEmpty())) {
    absl::StrAppend(&partial, "/", part);
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", partial), errno);
    }
  }
  return absl::OkStatus();
}

// Holds an exclusive flock on "<store>.lock" so concurrent `lazaret trust`
// runs do not lose each other's entries.
class StoreLock {
 public:
  static absl::StatusOr<StoreLock> Acquire(const std::string& store) {
    const std::string path = store + ".lock";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", path), errno);
    if (flock(fd, LOCK_EX) != 0) {
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("locking ", path), e);
    }
    return StoreLock(fd);
  }
  StoreLock(StoreLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  StoreLock& operator=(StoreLock&&) = delete;
  ~StoreLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

absl::StatusOr<std::vector<TrustStore::Entry>> TrustStore::Read() const {
  std::vector<Entry> entries;
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return entries;
    return ErrnoStatus(absl::StrCat("opening the trust store ", path_), errno);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 022) != 0 || static_cast<size_t>(st.st_size) > kMaxStoreBytes) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "the trust store ", path_,
        " is not a regular file owned by you without group/other "
        "write access; nothing is trusted until it is fixed (remove it and trust again)"));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = read(fd, text.data() + got, text.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  text.resize(got);
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
  const std::string tmp = absl::StrCat(path_, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("creating ", tmp), errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoStatus(absl::StrCat("writing ", tmp), e);
    }
    done += static_cast<size_t>(w);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(absl::StrCat("writing ", tmp), e);
  }
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(absl::StrCat("replacing ", path_), e);
  }
  return absl::OkStatus();
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
  if (absl::Status st = MakeDirs(dir); !st.ok()) return st;
  absl::StatusOr<StoreLock> lock = StoreLock::Acquire(path_);
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
  absl::StatusOr<StoreLock> lock = StoreLock::Acquire(path_);
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
