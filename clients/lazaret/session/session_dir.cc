#include "clients/lazaret/session/session_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

constexpr char kLockFile[] = "lock";
constexpr char kRecordFile[] = "session.json";

absl::Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(absl::StrCat("creating ", path), errno);
  // The umask must not widen or narrow what was asked for.
  if (fchmod(fd, mode) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("chmod ", path), e);
  }
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("writing ", path), e);
    }
    off += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return ErrnoStatus(absl::StrCat("closing ", path), errno);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(int dirfd, const char* name) {
  const int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", name), errno);
  std::string out;
  char buf[4096];
  while (out.size() < (1 << 20)) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, n);
  }
  close(fd);
  return out;
}

// Removes everything below dirfd, never following a symlink.
absl::Status RemoveContents(int dirfd, const std::string& where) {
  DIR* d = fdopendir(dup(dirfd));
  if (d == nullptr) return ErrnoStatus(absl::StrCat("listing ", where), errno);
  absl::Status status;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  closedir(d);
  for (const std::string& name : names) {
    struct stat st {};
    if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        status.Update(ErrnoStatus(absl::StrCat("opening ", where, "/", name), errno));
        continue;
      }
      status.Update(RemoveContents(sub, absl::StrCat(where, "/", name)));
      close(sub);
      if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        status.Update(ErrnoStatus(absl::StrCat("removing ", where, "/", name), errno));
      }
    } else if (unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
      status.Update(ErrnoStatus(absl::StrCat("removing ", where, "/", name), errno));
    }
  }
  return status;
}

}  // namespace

std::string NewSessionId() {
  unsigned char bytes[6];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::abort();  // no entropy at all: nothing sensible to do
    }
    got += static_cast<size_t>(n);
  }
  std::string id;
  for (unsigned char b : bytes) absl::StrAppendFormat(&id, "%02x", b);
  return id;
}

std::string SessionsDir(const std::string& runtime_dir) {
  return absl::StrCat(runtime_dir, "/sessions");
}
std::string SessionPath(const std::string& runtime_dir, const std::string& id) {
  return absl::StrCat(SessionsDir(runtime_dir), "/", id);
}

std::string SessionRecordJson(const SessionRecord& r) {
  ::lazaret::common::v1::SessionRecord m;
  m.set_id(r.id);
  m.set_profile(r.profile);
  m.set_workspace(r.workspace);
  m.set_git_state_dir(r.git_state_dir);
  m.set_pid(r.pid);
  m.set_started_unix(r.started_unix);
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  // Serialising a message built here cannot fail; an empty string would be
  // refused by ParseSessionRecord, never misread.
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

absl::StatusOr<SessionRecord> ParseSessionRecord(const std::string& text) {
  ::lazaret::common::v1::SessionRecord m;
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  if (!google::protobuf::util::JsonStringToMessage(text, &m, o).ok()) {
    return absl::InvalidArgumentError("session.json is not a session record");
  }
  if (!IsValidSessionId(m.id()) || m.profile().empty() || m.workspace().empty() ||
      m.git_state_dir().empty() || m.pid() <= 0 || m.started_unix() <= 0) {
    return absl::InvalidArgumentError("session.json lacks a field or has a wrong value");
  }
  SessionRecord r;
  r.id = m.id();
  r.profile = m.profile();
  r.workspace = m.workspace();
  r.git_state_dir = m.git_state_dir();
  r.pid = static_cast<pid_t>(m.pid());
  r.started_unix = m.started_unix();
  return r;
}

absl::StatusOr<std::unique_ptr<SessionDir>> SessionDir::Create(const std::string& runtime_dir,
                                                               const SessionRecord& record) {
  if (!IsValidSessionId(record.id)) return absl::InvalidArgumentError("bad session id");
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(SessionsDir(runtime_dir)).status());
  const std::string path = SessionPath(runtime_dir, record.id);
  if (mkdir(path.c_str(), 0700) != 0) {
    return ErrnoStatus(absl::StrCat("creating session directory ", path), errno);
  }
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(path).status());
  const std::string lock_path = absl::StrCat(path, "/", kLockFile);
  const int lock_fd =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd < 0) return ErrnoStatus(absl::StrCat("creating ", lock_path), errno);
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    close(lock_fd);
    return ErrnoStatus(absl::StrCat("locking ", lock_path), e);
  }
  std::unique_ptr<SessionDir> dir(new SessionDir(path, lock_fd));
  LAZ_RETURN_IF_ERROR(
      WriteNewFile(absl::StrCat(path, "/", kRecordFile), SessionRecordJson(record), 0600));
  if (mkdir(dir->router_dir().c_str(), 0700) != 0) {
    return ErrnoStatus(absl::StrCat("creating ", dir->router_dir()), errno);
  }
  return dir;
}

SessionDir::~SessionDir() { (void)Remove(); }

absl::Status SessionDir::WriteEnvFile(const std::string& text) {
  return WriteNewFile(env_file(), text, 0600);
}

absl::Status SessionDir::Remove() {
  if (removed_) return absl::OkStatus();
  removed_ = true;
  absl::Status s = RemoveSessionTree(path_);
  // The lock goes last: until here, `clean` sees a live owner and keeps off.
  if (lock_fd_ >= 0) close(lock_fd_);
  lock_fd_ = -1;
  return s;
}

bool SessionOwnerAlive(const std::string& path) {
  const std::string lock_path = absl::StrCat(path, "/", kLockFile);
  const int fd = open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

absl::Status RemoveSessionTree(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(absl::StrCat("opening ", path), errno);
  }
  absl::Status s = RemoveContents(fd, path);
  close(fd);
  if (rmdir(path.c_str()) != 0 && errno != ENOENT) {
    s.Update(ErrnoStatus(absl::StrCat("removing ", path), errno));
  }
  return s;
}

absl::StatusOr<std::vector<FoundSession>> FindSessionDirs(const std::string& runtime_dir) {
  std::vector<FoundSession> out;
  const std::string dir = SessionsDir(runtime_dir);
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ENOENT) return out;
    return ErrnoStatus(absl::StrCat("opening ", dir), errno);
  }
  DIR* d = fdopendir(dfd);
  if (d == nullptr) {
    const int e = errno;
    close(dfd);
    return ErrnoStatus(absl::StrCat("listing ", dir), e);
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!IsValidSessionId(name)) continue;
    FoundSession f;
    f.id = name;
    f.path = absl::StrCat(dir, "/", name);
    f.owner_alive = SessionOwnerAlive(f.path);
    const int sfd = openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd >= 0) {
      if (auto text = ReadSmallFile(sfd, kRecordFile); text.ok()) {
        if (auto rec = ParseSessionRecord(*text); rec.ok() && rec->id == name) {
          f.record = *rec;
          f.has_record = true;
        }
      }
      close(sfd);
    }
    out.push_back(std::move(f));
  }
  closedir(d);
  return out;
}

}  // namespace lazaret::cli::session
