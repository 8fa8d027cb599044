// Which Debian mirror the sandbox image is built from. Runs in the `lazaret`
// CLI, as the user. The host's apt sources are read as they are: an entry
// that is not a usable Debian archive (security, backports or updates only,
// not http(s), Ubuntu) is skipped, never an error.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_DEBIAN_MIRROR_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_DEBIAN_MIRROR_H_

#include <string>

namespace lazaret::cli::images {

inline constexpr char kDefaultDebianMirror[] = "http://deb.debian.org/debian";
// Overrides the mirror (else the host's apt sources are used).
inline constexpr char kMirrorEnv[] = "LAZARET_DEBIAN_MIRROR";

// The first Debian archive URI of the host's apt sources (one-line .list
// files and deb822 .sources), skipping security, backports/updates-only and
// non-Debian entries; kDefaultDebianMirror when there is none.
std::string DetectDebianMirror(const std::string& apt_etc_dir = "/etc/apt");

// The mirror a build uses: `override_mirror` (--mirror), else $kMirrorEnv,
// else DetectDebianMirror(); without trailing slashes.
std::string MirrorFor(const std::string& override_mirror);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_DEBIAN_MIRROR_H_
