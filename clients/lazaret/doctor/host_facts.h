// Reading facts about the host for `lazaret doctor`: version lines and the
// subordinate id files. Runs in the user's terminal. The text comes from
// host programs and host files, which the user (or root) controls; it is
// parsed leniently, and what cannot be parsed counts as missing.
#ifndef LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_
#define LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_

#include <sys/types.h>

#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::cli::doctor {

// The first line of `s` without surrounding whitespace.
std::string FirstLine(const std::string& s);

// "git version 2.39.5" -> at least {2, 39}?
bool GitAtLeast(const std::string& version_line, int want_major, int want_minor);

// Whether `text` (of /etc/subuid or /etc/subgid) gives `name` - by name or
// by `uid` - a range of at least 65536 ids.
bool HasSubordinateRange(absl::string_view text, const std::string& name, uid_t uid);

}  // namespace lazaret::cli::doctor

#endif  // LAZARET_CLIENTS_LAZARET_DOCTOR_HOST_FACTS_H_
