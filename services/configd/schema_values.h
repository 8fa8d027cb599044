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

// ^[A-Za-z_][A-Za-z0-9_]*$ (at most 128 bytes)
bool IsValidEnvName(absl::string_view name);

// ^[A-Za-z0-9_-]{1,64}$: the name of a secret of a profile.
bool IsValidSecretName(absl::string_view name);

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

// A duration as written in the configuration: a whole number followed by
// s, m, h or d ("90s", "30m", "12h", "7d"). InvalidArgument for any other
// text (no unit, a sign, spaces, fractions, several units); OutOfRange when
// the number of seconds does not fit in 32 bits.
absl::StatusOr<uint32_t> ParseDuration(absl::string_view text);

// `seconds` the way ParseDuration reads it back, in the largest unit that
// divides it exactly: 43200 -> "12h", 90 -> "90s", 86400 -> "1d".
std::string FormatDuration(uint32_t seconds);

// The known key closest to `unknown` within a small edit distance
// (transpositions count once), or empty when none is close.
std::string SuggestKey(absl::string_view unknown, const std::vector<absl::string_view>& known);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_SCHEMA_VALUES_H_
