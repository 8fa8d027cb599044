#include "services/netpolicyd/egress_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

constexpr char kSuffix[] = ".jsonl";
constexpr size_t kSuffixSize = sizeof(kSuffix) - 1;
// A line longer than this in a log file is not ours: it is skipped.
constexpr size_t kMaxLine = 1 << 20;

std::string LogPath(const std::string& dir, const std::string& id) {
  return absl::StrCat(dir, "/", id, kSuffix);
}

std::string Rotated(const std::string& path, int n) { return absl::StrCat(path, ".", n); }

pb::LogEntry GapEntry(const std::string& id, uint64_t lost) {
  pb::LogEntry gap;
  gap.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  gap.set_kind(pb::LOG_KIND_LOG_GAP);
  gap.set_session_id(id);
  gap.set_count(static_cast<uint32_t>(std::min<uint64_t>(lost, UINT32_MAX)));
  gap.set_detail(absl::StrCat(lost,
                              " entries were not written to this file: the writer fell behind"
                              " (they were kept in memory for followers only)"));
  return gap;
}

// The file's writer: appends lines, rotating at the cap. Used by the
// writer thread only.
class LogFile {
 public:
  LogFile(std::string path, uint64_t cap, int rotations)
      : path_(std::move(path)), cap_(cap), rotations_(rotations) {}
  ~LogFile() {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Write(const std::string& line) {
    if (fd_ < 0) LAZ_RETURN_IF_ERROR(Open());
    if (size_ > 0 && size_ + line.size() > cap_) LAZ_RETURN_IF_ERROR(Rotate());
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::InternalError(absl::StrCat("writing ", path_, ": ", strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
    size_ += line.size();
    return absl::OkStatus();
  }

 private:
  absl::Status Open() {
    fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      return absl::InternalError(absl::StrCat("opening ", path_, ": ", strerror(errno)));
    }
    struct stat st;
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd_);
      fd_ = -1;
      return absl::InternalError(absl::StrCat(path_, " is not a regular file"));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    return absl::OkStatus();
  }

  absl::Status Rotate() {
    close(fd_);
    fd_ = -1;
    for (int n = rotations_; n >= 1; --n) {
      const std::string from = n == 1 ? path_ : Rotated(path_, n - 1);
      if (rename(from.c_str(), Rotated(path_, n).c_str()) != 0 && errno != ENOENT) {
        return absl::InternalError(absl::StrCat("rotating ", from, ": ", strerror(errno)));
      }
    }
    if (rotations_ == 0) unlink(path_.c_str());
    return Open();
  }

  const std::string path_;
  const uint64_t cap_;
  const int rotations_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The seq of the last entry of the file at `path` (0: none), read from
// its last 64 KiB.
uint64_t LastSeq(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  std::string tail;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const off_t from = std::max<off_t>(0, st.st_size - 65536);
    tail.resize(static_cast<size_t>(st.st_size - from));
    const ssize_t n = pread(fd, tail.data(), tail.size(), from);
    tail.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(fd);
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  const size_t nl = tail.rfind('\n');
  pb::LogEntry last;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(
           nl == std::string::npos ? tail : tail.substr(nl + 1), &last, opts)
           .ok()) {
    return 0;
  }
  return last.seq();
}

}  // namespace

EgressLog::EgressLog(std::string session_id, EgressLogOptions options)
    : session_id_(std::move(session_id)), options_(std::move(options)) {
  if (options_.dir.empty()) return;
  // A session attached again (netpolicyd restarted) continues its file's
  // sequence numbers.
  first_seq_ = LastSeq(LogPath(options_.dir, session_id_)) + 1;
  writer_ = std::thread([this] { Writer(); });
}

EgressLog::~EgressLog() { Close(); }

void EgressLog::Append(pb::LogEntry entry) {
  if (entry.time_unix_ms() == 0) entry.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  entry.set_session_id(session_id_);
  std::lock_guard<std::mutex> lock(mu_);
  entry.set_seq(first_seq_ + ring_.size());
  if (!options_.dir.empty() && !closed_) {
    if (queue_.size() < options_.queue) {
      queue_.push_back(entry);
    } else {
      ++queue_drops_;
      ++total_drops_;
    }
    writer_cv_.notify_one();
  }
  ring_.push_back(std::move(entry));
  if (ring_.size() > options_.ring) {
    ring_.pop_front();
    ++first_seq_;
  }
  cv_.notify_all();
}

