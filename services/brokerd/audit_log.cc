#include "services/brokerd/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

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

// `name` in `dir` opened for appending, with the checks AuditLog::Open
// states. `path` is for messages.
absl::StatusOr<fs::UniqueFd> OpenLogFile(const fs::DirFd& dir, const std::string& name,
                                         const std::string& path) {
  fs::UniqueFd fd(openat(dir.get(), name.c_str(),
                         O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600));
  if (!fd.valid()) {
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("audit log ", path, " is a symlink: refusing to follow it; remove it"));
    }
    return ErrnoStatus(absl::StrCat("open audit log ", path), errno);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("audit log ", path, " is not a file; remove it"));
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
  return fd;
}

absl::StatusOr<std::string> ToJson(const pb::AuditRecord& record) {
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

// How far one step of CappedAuditLine cuts.
struct CutStep {
  size_t field_bytes;  // each string
  size_t argv_bytes;   // the words of one argv, together
  size_t argv_words;
};
constexpr CutStep kCutSteps[] = {{4096, 16384, 1024}, {512, 4096, 256}, {64, 512, 32}};

// `s` cut to at most `max` bytes of its own (at a UTF-8 boundary) plus the
// marker; recorded under `name`.
void Cut(pb::AuditRecord& r, const std::string& name, std::string* s, size_t max) {
  if (s->size() <= max) return;
  (*r.mutable_truncated_bytes())[name] = s->size();
  size_t keep = max;
  while (keep > 0 && (static_cast<unsigned char>((*s)[keep]) & 0xC0) == 0x80) --keep;
  s->resize(keep);
  s->append(kAuditCutMarker);
}

void CutArgv(pb::AuditRecord& r, const std::string& name,
             google::protobuf::RepeatedPtrField<std::string>* argv, const CutStep& step) {
  size_t total = 0;
  int kept = 0;
  for (; kept < argv->size() && static_cast<size_t>(kept) < step.argv_words; ++kept) {
    const size_t cut_size =
        std::min(argv->Get(kept).size(), step.field_bytes + sizeof(kAuditCutMarker) - 1);
    if (kept > 0 && total + cut_size > step.argv_bytes) break;
    Cut(r, absl::StrCat(name, "[", kept, "]"), argv->Mutable(kept), step.field_bytes);
    total += argv->Get(kept).size();
  }
  if (kept < argv->size()) {
    (*r.mutable_truncated_bytes())[absl::StrCat(name, "[]")] = argv->size() - kept;
    argv->DeleteSubrange(kept, argv->size() - kept);
    argv->Add(kAuditCutMarker);
  }
}

pb::AuditRecord CutRecord(const pb::AuditRecord& original, const CutStep& step) {
  pb::AuditRecord r = original;
  r.clear_truncated_bytes();
  const size_t n = step.field_bytes;
  Cut(r, "time", r.mutable_time(), n);
  Cut(r, "session_id", r.mutable_session_id(), n);
  Cut(r, "profile", r.mutable_profile(), n);
  Cut(r, "workspace", r.mutable_workspace(), n);
  Cut(r, "request_id", r.mutable_request_id(), n);
  Cut(r, "command", r.mutable_command(), n);
  Cut(r, "binary", r.mutable_binary(), n);
  Cut(r, "cwd", r.mutable_cwd(), n);
  Cut(r, "justification", r.mutable_justification(), n);
  Cut(r, "auto_approve_entry", r.mutable_auto_approve_entry(), n);
  Cut(r, "reason", r.mutable_reason(), n);
  if (r.has_approver()) {
    pb::Approver* a = r.mutable_approver();
    pb::Approver kept;
    kept.set_kind(a->kind());
    kept.set_name(a->name());
    kept.set_tty(a->tty());
    *a = kept;  // only the fields the cut knows; anything else is dropped
    Cut(r, "approver.name", a->mutable_name(), n);
    Cut(r, "approver.tty", a->mutable_tty(), n);
  }
  CutArgv(r, "argv", r.mutable_argv(), step);
  CutArgv(r, "ran_argv", r.mutable_ran_argv(), step);
  return r;
}

absl::StatusOr<uint64_t> ParseSize(const char* name, std::string v) {
  uint64_t unit = 1;
  if (!v.empty()) {
    switch (absl::ascii_toupper(v.back())) {
      case 'K':
        unit = 1ull << 10;
        break;
      case 'M':
        unit = 1ull << 20;
        break;
      case 'G':
        unit = 1ull << 30;
        break;
      default:
        break;
    }
    if (unit != 1) v.pop_back();
  }
  uint64_t n = 0;
  if (v.empty() || v[0] == '+' || !absl::SimpleAtoi(v, &n) || n > (UINT64_MAX / unit)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a number of bytes (e.g. 16M, 1048576)"));
  }
  return n * unit;
}

}  // namespace

absl::StatusOr<AuditLogOptions> AuditLogOptionsFromEnv(const char* max_bytes, const char* files) {
  AuditLogOptions o;
  if (max_bytes != nullptr && *max_bytes != '\0') {
    LAZ_ASSIGN_OR_RETURN(o.max_file_bytes, ParseSize("LAZARET_AUDIT_MAX_BYTES", max_bytes));
    if (o.max_file_bytes < kMinAuditFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("LAZARET_AUDIT_MAX_BYTES: ", o.max_file_bytes, " is below the smallest ",
                       "audit file, ", kMinAuditFileBytes, " bytes (two of the longest lines)"));
    }
  }
  if (files != nullptr && *files != '\0') {
    uint32_t n = 0;
    if (files[0] == '+' || !absl::SimpleAtoi(files, &n) || n < 1 || n > kMaxAuditFiles) {
      return absl::InvalidArgumentError(
          absl::StrCat("LAZARET_AUDIT_FILES: not a number of files from 1 to ", kMaxAuditFiles));
    }
    o.max_files = n;
  }
  return o;
}

