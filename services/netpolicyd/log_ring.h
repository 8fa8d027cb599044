// A session's network log: the last entries (refused and answered names,
// dropped addresses, applied generations) kept in memory for `lazaret net
// log`, with followers. Runs in lazaret-netpolicyd, unprivileged. Names are
// stored as received (escaped presentation form); printing them safely is
// the reader's job.
#ifndef LAZARET_SERVICES_NETPOLICYD_LOG_RING_H_
#define LAZARET_SERVICES_NETPOLICYD_LOG_RING_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"

namespace lazaret::netpolicyd {

class LogRing {
 public:
  explicit LogRing(size_t capacity = 1000) : capacity_(capacity) {}

  // Stamps the entry with the current time when it has none.
  void Append(lazaret::netpolicy::v1::LogEntry entry);

  // Entries with a sequence number >= `*next`, oldest first; sets `*next`
  // past the last one returned. Waits up to `wait` for one when there is
  // none (0: do not wait). Entries dropped from the ring are skipped.
  std::vector<lazaret::netpolicy::v1::LogEntry> Read(uint64_t* next,
                                                     std::chrono::milliseconds wait);

  // Wakes every waiting reader (the session is going away).
  void Close();
  bool closed() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<lazaret::netpolicy::v1::LogEntry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t first_seq_ ABSL_GUARDED_BY(mu_) = 0;  // sequence number of entries_.front()
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_LOG_RING_H_
