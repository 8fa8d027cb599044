// The escalation audit log: append-only JSONL, one AuditRecord (protobuf
// JSON, proto field names) per line. Runs in lazaret-brokerd, unprivileged,
// as the user. The records are the broker's own; their strings may come
// from a sandbox, but protobuf's JSON writer escapes every control
// character, so a record is always exactly one line.
//
// Bounded: a line is at most kAuditLineCap bytes (long fields are cut, with
// kAuditCutMarker and their full length in the record), and the log is at
// most max_files files of max_file_bytes each: when audit.jsonl would grow
// past its size it is renamed audit.jsonl.1 (.1 to .2, ..., the oldest
// dropped) and a new one begun. So a flood of requests, refused or not,
// never holds more than max_files x max_file_bytes of disk.
//
// Durable: Append returns only once the line is on disk, so the request
// flow writes a command's record before the command starts and runs
// nothing when that fails (docs/escalation.md "The audit log").
#ifndef LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_
#define LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/brokerd/audit_reader.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd {

// The longest line the broker writes (newline included).
inline constexpr size_t kAuditLineCap = 64 << 10;
// What a cut string ends with (its full length is in truncated_bytes).
inline constexpr char kAuditCutMarker[] = "[...cut by lazaret-brokerd]";

inline constexpr uint64_t kDefaultAuditFileBytes = 16ull << 20;
inline constexpr uint32_t kDefaultAuditFiles = 4;
// A file holds at least two lines of the longest kind.
inline constexpr uint64_t kMinAuditFileBytes = 2 * kAuditLineCap;
inline constexpr uint32_t kMaxAuditFiles = 1000;

struct AuditLogOptions {
  // When audit.jsonl would pass this size, it is rotated first.
  uint64_t max_file_bytes = kDefaultAuditFileBytes;
  // audit.jsonl and up to max_files - 1 rotated files (.1 newest).
  uint32_t max_files = kDefaultAuditFiles;
};

// The options from the values of $LAZARET_AUDIT_MAX_BYTES (bytes per file:
// a number, optionally followed by K, M or G for KiB, MiB, GiB) and
// $LAZARET_AUDIT_FILES (a number of files); nullptr or empty: the default.
// A value out of range (kMinAuditFileBytes.., 1..kMaxAuditFiles) or not a
// number is an error naming the variable.
absl::StatusOr<AuditLogOptions> AuditLogOptionsFromEnv(const char* max_bytes, const char* files);

class AuditLog {
 public:
  // `path` absolute and clean (DefaultAuditPath()). Creates the missing
  // parent directories (0700), requires the file's directory to be a real
  // directory of ours (made 0700 when looser), and opens the file
  // O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW 0600: a symlink, a
  // non-regular file, one with more than one link or one not ours is
  // refused; one of ours readable by others is made 0600.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path,
                                                        AuditLogOptions options = {});

  // One line (the record as CappedAuditLine gives it), in a single
  // write(2); returns once it is on disk (fdatasync, shared by appenders
  // that wait at the same time). Before writing, the file is opened again
  // when the one at `path` is no longer the one open (rotated by another
  // broker, moved by the user) - with the checks of Open, so a symlink or a
  // directory put there fails the append - and rotated when the line would
  // take it past max_file_bytes. Concurrent appenders never interleave a
  // line. An error means the line is not (known to be) on disk.
  absl::Status Append(const lazaret::approver::v1::AuditRecord& record);

  const std::string& path() const { return path_; }
  const AuditLogOptions& options() const { return options_; }

 private:
  AuditLog(std::string path, std::string name, AuditLogOptions options, fs::DirFd dir,
           fs::UniqueFd fd)
      : path_(std::move(path)),
        name_(std::move(name)),
        options_(options),
        dir_(std::move(dir)),
        fd_(std::make_shared<fs::UniqueFd>(std::move(fd))) {}
  // Makes fd_ the file at path_ with room for `bytes` more.
  absl::Status PrepareLocked(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts every line written so far on disk before fd_ is replaced.
  absl::Status SyncBeforeSwitchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RotateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::string name_;  // the file's name in dir_
  const AuditLogOptions options_;
  std::mutex mu_;
  const fs::DirFd dir_;
  // Shared with an appender syncing while another rotates.
  std::shared_ptr<fs::UniqueFd> fd_ ABSL_GUARDED_BY(mu_);
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;      // lines written
  uint64_t durable_ ABSL_GUARDED_BY(mu_) = 0;      // lines synced when a file was switched
  std::mutex sync_mu_;                             // one fdatasync at a time
  uint64_t synced_ ABSL_GUARDED_BY(sync_mu_) = 0;  // lines known to be on disk
};

// Appends `start` (a PHASE_STARTED record) and calls `run` only once it is
// on disk; when the append fails, returns its error and `run` is never
// called. The request flow starts every command through this.
absl::Status AppendThenRun(AuditLog& log, const lazaret::approver::v1::AuditRecord& start,
                           absl::FunctionRef<void()> run);

// The record as its audit line (no newline), uncapped.
absl::StatusOr<std::string> AuditLine(const lazaret::approver::v1::AuditRecord& record);

// The record as the line Append writes (no newline): AuditLine when that
// fits in kAuditLineCap - 1 bytes, else the line of a copy whose long
// strings are cut (at a UTF-8 boundary, ending in kAuditCutMarker) and
// whose long argument vectors lose their last words, more at each of three
// steps until it fits; each cut is recorded in truncated_bytes.
absl::StatusOr<std::string> CappedAuditLine(const lazaret::approver::v1::AuditRecord& record);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_
