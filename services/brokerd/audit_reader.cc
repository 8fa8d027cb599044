#include "services/brokerd/audit_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/fs/fd.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

}  // namespace

std::string DefaultAuditPath() {
  const char* explicit_path = getenv("LAZARET_AUDIT_LOG");
  if (explicit_path != nullptr && explicit_path[0] != '\0') return explicit_path;
  return absl::StrCat(UserStateDir(), "/audit.jsonl");
}

absl::StatusOr<pb::AuditRecord> ParseAuditLine(const std::string& line) {
  pb::AuditRecord record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(line, &record, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an audit record: ", status.message().as_string()));
  }
  return record;
}

absl::StatusOr<std::vector<AuditFile>> OpenAuditFiles(const std::string& path) {
  // Newest first, so that a rotation while this runs shows up as a file
  // already open under its next name (skipped by its inode), never as a
  // file missed; then reversed.
  std::vector<AuditFile> files;
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (uint32_t k = 0; k <= kMaxAuditRotations; ++k) {
    const std::string name = k == 0 ? path : absl::StrCat(path, ".", k);
    fs::UniqueFd fd(open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) {
      if (errno == ENOENT) {
        if (k == 0) continue;  // rotated away just now, or no line yet since
        break;
      }
      if (errno == ELOOP) return absl::FailedPreconditionError(absl::StrCat(name, " is a symlink"));
      return ErrnoStatus(absl::StrCat("open ", name), errno);
    }
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", name), errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(name, " is not a regular file"));
    }
    bool again = false;
    for (const auto& [dev, ino] : seen) again = again || (dev == st.st_dev && ino == st.st_ino);
    if (again) continue;
    seen.emplace_back(st.st_dev, st.st_ino);
    files.push_back(AuditFile{name, std::move(fd)});
  }
  if (files.empty()) return absl::NotFoundError(absl::StrCat(path, ": no audit log yet"));
  std::reverse(files.begin(), files.end());
  return files;
}

absl::StatusOr<AuditScan> ScanAudit(const std::string& path, const std::string& session_id,
                                    const std::function<void(pb::AuditRecord)>& fn) {
  LAZ_ASSIGN_OR_RETURN(std::vector<AuditFile> files, OpenAuditFiles(path));
  AuditScan scan;
  AuditMerge<pb::AuditRecord> merge(
      [](const pb::AuditRecord& r) -> const pb::AuditRecord& { return r; }, fn);
  uint64_t line_number = 0;
  std::string line;
  bool too_long = false;
  auto finish_line = [&] {
    ++line_number;
    absl::StatusOr<pb::AuditRecord> record =
        too_long ? absl::StatusOr<pb::AuditRecord>(absl::OutOfRangeError("too long"))
                 : ParseAuditLine(line);
    if (record.ok()) {
      ++scan.records;
      if (session_id.empty() || record->session_id() == session_id) merge.Add(*std::move(record));
    } else {
      ++scan.unparsable;
      if (scan.unparsable_lines.size() < 16) scan.unparsable_lines.push_back(line_number);
    }
    line.clear();
    too_long = false;
  };
  std::string buf(1 << 16, '\0');
  for (const AuditFile& file : files) {
    while (true) {
      ssize_t n = read(file.fd.get(), buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(absl::StrCat("read ", file.path), errno);
      }
      if (n == 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == '\n') {
          finish_line();
        } else if (line.size() < kMaxAuditLineBytes) {
          line.push_back(buf[i]);
        } else {
          too_long = true;
        }
      }
    }
    if (!line.empty() || too_long) finish_line();  // a last line without its newline
  }
  merge.Flush();
  return scan;
}

absl::StatusOr<AuditRead> ReadAudit(const std::string& path, const std::string& session_id,
                                    uint32_t last) {
  std::deque<pb::AuditRecord> kept;
  LAZ_ASSIGN_OR_RETURN(AuditScan scan, ScanAudit(path, session_id, [&](pb::AuditRecord record) {
                         kept.push_back(std::move(record));
                         if (last != 0 && kept.size() > last) kept.pop_front();
                       }));
  AuditRead out;
  out.scan = scan;
  out.records.assign(std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end()));
  return out;
}

}  // namespace lazaret::brokerd
