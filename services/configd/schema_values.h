// The syntax of single values in a configuration layer: profile and
// environment variable names, volume modes, image references, and the
// suggestion offered for a mistyped key. Part of lazaret_config (runs in
// lazaret-configd and the loader fuzzer). Every value is untrusted text
// from a layer, possibly written by the agent.
#ifndef LAZARET_SERVICES_CONFIGD_SCHEMA_VALUES_H_
#define LAZARET_SERVICES_CONFIGD_SCHEMA_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

enum class Access { kReadOnly, kReadWrite };
enum class SelinuxLabel { kNone, kShared, kPrivate };  // "", z, Z

// network.egress / profiles.<name>.egress, ordered from the narrowest:
// a workspace file may only move toward kNames.
enum class EgressMode { kNames = 0, kAsk = 1, kOpen = 2 };

// "open", "names" or "ask".
absl::StatusOr<EgressMode> ParseEgressMode(absl::string_view text);
const char* EgressModeName(EgressMode mode);

// The lowest host port a forward may bind: below it a port is privileged,
// and a sandbox has no business standing in for a system service.
inline constexpr uint32_t kMinForwardHostPort = 1024;

// An inbound port forward: connections to host_address:host_port on the
// host reach sandbox_port on the sandbox's own loopback. An empty
// host_address means the host's loopback (127.0.0.1 and ::1).
struct PortSpec {
  std::string host_address;  // canonical text of an IP literal, or empty
  uint32_t host_port = 0;
  uint32_t sandbox_port = 0;
  bool operator==(const PortSpec& o) const {
    return host_address == o.host_address && host_port == o.host_port &&
           sandbox_port == o.sandbox_port;
  }
};

// Parses [ADDRESS:]HOSTPORT[:SANDBOXPORT]: "3000", "8080:3000",
// "127.0.0.1:1455", "127.0.0.1:1455:1455", "[::1]:3000", "[::]:80:3000".
// An IPv6 address is written in brackets. HOSTPORT is at least
// kMinForwardHostPort; SANDBOXPORT defaults to HOSTPORT.
absl::StatusOr<PortSpec> ParsePortSpec(absl::string_view text);

// The spec the way ParsePortSpec reads it back ("8080:3000",
// "127.0.0.1:1455:1455", "[::1]:3000:3000").
std::string FormatPortSpec(const PortSpec& spec);

// ^[a-z0-9_-]{2,32}$
bool IsValidProfileName(absl::string_view name);

// ^[A-Za-z_][A-Za-z0-9_]*$ (at most 128 bytes)
bool IsValidEnvName(absl::string_view name);

// Parses a volume mode: comma-separated options from {ro, rw, z, Z}, at most
// one of ro/rw and one of z/Z, no repeats. Empty means "ro".
absl::Status ParseVolumeMode(absl::string_view mode, Access* access, SelinuxLabel* selinux);

// An OCI image reference: [registry/]path[:tag][@sha256:<64 hex>]. Errors
// for malformed references (including a leading '-', which podman would
// read as an option); sets `warning` when the image is not pinned (no
// digest and no tag or ":latest") or not fully qualified.
absl::Status CheckImageReference(absl::string_view image, std::string* warning);

// A size as written in the configuration: a whole number followed by KiB,
// MiB, GiB or TiB (powers of 1024), or a whole number of bytes with no
// unit ("4GiB", "512MiB", "1073741824"). InvalidArgument for any other
// text (no sign, spaces, fractions or decimal units such as "GB");
// OutOfRange when the number of bytes does not fit in 64 bits.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);

// `bytes` the way ParseByteSize reads it back, in the largest unit that
// divides it exactly: 4 << 30 -> "4GiB", 1536 -> "1536", 3 << 10 -> "3KiB".
std::string FormatByteSize(uint64_t bytes);

// The known key closest to `unknown` within a small edit distance
// (transpositions count once), or empty when none is close.
std::string SuggestKey(absl::string_view unknown, const std::vector<absl::string_view>& known);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_SCHEMA_VALUES_H_