absl::Status AppendThenRun(AuditLog& log, const pb::AuditRecord& start,
                           absl::FunctionRef<void()> run) {
  LAZ_RETURN_IF_ERROR(log.Append(start));
  run();
  return absl::OkStatus();
}

absl::StatusOr<std::string> AuditLine(const pb::AuditRecord& record) { return ToJson(record); }

absl::StatusOr<std::string> CappedAuditLine(const pb::AuditRecord& record) {
  LAZ_ASSIGN_OR_RETURN(std::string line, ToJson(record));
  if (line.size() < kAuditLineCap) return line;
  for (const CutStep& step : kCutSteps) {
    LAZ_ASSIGN_OR_RETURN(line, ToJson(CutRecord(record, step)));
    if (line.size() < kAuditLineCap) return line;
  }
  return absl::InternalError(
      absl::StrCat("an audit record is ", line.size(), " bytes even with every field cut"));
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path,
                                                         AuditLogOptions options) {
  if (!vocab::IsCleanAbsolutePath(path) || path == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat("audit log '", path, "' is not a clean absolute path"));
  }
  if (options.max_file_bytes < kMinAuditFileBytes || options.max_files < 1 ||
      options.max_files > kMaxAuditFiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit log limits out of range: ", options.max_file_bytes, " bytes x ",
                     options.max_files, " files"));
  }
  const std::string dir = path.substr(0, path.rfind('/'));
  const std::string name = path.substr(path.rfind('/') + 1);
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir_fd, OpenLogDir(dir.empty() ? "/" : dir));
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd fd, OpenLogFile(dir_fd, name, path));
  return std::unique_ptr<AuditLog>(
      new AuditLog(path, name, options, std::move(dir_fd), std::move(fd)));
}

absl::Status AuditLog::SyncBeforeSwitchLocked() {
  if (fdatasync(fd_->get()) != 0) return ErrnoStatus(absl::StrCat("fdatasync ", path_), errno);
  durable_ = written_;
  return absl::OkStatus();
}

absl::Status AuditLog::RotateLocked() {
  LAZ_RETURN_IF_ERROR(SyncBeforeSwitchLocked());
  // Oldest first, so that no rename overwrites a file still to be moved;
  // the last one replaces (drops) the oldest kept.
  auto numbered = [&](uint32_t k) { return k == 0 ? name_ : absl::StrCat(name_, ".", k); };
  if (options_.max_files == 1) {
    if (unlinkat(dir_.get(), name_.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("rotating ", path_, ": remove"), errno);
    }
  }
  for (uint32_t k = options_.max_files - 1; k >= 1; --k) {
    const std::string from = numbered(k - 1), to = numbered(k);
    if (renameat(dir_.get(), from.c_str(), dir_.get(), to.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("rotating ", path_, ": rename ", from, " to ", to), errno);
    }
  }
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd fd, OpenLogFile(dir_, name_, path_));
  fd_ = std::make_shared<fs::UniqueFd>(std::move(fd));
  // The renames are durable before a line in the new file can be.
  if (fsync(dir_.get()) != 0) return ErrnoStatus(absl::StrCat("fsync directory of ", path_), errno);
  return absl::OkStatus();
}

absl::Status AuditLog::PrepareLocked(size_t bytes) {
  struct stat open_st {
  }, named_st{};
  if (fstat(fd_->get(), &open_st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path_), errno);
  const bool same = fstatat(dir_.get(), name_.c_str(), &named_st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    named_st.st_dev == open_st.st_dev && named_st.st_ino == open_st.st_ino;
  if (!same) {
    LAZ_RETURN_IF_ERROR(SyncBeforeSwitchLocked());
    LAZ_ASSIGN_OR_RETURN(fs::UniqueFd fd, OpenLogFile(dir_, name_, path_));
    fd_ = std::make_shared<fs::UniqueFd>(std::move(fd));
    if (fstat(fd_->get(), &open_st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path_), errno);
  }
  if (open_st.st_size > 0 &&
      static_cast<uint64_t>(open_st.st_size) + bytes > options_.max_file_bytes) {
    return RotateLocked();
  }
  return absl::OkStatus();
}

absl::Status AuditLog::Append(const pb::AuditRecord& record) {
  LAZ_ASSIGN_OR_RETURN(std::string line, CappedAuditLine(record));
  line.push_back('\n');
  uint64_t mine = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LAZ_RETURN_IF_ERROR(PrepareLocked(line.size()));
    ssize_t n;
    do {
      n = write(fd_->get(), line.data(), line.size());
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
  // Append still returns only once its own line is. A line written to a
  // file that was switched since was synced by the switch (durable_).
  std::lock_guard<std::mutex> sync(sync_mu_);
  if (synced_ >= mine) return absl::OkStatus();
  uint64_t covered;
  std::shared_ptr<fs::UniqueFd> fd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (durable_ >= mine) return absl::OkStatus();
    covered = written_;
    fd = fd_;
  }
  if (fdatasync(fd->get()) != 0) return ErrnoStatus(absl::StrCat("fdatasync ", path_), errno);
  synced_ = covered;
  return absl::OkStatus();
}

}  // namespace lazaret::brokerd
