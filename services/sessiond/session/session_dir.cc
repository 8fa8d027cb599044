#include "services/sessiond/session/session_dir.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

constexpr char kLockFile[] = "lock";
constexpr char kRecordFile[] = "session.json";
// A record is a few hundred bytes.
constexpr uint64_t kMaxRecordBytes = 1 << 20;

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
  m.set_explicit_config(r.explicit_config);
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
  r.explicit_config = m.explicit_config();
  return r;
}

absl::StatusOr<std::unique_ptr<SessionDir>> SessionDir::Create(const std::string& runtime_dir,
                                                               const SessionRecord& record,
                                                               bool spare) {
  if (!IsValidSessionId(record.id)) return absl::InvalidArgumentError("bad session id");
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(SessionsDir(runtime_dir)).status());
  const std::string path = SessionPath(runtime_dir, record.id);
  if (mkdir(path.c_str(), 0700) != 0) {
    return ErrnoStatus(absl::StrCat("creating session directory ", path), errno);
  }
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(path).status());
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir_fd, fs::DirFd::Open(path));
  // Before the lock: nobody sees a live owner of a spare's directory
  // without its marker.
  if (spare) LAZ_RETURN_IF_ERROR(fs::WriteNewFileAt(dir_fd, kSpareMarker, "", 0600));
  fs::LockOptions lock_options;
  lock_options.wait = false;
  lock_options.create_new = true;
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(path, "/", kLockFile), lock_options));
  std::unique_ptr<SessionDir> dir(new SessionDir(path, std::move(dir_fd), std::move(lock)));
  LAZ_RETURN_IF_ERROR(fs::WriteNewFileAt(dir->dir_, kRecordFile, SessionRecordJson(record), 0600));
  if (mkdirat(dir->dir_.get(), "router", 0700) != 0) {
    return ErrnoStatus(absl::StrCat("creating ", dir->router_dir()), errno);
  }
  return dir;
}

SessionDir::~SessionDir() { (void)Remove(); }

absl::Status SessionDir::WriteEnvFile(const std::string& text) {
  return fs::WriteNewFileAt(dir_, "env", text, 0600);
}

absl::Status SessionDir::WriteTraceConfig(const std::string& text) {
  return fs::WriteNewFileAt(dir_, "trace.json", text, 0600);
}

absl::Status SessionDir::Adopt() {
  if (unlinkat(dir_.get(), kSpareMarker, 0) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("removing ", path_, "/", kSpareMarker,
                                            " failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SessionDir::RemoveEnvFile() {
  if (unlinkat(dir_.get(), "env", 0) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("removing ", env_file(), " failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SessionDir::Remove() {
  if (removed_) return absl::OkStatus();
  removed_ = true;
  absl::Status s = fs::RemoveTree(path_);
  // The lock goes last: until here, `clean` sees a live owner and keeps off.
  lock_.reset();
  return s;
}

bool SessionOwnerAlive(const std::string& path) {
  return fs::IsLockHeld(absl::StrCat(path, "/", kLockFile));
}

absl::StatusOr<std::vector<FoundSession>> FindSessionDirs(const std::string& runtime_dir) {
  std::vector<FoundSession> out;
  const std::string dir = SessionsDir(runtime_dir);
  absl::StatusOr<fs::DirFd> sessions = fs::DirFd::Open(dir);
  if (!sessions.ok()) {
    if (absl::IsNotFound(sessions.status())) return out;
    return sessions.status();
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(*sessions));
  for (const std::string& name : names) {
    if (!IsValidSessionId(name)) continue;
    FoundSession f;
    f.id = name;
    f.path = absl::StrCat(dir, "/", name);
    f.owner_alive = SessionOwnerAlive(f.path);
    if (absl::StatusOr<fs::DirFd> session = sessions->OpenChild(name); session.ok()) {
      struct stat st {};
      f.spare = fstatat(session->get(), kSpareMarker, &st, AT_SYMLINK_NOFOLLOW) == 0;
      if (auto text = fs::ReadRegularFileAt(*session, kRecordFile, kMaxRecordBytes); text.ok()) {
        if (auto rec = ParseSessionRecord(*text); rec.ok() && rec->id == name) {
          f.record = *rec;
          f.has_record = true;
        }
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

absl::StatusOr<std::string> ChooseLiveSession(const std::vector<FoundSession>& dirs,
                                              const std::string& arg) {
  std::vector<const FoundSession*> live;
  for (const FoundSession& d : dirs) {
    if (d.owner_alive && !d.spare && absl::StartsWith(d.id, arg)) live.push_back(&d);
  }
  if (live.size() == 1) return live[0]->id;
  if (live.empty()) {
    if (arg.empty()) return absl::NotFoundError("no live session (lazaret run starts one)");
    return absl::NotFoundError(absl::StrCat("no live session '", arg, "' (see: lazaret ps)"));
  }
  std::string list;
  for (const FoundSession* d : live) {
    absl::StrAppend(&list, "\n  ", d->id, "  profile ",
                    d->has_record ? d->record.profile : std::string("?"), "  ",
                    d->has_record ? d->record.workspace : std::string("-"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(arg.empty() ? "several sessions are live; name one"
                               : absl::StrCat("'", arg,
                                              "' matches several live sessions; give "
                                              "more of the id"),
                   ":", list));
}

}  // namespace lazaret::cli::session
