// Reading the escalation audit log (one AuditRecord JSON per line, written
// by AuditLog in lazaret-brokerd): for the broker's ReadAudit RPC and for
// `lazaret audit`, so it links protobuf and no gRPC server code. Runs
// unprivileged as the user. The file is the broker's own, but a line is
// still parsed strictly (unknown fields refused) and one that does not
// parse is skipped and counted, never fatal. Strings in the records come
// from sandboxes: print them escaped.
#ifndef LAZARET_SERVICES_BROKERD_AUDIT_READER_H_
#define LAZARET_SERVICES_BROKERD_AUDIT_READER_H_

#include <cstdint>
#include <functional>
#include <iterator>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd {

// The audit log's path: $LAZARET_AUDIT_LOG when set (tests), else
// $XDG_STATE_HOME/lazaret/audit.jsonl when XDG_STATE_HOME is absolute, else
// <home>/.local/state/lazaret/audit.jsonl ($HOME, or the passwd entry).
std::string DefaultAuditPath();

// The longest line read; a longer one counts as unparsable.
inline constexpr size_t kMaxAuditLineBytes = 4 << 20;

// The most rotated files read (audit.jsonl.1 .. .N).
inline constexpr uint32_t kMaxAuditRotations = 1000;

struct AuditFile {
  std::string path;
  fs::UniqueFd fd;
};

// The files of the log at `path` that exist, oldest first: path.N, ...,
// path.1, path (AuditLog's rotation), each opened O_NOFOLLOW and required
// to be a regular file; a file met twice under two names (rotated while
// they were opened) once. NOT_FOUND when none exists.
absl::StatusOr<std::vector<AuditFile>> OpenAuditFiles(const std::string& path);

// A command that ran has two lines in the log (PHASE_STARTED, written
// before it started, and PHASE_FINISHED); readers show it once. AuditMerge
// holds a start until the finish of the same session and request id comes,
// then drops it: the finished record (which holds everything the start
// did) is emitted where it stands. A start with no finish - the broker or
// the host stopped while the command ran, or it still runs - is emitted as
// it is by Flush, after everything else, so it is never lost. At most
// kMaxHeldStarts starts are held; past that the oldest is emitted as it
// is. A finish with no start (rotated away) and every other record pass
// through. `T` is a record or something that holds one (`record` finds it).
inline constexpr size_t kMaxHeldStarts = 4096;

template <typename T>
class AuditMerge {
 public:
  AuditMerge(std::function<const lazaret::approver::v1::AuditRecord&(const T&)> record,
             std::function<void(T)> emit)
      : record_(std::move(record)), emit_(std::move(emit)) {}

  void Add(T item) {
    using Phase = lazaret::approver::v1::AuditRecord;
    const lazaret::approver::v1::AuditRecord& r = record_(item);
    const std::string key = r.session_id() + std::string(1, '\0') + r.request_id();
    if (r.phase() == Phase::PHASE_STARTED) {
      if (index_.count(key) != 0) {  // never written twice; shown as it is
        emit_(std::move(item));
        return;
      }
      held_.emplace_back(key, std::move(item));
      index_[key] = std::prev(held_.end());
      if (held_.size() > kMaxHeldStarts) EmitOldest();
      return;
    }
    if (r.phase() == Phase::PHASE_FINISHED) {
      if (auto it = index_.find(key); it != index_.end()) {
        held_.erase(it->second);
        index_.erase(it);
      }
    }
    emit_(std::move(item));
  }

  void Flush() {
    while (!held_.empty()) EmitOldest();
  }

 private:
  void EmitOldest() {
    index_.erase(held_.front().first);
    T item = std::move(held_.front().second);
    held_.pop_front();
    emit_(std::move(item));
  }

  std::function<const lazaret::approver::v1::AuditRecord&(const T&)> record_;
  std::function<void(T)> emit_;
  std::list<std::pair<std::string, T>> held_;
  std::unordered_map<std::string, typename std::list<std::pair<std::string, T>>::iterator> index_;
};

struct AuditScan {
  uint64_t records = 0;                    // lines that parsed (matching the filter or not)
  uint64_t unparsable = 0;                 // lines skipped: not an AuditRecord, or too long
  std::vector<uint64_t> unparsable_lines;  // their 1-based numbers, the first 16
};

// Calls `fn` with every record of the log at `path` (its rotated files
// first: OpenAuditFiles) for `session_id` (empty: every session), oldest
// first, a command that ran once (AuditMerge). NOT_FOUND when no file
// exists; a symlink or a non-regular file is refused.
absl::StatusOr<AuditScan> ScanAudit(
    const std::string& path, const std::string& session_id,
    const std::function<void(lazaret::approver::v1::AuditRecord)>& fn);

struct AuditRead {
  std::vector<lazaret::approver::v1::AuditRecord> records;  // oldest first
  AuditScan scan;
};

// The last `last` records for `session_id` (0: all), oldest first, across
// the rotated files, merged as ScanAudit does.
absl::StatusOr<AuditRead> ReadAudit(const std::string& path, const std::string& session_id,
                                    uint32_t last);

// One audit line (no newline) as a record, strictly.
absl::StatusOr<lazaret::approver::v1::AuditRecord> ParseAuditLine(const std::string& line);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_AUDIT_READER_H_
