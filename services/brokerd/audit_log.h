// The escalation audit log: append-only JSONL, one AuditRecord (protobuf
// JSON, proto field names) per line, written once per finished request.
// Runs in lazaret-brokerd, unprivileged, as the user. The records are the
// broker's own; their strings may come from a sandbox, but protobuf's JSON
// writer escapes every control character, so a record is always exactly
// one line. The file is opened O_APPEND and never rewritten or truncated.
#ifndef LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_
#define LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/brokerd/audit_reader.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd {

class AuditLog {
 public:
  // `path` absolute and clean (DefaultAuditPath()). Creates the missing
  // parent directories (0700), requires the file's directory to be a real
  // directory of ours (made 0700 when looser), and opens the file
  // O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW 0600: a symlink, a
  // non-regular file, one with more than one link or one not ours is
  // refused; one of ours readable by others is made 0600.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path);

  // One line, in a single write(2); returns once it is on disk (fdatasync,
  // shared by appenders that wait at the same time). Concurrent appenders
  // (threads, or other processes with the file open) never interleave a
  // line.
  absl::Status Append(const lazaret::approver::v1::AuditRecord& record);

  const std::string& path() const { return path_; }

 private:
  AuditLog(std::string path, fs::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  const std::string path_;
  std::mutex mu_;
  // Opened once and never replaced while the log lives.
  fs::UniqueFd fd_ ABSL_GUARDED_BY(mu_);
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;      // lines written
  std::mutex sync_mu_;                             // one fdatasync at a time
  uint64_t synced_ ABSL_GUARDED_BY(sync_mu_) = 0;  // lines known to be on disk
};

// The record as its audit line (no newline).
absl::StatusOr<std::string> AuditLine(const lazaret::approver::v1::AuditRecord& record);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_AUDIT_LOG_H_
