// The router's policy transaction: makes table 100 exactly a checked
// PolicySet, in the ordered phases of Diff, reads it back and compares, and
// closes the namespace (the pref-2 rule) on any error until a later apply
// succeeds. Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN
// only). Its input has passed ValidateRoutes; the generation rules are
// checked here. One apply at a time (one mutex).
#ifndef LAZARET_SIDECAR_POLICY_ENGINE_H_
#define LAZARET_SIDECAR_POLICY_ENGINE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "sidecar/policy_table.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

struct ApplyResult {
  uint64_t generation = 0;
  std::string digest;
  uint32_t routes = 0;
  uint32_t added = 0;
  uint32_t replaced = 0;
  uint32_t removed = 0;
};

struct PolicySnapshot {
  uint64_t generation = 0;  // 0 before the first successful apply
  std::string digest;       // of `routes`
  PolicySet routes;         // read back from the kernel
  bool failed_closed = false;
  std::string last_error;
};

class PolicyEngine {
 public:
  static absl::StatusOr<std::unique_ptr<PolicyEngine>> Create();

  // Startup: table 100 becomes ClosedPolicy() (whatever it held), then the
  // rules (pref 90, pref 100) are installed. No generation is applied yet.
  absl::Status InstallClosedTable();

  // The ApplyPolicy transaction (see the proto). An error after the first
  // kernel request leaves the namespace fail-closed and is returned.
  absl::StatusOr<ApplyResult> Apply(uint64_t generation, const PolicySet& routes);

  // The table as the kernel has it now, with the remembered generation.
  absl::StatusOr<PolicySnapshot> Read();

  // The table as last read back (no kernel access).
  PolicySet Installed() const;

  // Test seam: the `n`-th (1-based) route request of the next Apply is one
  // the kernel refuses. 0 turns it off.
  void FailRequestForTesting(int n);

 private:
  PolicyEngine(std::unique_ptr<RtnlSocket> rtnl, NlSockPtr libnl)
      : rtnl_(std::move(rtnl)), libnl_(std::move(libnl)) {}
  absl::StatusOr<PolicyDiff> ApplyLocked(const PolicySet& routes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FailClosedLocked(const absl::Status& cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable std::mutex mu_;
  std::unique_ptr<RtnlSocket> rtnl_ ABSL_GUARDED_BY(mu_);
  NlSockPtr libnl_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::string digest_ ABSL_GUARDED_BY(mu_);
  // What the last read-back found; unknown after a failed read-back.
  PolicySet installed_ ABSL_GUARDED_BY(mu_);
  bool installed_known_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_closed_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  int fail_request_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_POLICY_ENGINE_H_
