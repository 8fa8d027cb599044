// The fail-closed guard of the sidecar's network namespace. Runs in
// lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only). It counts the
// open NetRouterService.Hold calls - one from the owning `lazaret run`, one
// from the supervisor - and when the last one ends, which is what happens
// when both holders are dead (their sockets close, gRPC cancels the calls),
// it closes the namespace for good: a prohibit-all `ip rule` ahead of every
// table for IPv4 and for IPv6, then every link except loopback set down.
// It never reopens. Trusts nothing from its callers: a Hold carries only a
// label for the log.
#ifndef LAZARET_SIDECAR_NAMESPACE_GUARD_H_
#define LAZARET_SIDECAR_NAMESPACE_GUARD_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::netrouter {

// Priority of the prohibit-all rules: after the local table's rule (0), ahead
// of main (32766), default (32767) and any policy table the router installs.
inline constexpr uint32_t kClosedRulePriority = 1;

// Closes the namespace this process is in (the rules, then the links down).
// Returns the first error; every step is attempted regardless.
absl::Status CloseNamespace();

class NamespaceGuard {
 public:
  // `close` is what runs when the last hold ends (CloseNamespace in the
  // router; tests substitute their own).
  explicit NamespaceGuard(std::function<absl::Status()> close) : close_(std::move(close)) {}

  // A hold begins. FailedPrecondition once the namespace is closed.
  absl::StatusOr<uint32_t> Acquire(const std::string& holder);
  // A hold ended; the last one closes the namespace.
  void Release(const std::string& holder);

  bool closed() const;

 private:
  const std::function<absl::Status()> close_;
  mutable std::mutex mu_;
  uint32_t holds_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_NAMESPACE_GUARD_H_
