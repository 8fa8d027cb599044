#include "services/brokerd/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/path.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

// The file's directory: created with its parents, then a real directory of
// ours, owner-only.
absl::StatusOr<fs::DirFd> OpenLogDir(const std::string& dir) {
  LAZ_RETURN_IF_ERROR(fs::MakeDirs(dir, 0700).status());
  LAZ_ASSIGN_OR_RETURN(fs::DirFd fd, fs::DirFd::Open(dir));  // refuses a symlink
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", dir), errno);
  if (st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(dir, " belongs to uid ", st.st_uid,
                                                    ", not to this user: refusing to log there"));
  }
  if ((st.st_mode & 077) != 0 && fchmod(fd.get(), 0700) != 0) {
    return ErrnoStatus(absl::StrCat("chmod 0700 ", dir), errno);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::string> AuditLine(const pb::AuditRecord& record) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = false;
  std::string line;
  auto status = google::protobuf::util::MessageToJsonString(record, &line, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("audit record to JSON: ", status.message().as_string()));
  }
  if (line.find('\n') != std::string::npos) {
    return absl::InternalError("an audit record's JSON holds a newline");
  }
  return line;
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  if (!fs::IsCleanAbsolutePath(path) || path == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat("audit log '", path, "' is not a clean absolute path"));
  }
  const std::string dir = path.substr(0, path.rfind('/'));
  const std::string name = path.substr(path.rfind('/') + 1);
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir_fd, OpenLogDir(dir.empty() ? "/" : dir));
  fs::UniqueFd fd(openat(dir_fd.get(), name.c_str(),
                         O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600));
  if (!fd.valid()) {
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("audit log ", path, " is a symlink: refusing to follow it"));
    }
    return ErrnoStatus(absl::StrCat("open audit log ", path), errno);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("audit log ", path, " is not a file"));
  }
  if (st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat("audit log ", path, " belongs to uid ", st.st_uid, ", not to this user"));
  }
  if (st.st_nlink != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("audit log ", path, " has ", st.st_nlink, " links: refusing it"));
  }
  if ((st.st_mode & 077) != 0 && fchmod(fd.get(), 0600) != 0) {
    return ErrnoStatus(absl::StrCat("chmod 0600 ", path), errno);
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, std::move(fd)));
}

absl::Status AuditLog::Append(const pb::AuditRecord& record) {
  LAZ_ASSIGN_OR_RETURN(std::string line, AuditLine(record));
  line.push_back('\n');
  uint64_t mine = 0;
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = fd_.get();
    ssize_t n;
    do {
      n = write(fd, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoStatus(absl::StrCat("append to ", path_), errno);
    if (static_cast<size_t>(n) != line.size()) {
      // Never retried: a second write could interleave with another appender.
      return absl::DataLossError(
          absl::StrCat("append to ", path_, ": ", n, " of ", line.size(), " bytes written"));
    }
    mine = ++written_;
  }
  // Group commit: one fdatasync covers every line written before it began,
  // so appenders that queued behind a sync find their line already on disk.
  // Append still returns only once its own line is.
  std::lock_guard<std::mutex> sync(sync_mu_);
  if (synced_ >= mine) return absl::OkStatus();
  uint64_t covered;
  {
    std::lock_guard<std::mutex> lock(mu_);
    covered = written_;
  }
  if (fdatasync(fd) != 0) return ErrnoStatus(absl::StrCat("fdatasync ", path_), errno);
  synced_ = covered;
  return absl::OkStatus();
}

}  // namespace lazaret::brokerd
