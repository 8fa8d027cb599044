// The pure part of the router's policy table: checking an ApplyPolicy
// request, the ordered diff against what is installed, the digest and the
// generation rules. Runs in lazaret-netrouter (inside the sidecar,
// CAP_NET_ADMIN only) but touches no kernel state, so it is unit-tested on
// its own. Trusts nothing in a request: every destination is parsed
// strictly and every bound is checked before anything is installed.
#ifndef LAZARET_SIDECAR_POLICY_TABLE_H_
#define LAZARET_SIDECAR_POLICY_TABLE_H_

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "lazaret/netrouter/v1/netrouter.pb.h"

namespace lazaret::netrouter {

// Bound on the routes one ApplyPolicy may carry (the gRPC message limit of
// the router's socket is sized for it).
inline constexpr size_t kMaxPolicyRoutes = 100'000;

// A network: family, address bytes (4 or 16 used), prefix length.
struct Prefix {
  int family = AF_INET;  // AF_INET or AF_INET6
  std::array<uint8_t, 16> bytes{};
  int length = 0;

  int address_bytes() const { return family == AF_INET ? 4 : 16; }
  int max_length() const { return family == AF_INET ? 32 : 128; }
  // Canonical text, as vocab::Cidr prints it ("10.0.0.0/8", "fd00::/8").
  std::string ToString() const;
  // True when `address` (address_bytes() long, same family) is inside.
  bool Contains(int addr_family, const uint8_t* address) const;

  friend auto operator<=>(const Prefix&, const Prefix&) = default;
};

// Parses a canonical CIDR ("10.0.0.0/8"); anything vocab::Cidr refuses, or
// a non-canonical spelling of a valid network, is an error naming it.
absl::StatusOr<Prefix> ParsePrefix(absl::string_view text);

enum class Action { kAllow, kProhibit };
const char* ActionName(Action a);  // "allow" or "prohibit"

struct PolicyRoute {
  Prefix prefix;
  Action action = Action::kProhibit;
  friend bool operator==(const PolicyRoute&, const PolicyRoute&) = default;
};

// Routes sorted by prefix (family, address, length), one per prefix.
using PolicySet = std::vector<PolicyRoute>;

// Checks a request's routes: at most kMaxPolicyRoutes, canonical CIDRs, a
// known action, one route per destination, both defaults (0.0.0.0/0 and
// ::/0) present. Returns them sorted.
absl::StatusOr<PolicySet> ValidateRoutes(
    const google::protobuf::RepeatedPtrField<v1::Route>& routes);

// Sorts and checks a set built in code (tests, the startup table).
absl::StatusOr<PolicySet> MakePolicySet(std::vector<PolicyRoute> routes);

// The table the namespace starts with: both defaults prohibited.
PolicySet ClosedPolicy();

// Lowercase hex SHA-256 over "allow|prohibit <cidr>\n" lines in set order
// (the proto's digest; the caller can compute it from what it sent).
std::string Digest(const PolicySet& set);

// One change to the table.
struct RouteChange {
  PolicyRoute route;
  enum class Kind { kAdd, kReplace, kRemove } kind;
};

// The changes that make `installed` into `wanted`, in phases applied one
// after another (a phase starts only when the one before fully succeeded):
//   0: new and changed-to-prohibit routes (the namespace only closes)
//   1: new allows
//   2: changed-to-allow routes
//   3: removed allows (falling back to a covering route closes or keeps)
//   4: removed prohibits (only now can an address open that the new
//      policy opens; removing them earlier could open an address that
//      neither the old nor the new policy opens)
// Inside a phase the order does not matter: any subset of a phase applied
// leaves every address at most as open as the old or the new policy.
struct PolicyDiff {
  static constexpr int kPhases = 5;
  std::array<std::vector<RouteChange>, kPhases> phases;
  uint32_t added = 0;
  uint32_t replaced = 0;
  uint32_t removed = 0;
  bool empty() const { return added + replaced + removed == 0; }
};
PolicyDiff Diff(const PolicySet& installed, const PolicySet& wanted);

// The policy route that decides `address` in `set`: the longest prefix
// containing it, or nullptr.
const PolicyRoute* LongestMatch(const PolicySet& set, int family, const uint8_t* address);

// The generation rules of ApplyPolicy. `applied` is 0 before the first.
enum class GenerationVerdict { kApply, kAlreadyApplied };
absl::StatusOr<GenerationVerdict> CheckGeneration(uint64_t applied,
                                                  const std::string& applied_digest,
                                                  uint64_t requested,
                                                  const std::string& requested_digest);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_POLICY_TABLE_H_
