#include "services/netpolicyd/log_ring.h"

#include "absl/time/clock.h"

namespace lazaret::netpolicyd {

void LogRing::Append(lazaret::netpolicy::v1::LogEntry entry) {
  if (entry.time_unix_ms() == 0) entry.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(entry));
  if (entries_.size() > capacity_) {
    entries_.pop_front();
    ++first_seq_;
  }
  cv_.notify_all();
}

std::vector<lazaret::netpolicy::v1::LogEntry> LogRing::Read(uint64_t* next,
                                                            std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto end_seq = [this] { return first_seq_ + entries_.size(); };
  if (*next >= end_seq() && wait.count() > 0 && !closed_) {
    cv_.wait_for(lock, wait, [&] { return *next < end_seq() || closed_; });
  }
  std::vector<lazaret::netpolicy::v1::LogEntry> out;
  if (*next < first_seq_) *next = first_seq_;
  for (uint64_t seq = *next; seq < end_seq(); ++seq) out.push_back(entries_[seq - first_seq_]);
  *next = end_seq();
  return out;
}

void LogRing::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool LogRing::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace lazaret::netpolicyd
