// What one session's sandbox may ask of lazaret-brokerd at once: a token
// bucket of requests and a cap on open connections (the request ids it has
// used are the request book's, pending.h). Runs in lazaret-brokerd (no capabilities); every count
// it keeps is driven by the sandbox, so every one is bounded.
#ifndef LAZARET_SERVICES_BROKERD_SESSION_GUARD_H_
#define LAZARET_SERVICES_BROKERD_SESSION_GUARD_H_

#include <cstddef>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lazaret::brokerd {

struct GuardLimits {
  double requests_per_second = 10;  // refill rate
  double burst = 20;                // bucket size
  size_t max_connections = 64;      // open at once
};

class SessionGuard {
 public:
  explicit SessionGuard(GuardLimits limits) : limits_(limits), tokens_(limits.burst) {}
  SessionGuard(const SessionGuard&) = delete;
  SessionGuard& operator=(const SessionGuard&) = delete;

  // A connection opens; RESOURCE_EXHAUSTED when max_connections are open.
  // Every successful call is paired with CloseConnection().
  absl::Status OpenConnection();
  void CloseConnection();
  size_t open_connections() const;

  // Takes one token; RESOURCE_EXHAUSTED (rate limited) when none is left.
  absl::Status TakeRequest(absl::Time now);

  // Requests refused as rate limited since the last report, once at least
  // kReportEvery has passed since it (0: nothing to report yet). Rate-limited
  // refusals are reported in this aggregate, not one audit line each, so a
  // flood cannot fill the host's disk.
  uint64_t RefusalsToReport(absl::Time now);
  static constexpr absl::Duration kReportEvery = absl::Seconds(10);

 private:
  const GuardLimits limits_;
  mutable absl::Mutex mu_;
  size_t connections_ ABSL_GUARDED_BY(mu_) = 0;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time refilled_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time reported_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_SESSION_GUARD_H_
