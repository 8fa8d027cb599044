#include "clients/lazaret/escalation/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/brokerd/audit_reader.h"
#include "services/common/fs/fd.h"
#include "services/common/status_util.h"

namespace lazaret::cli::escalation {
namespace {

namespace apb = ::lazaret::approver::v1;

std::optional<std::string> Absolute(const EnvLookup& env, const char* name) {
  std::optional<std::string> v = env(name);
  if (!v.has_value() || v->empty() || (*v)[0] != '/') return std::nullopt;
  return v;
}

// Closes the stream (and with it the descriptor) on destruction.
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

absl::StatusOr<std::string> AuditLogPath(const EnvLookup& env) {
  if (std::optional<std::string> p = Absolute(env, "LAZARET_AUDIT_LOG")) return *p;
  if (std::optional<std::string> s = Absolute(env, "XDG_STATE_HOME")) {
    return absl::StrCat(*s, "/lazaret/audit.jsonl");
  }
  if (std::optional<std::string> h = Absolute(env, "HOME")) {
    return absl::StrCat(*h, "/.local/state/lazaret/audit.jsonl");
  }
  return absl::FailedPreconditionError(
      "cannot find the audit log: none of LAZARET_AUDIT_LOG, XDG_STATE_HOME, HOME is set to an "
      "absolute path");
}

absl::StatusOr<apb::AuditRecord> ParseAuditLine(absl::string_view line) {
  if (line.size() > kMaxAuditLineBytes) {
    return absl::InvalidArgumentError(absl::StrCat("longer than ", kMaxAuditLineBytes, " bytes"));
  }
  apb::AuditRecord record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(line.data(), line.size()), &record, options);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an audit record: ", std::string(s.message())));
  }
  return record;
}

absl::Status ReadAuditFile(const std::string& path, const std::string& session, uint32_t last,
                           const std::function<void(const AuditEntry&)>& sink,
                           const std::function<void(const std::string&)>& problem) {
  absl::StatusOr<std::vector<brokerd::AuditFile>> files = brokerd::OpenAuditFiles(path);
  if (!files.ok()) {
    if (absl::IsNotFound(files.status())) {
      return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    }
    return files.status();
  }
  std::deque<AuditEntry> tail;
  brokerd::AuditMerge<AuditEntry> merge(
      [](const AuditEntry& e) -> const apb::AuditRecord& { return e.record; },
      [&](AuditEntry entry) {
        if (last == 0) {
          sink(entry);
          return;
        }
        tail.push_back(std::move(entry));
        if (tail.size() > last) tail.pop_front();
      });
  char* buf = nullptr;
  size_t cap = 0;
  absl::Status status;
  for (brokerd::AuditFile& f : *files) {
    std::unique_ptr<std::FILE, FileCloser> file(fdopen(f.fd.get(), "r"));
    if (file == nullptr) {
      status = ErrnoStatus(absl::StrCat("reading ", f.path), errno);
      break;
    }
    f.fd.release();
    uint64_t number = 0;
    for (ssize_t n; (n = getline(&buf, &cap, file.get())) >= 0;) {
      ++number;
      absl::string_view line(buf, static_cast<size_t>(n));
      if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
      if (line.empty()) continue;
      absl::StatusOr<apb::AuditRecord> record = ParseAuditLine(line);
      if (!record.ok()) {
        problem(absl::StrCat(f.path, ":", number, ": ", record.status().message()));
        continue;
      }
      if (!session.empty() && record->session_id() != session) continue;
      merge.Add(AuditEntry{std::string(line), *std::move(record)});
    }
    if (std::ferror(file.get()) != 0) {
      status = absl::InternalError(absl::StrCat("reading ", f.path, " failed"));
      break;
    }
  }
  std::free(buf);
  if (!status.ok()) return status;
  merge.Flush();
  for (const AuditEntry& e : tail) sink(e);
  return absl::OkStatus();
}

}  // namespace lazaret::cli::escalation
