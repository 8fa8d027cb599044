#include "clients/lazaret/escalation/endpoint.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/status_util.h"
#include "services/vocab/escape.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::escalation {
namespace {

absl::Status Refuse(const std::string& what) { return absl::FailedPreconditionError(what); }

// A real directory (opened without following a symlink), owned by `owner`,
// mode exactly 0700. The descriptor is what the caller checks further.
absl::StatusOr<fs::DirFd> OpenOwnDirectory(const std::string& path, const char* what, uid_t owner) {
  if (!vocab::IsCleanAbsolutePath(path)) {
    return Refuse(absl::StrCat(what, " \"", vocab::EscapeForTerminal(path.substr(0, 256)),
                               "\" is not a clean absolute path"));
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat(what, " ", path), errno);
  if (!S_ISDIR(st.st_mode)) {
    return Refuse(absl::StrCat(what, " ", path, " is not a directory (",
                               S_ISLNK(st.st_mode) ? "a symlink" : "another file type", ")"));
  }
  absl::StatusOr<fs::DirFd> dir = fs::DirFd::Open(path);
  if (!dir.ok()) return dir.status();
  if (fstat(dir->get(), &st) != 0) return ErrnoStatus(absl::StrCat(what, " ", path), errno);
  if (st.st_uid != owner) {
    return Refuse(absl::StrCat(what, " ", path, " is owned by uid ", st.st_uid, ", not ", owner));
  }
  if ((st.st_mode & 07777) != 0700) {
    return Refuse(absl::StrCat(what, " ", path, " has mode ",
                               absl::StrFormat("%04o", st.st_mode & 07777), ", not 0700"));
  }
  return dir;
}

absl::Status CheckSocketDir(const std::string& path, uid_t owner) {
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, OpenOwnDirectory(path, "the socket directory", owner));
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
  if (names.size() != 1 || names[0] != kEndpointSocketName) {
    return Refuse(absl::StrCat(
        "the socket directory ", path, " must hold only ", kEndpointSocketName, "; it holds: ",
        names.empty() ? "nothing" : vocab::EscapeForTerminal(absl::StrJoin(names, " "))));
  }
  struct stat st {};
  if (fstatat(dir.get(), kEndpointSocketName, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(absl::StrCat(path, "/", kEndpointSocketName), errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Refuse(absl::StrCat(path, "/", kEndpointSocketName, " is not a socket"));
  }
  return absl::OkStatus();
}

// The certificate directory is <root>/<session id>, and the root is the
// broker's own private directory (a random name under /dev/shm the broker
// made and holds): checked so that no directory of another user, nor one
// others can enter, is ever mounted as the sandbox's certificates.
absl::Status CheckCertsDir(const std::string& path, const std::string& session_id, uid_t owner) {
  if (!vocab::IsCleanAbsolutePath(path) || path.size() <= session_id.size() + 1 ||
      path.compare(path.size() - session_id.size() - 1, std::string::npos,
                   absl::StrCat("/", session_id)) != 0) {
    return Refuse(
        absl::StrCat("the certificate directory \"", vocab::EscapeForTerminal(path.substr(0, 256)),
                     "\" is not a clean absolute path ending in the session id ", session_id));
  }
  const std::string root = path.substr(0, path.size() - session_id.size() - 1);
  if (!root.empty()) {
    LAZ_RETURN_IF_ERROR(OpenOwnDirectory(root, "the certificate root", owner).status());
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, OpenOwnDirectory(path, "the certificate directory", owner));
  struct statfs sfs {};
  if (fstatfs(dir.get(), &sfs) != 0) return ErrnoStatus(absl::StrCat("statfs ", path), errno);
  if (sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC) {
    return Refuse(absl::StrCat("the certificate directory ", path,
                               " is not on a memory filesystem (tmpfs or ramfs)"));
  }
  for (const char* name : kCertificateFiles) {
    struct stat st {};
    if (fstatat(dir.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoStatus(absl::StrCat(path, "/", name), errno);
    }
    if (!S_ISREG(st.st_mode))
      return Refuse(absl::StrCat(path, "/", name, " is not a regular file"));
    if (st.st_uid != owner || (st.st_mode & 077) != 0) {
      return Refuse(absl::StrCat(path, "/", name, " is not owned by uid ", owner,
                                 " with no access for others"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string SessionSocketDir(const std::string& profile_socket_dir, const std::string& session_id) {
  return absl::StrCat(profile_socket_dir, "/", session_id);
}

std::string ExpectedCertsDir(uid_t uid, const std::string& session_id) {
  return absl::StrCat("/dev/shm/lazaret-", uid, ".XXXXXX/", session_id);
}

absl::StatusOr<CheckedEndpoint> CheckEndpoint(const ::lazaret::broker::v1::Endpoint& answer,
                                              const std::string& session_id,
                                              const std::string& expected_socket_dir, uid_t owner) {
  if (answer.session_id() != session_id) {
    return Refuse(absl::StrCat("lazaret-brokerd answered for session \"",
                               vocab::EscapeForTerminal(answer.session_id().substr(0, 64)),
                               "\", not ", session_id));
  }
  if (answer.socket_dir() != expected_socket_dir) {
    return Refuse(absl::StrCat("lazaret-brokerd named the socket directory \"",
                               vocab::EscapeForTerminal(answer.socket_dir().substr(0, 256)),
                               "\", not ", expected_socket_dir));
  }
  LAZ_RETURN_IF_ERROR(CheckSocketDir(answer.socket_dir(), owner));
  LAZ_RETURN_IF_ERROR(CheckCertsDir(answer.certs_dir(), session_id, owner));
  CheckedEndpoint e;
  e.session_id_ = answer.session_id();
  e.socket_dir_ = answer.socket_dir();
  e.certs_dir_ = answer.certs_dir();
  e.not_after_ = answer.certificate_not_after();
  return e;
}

}  // namespace lazaret::cli::escalation
