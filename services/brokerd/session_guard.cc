#include "services/brokerd/session_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace lazaret::brokerd {

absl::Status SessionGuard::OpenConnection() {
  absl::MutexLock lock(&mu_);
  if (connections_ >= limits_.max_connections) {
    return absl::ResourceExhaustedError(absl::StrCat("this session already has ", connections_,
                                                     " open escalation connections (the limit)"));
  }
  ++connections_;
  return absl::OkStatus();
}

void SessionGuard::CloseConnection() {
  absl::MutexLock lock(&mu_);
  if (connections_ > 0) --connections_;
}

size_t SessionGuard::open_connections() const {
  absl::MutexLock lock(&mu_);
  return connections_;
}

absl::Status SessionGuard::TakeRequest(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (refilled_ != absl::InfinitePast() && now > refilled_) {
    tokens_ = std::min(limits_.burst, tokens_ + absl::ToDoubleSeconds(now - refilled_) *
                                                    limits_.requests_per_second);
  }
  if (now > refilled_) refilled_ = now;
  if (tokens_ < 1) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat("rate limited: this session may send ", limits_.requests_per_second,
                     " escalation requests per second (bursts of ", limits_.burst, ")"));
  }
  tokens_ -= 1;
  return absl::OkStatus();
}

uint64_t SessionGuard::RefusalsToReport(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (refused_ == 0 || now - reported_ < kReportEvery) return 0;
  const uint64_t n = refused_;
  refused_ = 0;
  reported_ = now;
  return n;
}

}  // namespace lazaret::brokerd
