// A session's egress log: every DNS question and its decision, every
// connect() the sandbox's Sentry reported with the rule that decided it,
// policy and host-network changes. Runs in lazaret-netpolicyd,
// unprivileged. Entries are kept twice: a ring in memory for followers
// (`lazaret net log --follow`, the approver API), and one protobuf JSON
// mapping per line in <state_dir>/netlog/<session>.jsonl, so the log
// outlives the session and netpolicyd. The file is written by one thread
// from a bounded queue: the DNS path and the trace sink never wait for the
// disk; when the queue is full the entries are counted and a LOG_GAP entry
// records how many the file lost. Bounded on disk: a file is rotated at
// kFileCap (two older ones kept) and only the newest kKeepSessions
// sessions' logs are kept. Names, processes and details are stored as
// received (untrusted); printing them safely is the reader's job.
#ifndef LAZARET_SERVICES_NETPOLICYD_EGRESS_LOG_H_
#define LAZARET_SERVICES_NETPOLICYD_EGRESS_LOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"

namespace lazaret::netpolicyd {

struct EgressLogOptions {
  // <state_dir>/netlog; empty: the log is kept in memory only.
  std::string dir;
  size_t ring = 1000;           // entries kept for followers
  size_t queue = 4096;          // entries waiting for the file
  uint64_t file_cap = 8 << 20;  // bytes per file before it rotates
  int rotations = 2;            // older files kept: <id>.jsonl.1, .2
  // Called by the writer before it takes a batch from the queue (tests
  // hold the writer back with it).
  std::function<void()> before_batch;
};

class EgressLog {
 public:
  EgressLog(std::string session_id, EgressLogOptions options);
  ~EgressLog();  // Close()
  EgressLog(const EgressLog&) = delete;
  EgressLog& operator=(const EgressLog&) = delete;

  // Stamps the entry (time when it has none, seq, session_id), keeps it in
  // the ring and queues it for the file. Never blocks on the disk.
  void Append(lazaret::netpolicy::v1::LogEntry entry);

  // Entries with a sequence number >= `*next`, oldest first; sets `*next`
  // past the last one returned. Waits up to `wait` for one when there is
  // none (0: do not wait). Entries dropped from the ring are skipped.
  std::vector<lazaret::netpolicy::v1::LogEntry> Read(uint64_t* next,
                                                     std::chrono::milliseconds wait);

  // Wakes every waiting reader, writes what is queued and stops the
  // writer (the session is going away). Idempotent.
  void Close();
  bool closed() const;

  // Entries the file lost to a full queue or a write error so far.
  uint64_t file_drops() const;

 private:
  void Writer();

  const std::string session_id_;
  const EgressLogOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;         // readers
  std::condition_variable writer_cv_;  // the writer
  std::deque<lazaret::netpolicy::v1::LogEntry> ring_ ABSL_GUARDED_BY(mu_);
  uint64_t first_seq_ ABSL_GUARDED_BY(mu_) = 1;  // seq of ring_.front()
  std::deque<lazaret::netpolicy::v1::LogEntry> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queue_drops_ ABSL_GUARDED_BY(mu_) = 0;  // not yet recorded in the file
  uint64_t total_drops_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

// The log files of one session, oldest first (<id>.jsonl.2, .1, .jsonl).
std::vector<std::string> EgressLogFiles(const std::string& dir, const std::string& session_id);

// Every persisted entry of a session (one that ended, or one another
// netpolicyd wrote), oldest first. NotFound when it has no log. Lines that
// do not parse are skipped.
absl::StatusOr<std::vector<lazaret::netpolicy::v1::LogEntry>> ReadEgressLogFile(
    const std::string& dir, const std::string& session_id);

// Keeps the logs of the `keep` sessions written most recently and deletes
// the rest.
absl::Status CollectEgressLogs(const std::string& dir, size_t keep);

inline constexpr size_t kKeepSessionLogs = 100;

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_EGRESS_LOG_H_