std::vector<pb::LogEntry> EgressLog::Read(uint64_t* next, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto end_seq = [this] { return first_seq_ + ring_.size(); };
  if (*next >= end_seq() && wait.count() > 0 && !closed_) {
    cv_.wait_for(lock, wait, [&] { return *next < end_seq() || closed_; });
  }
  std::vector<pb::LogEntry> out;
  if (*next < first_seq_) *next = first_seq_;
  for (uint64_t seq = *next; seq < end_seq(); ++seq) out.push_back(ring_[seq - first_seq_]);
  *next = end_seq();
  return out;
}

void EgressLog::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
    writer_cv_.notify_all();
  }
  if (writer_.joinable()) writer_.join();
}

bool EgressLog::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

uint64_t EgressLog::file_drops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_drops_;
}

void EgressLog::Writer() {
  LogFile file(LogPath(options_.dir, session_id_), options_.file_cap, options_.rotations);
  bool dir_ready = false;
  bool warned = false;
  google::protobuf::util::JsonPrintOptions json;
  json.preserve_proto_field_names = true;
  while (true) {
    std::deque<pb::LogEntry> batch;
    uint64_t lost = 0;
    bool closing;
    {
      std::unique_lock<std::mutex> lock(mu_);
      writer_cv_.wait(lock, [&] { return closed_ || !queue_.empty() || queue_drops_ > 0; });
    }
    if (options_.before_batch) options_.before_batch();
    {
      std::unique_lock<std::mutex> lock(mu_);
      batch.swap(queue_);
      lost = queue_drops_;
      queue_drops_ = 0;
      closing = closed_;
    }
    if (lost > 0) batch.push_back(GapEntry(session_id_, lost));
    if (!dir_ready && !batch.empty()) {
      absl::StatusOr<std::string> dir = EnsurePrivateDir(options_.dir);
      dir_ready = dir.ok();
      if (!dir.ok() && !warned) {
        LAZ_LOG_WARNING << "egress log of session " << session_id_ << ": " << dir.status();
        warned = true;
      }
    }
    for (const pb::LogEntry& e : batch) {
      std::string line;
      absl::Status st =
          dir_ready ? absl::OkStatus() : absl::FailedPreconditionError("no log directory");
      if (st.ok()) {
        auto printed = google::protobuf::util::MessageToJsonString(e, &line, json);
        st = printed.ok() ? file.Write(line + "\n")
                          : absl::InternalError("an entry could not be printed as JSON");
      }
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        ++total_drops_;
        if (!warned) {
          LAZ_LOG_WARNING << "egress log of session " << session_id_ << ": " << st;
          warned = true;
        }
      }
    }
    if (closing) {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() && queue_drops_ == 0) return;
    }
  }
}

std::vector<std::string> EgressLogFiles(const std::string& dir, const std::string& session_id) {
  const std::string base = LogPath(dir, session_id);
  std::vector<std::string> out;
  for (int n = 9; n >= 1; --n) {
    struct stat st;
    if (lstat(Rotated(base, n).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      out.push_back(Rotated(base, n));
    }
  }
  struct stat st;
  if (lstat(base.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(base);
  return out;
}

absl::StatusOr<std::vector<pb::LogEntry>> ReadEgressLogFile(const std::string& dir,
                                                            const std::string& session_id) {
  std::vector<std::string> files = EgressLogFiles(dir, session_id);
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("session ", session_id, " is not attached and has no egress log in ", dir));
  }
  std::vector<pb::LogEntry> out;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (const std::string& path : files) {
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    std::string text;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    close(fd);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end - start <= kMaxLine) {
        pb::LogEntry e;
        if (google::protobuf::util::JsonStringToMessage(text.substr(start, end - start), &e, opts)
                .ok()) {
          out.push_back(std::move(e));
        }
      }
      start = end + 1;
    }
  }
  return out;
}

absl::Status CollectEgressLogs(const std::string& dir, size_t keep) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  }
  // Per session: its newest modification time and its files.
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> sessions;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    const size_t at = name.find(kSuffix);
    if (at == std::string::npos || at == 0) continue;
    const std::string rest = name.substr(at + kSuffixSize);
    if (!rest.empty() &&
        !(rest.size() == 2 && rest[0] == '.' && rest[1] >= '1' && rest[1] <= '9')) {
      continue;
    }
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    auto& s = sessions[name.substr(0, at)];
    s.first = std::max<int64_t>(
        s.first, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    s.second.push_back(it->path().string());
  }
  if (sessions.size() <= keep) return absl::OkStatus();
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [id, s] : sessions) order.emplace_back(s.first, id);
  std::sort(order.begin(), order.end(), std::greater<>());
  for (size_t i = keep; i < order.size(); ++i) {
    for (const std::string& path : sessions[order[i].second].second) unlink(path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace lazaret::netpolicyd
