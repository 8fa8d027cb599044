// Declared-capability enforcement. Every Lazaret process states the Linux
// capabilities it needs in one constant and calls DropToDeclared() after it
// has bound its sockets and before it reads any untrusted input.
#ifndef LAZARET_SERVICES_COMMON_CAPABILITIES_H_
#define LAZARET_SERVICES_COMMON_CAPABILITIES_H_

#include <sys/capability.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lazaret::caps {

// What a process may hold after DropToDeclared().
struct Declaration {
  // Permitted and effective: used by this process itself.
  std::vector<cap_value_t> required;
  // Permitted and bounding but never effective: held only so that children
  // this process execs (with no_new_privs) can receive them. Only the
  // supervisor delegates.
  std::vector<cap_value_t> delegated;
  // Delegated by exec as root, for a process whose children must gain
  // capabilities through execve: lazaret-sessiond, whose rootful podman
  // (and conmon, runc, runsc) runs as root, and whose rootless podman execs
  // the setuid-root newuidmap. When set, `required` and `delegated` must be
  // empty: the process keeps nothing permitted or effective, its bounding
  // set becomes exactly this list (when it can drop the rest), and neither
  // no_new_privs nor SECBIT_NOROOT is set, so a child exec'd as root
  // receives exactly this list and nothing beyond it. Refused when
  // no_new_privs is already set: such children would then get nothing.
  std::optional<std::vector<cap_value_t>> granted_by_exec = std::nullopt;
};

// What the process ended up with, for status reporting.
struct Report {
  std::vector<cap_value_t> held;     // permitted after the drop
  std::vector<cap_value_t> missing;  // declared but never available
  bool bounding_dropped = false;     // had CAP_SETPCAP, so the bounding set is exact
};

// Drops everything not declared: bounding set (when CAP_SETPCAP is
// available), inheritable and ambient sets, permitted/effective to the
// declared set, locks SECBIT_NOROOT when possible, sets PR_SET_NO_NEW_PRIVS,
// then re-reads the sets and fails if they differ from what was asked.
// With granted_by_exec, only the bounding, inheritable and ambient sets are
// limited and permitted/effective emptied (see Declaration).
// Declared capabilities the process never had are reported, not an error:
// an unprivileged user runs every service with none.
// Precondition: no other threads exist yet (capability sets are per thread).
absl::StatusOr<Report> DropToDeclared(const Declaration& declaration);

// "NET_ADMIN" for CAP_NET_ADMIN.
std::string Name(cap_value_t cap);
std::vector<std::string> Names(absl::Span<const cap_value_t> caps);

// Bit mask as in /proc/<pid>/status (bit n = capability n).
uint64_t Mask(absl::Span<const cap_value_t> caps);

}  // namespace lazaret::caps

#endif  // LAZARET_SERVICES_COMMON_CAPABILITIES_H_
