// Reading facts about the host for `lazaret doctor`: version lines, the
// subordinate id files, and the CAs the host trusts. Runs in the user's
// terminal. The text comes from host programs and host files, which the
// user (or root) controls; it is parsed leniently, and what cannot be
// parsed counts as missing.
#ifndef LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_
#define LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace lazaret::cli::doctor {

// The first line of `s` without surrounding whitespace.
std::string FirstLine(const std::string& s);

// "git version 2.39.5" -> at least {2, 39}?
bool GitAtLeast(const std::string& version_line, int want_major, int want_minor);

// The release date (YYYYMMDD) a `runsc --version` first line names:
// Debian's "runsc version 0.0~20240729.0" or gVisor's own
// "runsc version release-20240729.0"; 0 when it names none.
int RunscReleaseDate(const std::string& version_line);
// The oldest runsc Lazaret runs agents under: bookworm's own
// (0.0~20221219) rejects the statx flags coreutils passes, so `ls -l`
// fails in every sandbox (deploy/setup-host.sh installs a newer one).
inline constexpr int kRunscMinReleaseDate = 20240729;

// Whether `text` (of /etc/subuid or /etc/subgid) gives `name` - by name or
// by `uid` - a range of at least 65536 ids.
bool HasSubordinateRange(absl::string_view text, const std::string& name, uid_t uid);

// Where a host keeps the CAs it trusts (HostExtraCas).
struct CaStoreLayout {
  std::string certs_dir = "/etc/ssl/certs";  // Debian, Ubuntu: update-ca-certificates' links
  std::string public_dir = "/usr/share/ca-certificates/mozilla/";  // what ca-certificates ships
  std::string anchors_dir = "/etc/pki/ca-trust/source/anchors";    // Fedora, RHEL: added by hand
};

// The CAs the host trusts beyond the public ones, by name (file name
// without its extension, non-printable bytes escaped, at most 64 bytes),
// sorted: each link in certs_dir whose absolute target is not under
// public_dir (a relative link is a hash link to another entry), each
// *.pem or *.crt regular file there but the bundle ca-certificates.crt,
// and each regular file in anchors_dir. A directory that is missing counts
// as empty. At most 1000 names.
std::vector<std::string> HostExtraCas(const CaStoreLayout& layout);

}  // namespace lazaret::cli::doctor

#endif  // LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_
