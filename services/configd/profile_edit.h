// "Allow this name for this profile": the one edit Lazaret makes to a
// configuration file, always the user's own (~/.config/lazaret/config.toml),
// never a workspace or --config file. Part of lazaret_config; runs in
// lazaret-configd. The name comes from a DNS query the sandbox made, through
// an approver's decision: it is checked to be one exact host name before it
// is written. The file's other bytes are kept exactly: the edit is one
// insertion located through toml++ source regions, and the result is
// loaded again and compared before the call returns.
#ifndef LAZARET_SERVICES_CONFIGD_PROFILE_EDIT_H_
#define LAZARET_SERVICES_CONFIGD_PROFILE_EDIT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/layer_files.h"

namespace lazaret::config {

// One name added to profiles.<profile>.allow_domains of one file.
struct NameAllowEdit {
  std::string file;  // the user's configuration file, as Lazaret looks it up
  std::string before;
  std::string after;
  std::string before_sha256;
  std::string after_sha256;
  std::string diff;  // unified, "--- file" / "+++ file"
};

// The text of `text` with `name` added to profiles.<profile>.allow_domains,
// every other byte unchanged:
//   (a) the table has allow_domains = [...]: the name goes after the last
//       entry (or inside the empty brackets);
//   (b) a [profiles.<profile>] header without the key: the line
//       allow_domains = ["<name>"] goes below the header;
//   (c) no such table: [profiles.<profile>] with that line is appended.
// UNIMPLEMENTED for other shapes (the table defined by dotted keys or
// inline, allow_domains not an array). `name` must already be checked.
absl::StatusOr<std::string> AddNameToProfileText(absl::string_view text, const std::string& path,
                                                 const std::string& profile,
                                                 const std::string& name);

// A unified diff of a change that replaced one contiguous run of lines.
std::string UnifiedDiff(const std::string& file, absl::string_view before,
                        absl::string_view after);

// The edit that allowing `name` for `profile` would make, computed against
// the user's file as it is now (an absent file counts as empty).
// InvalidArgument for anything but one exact lowercase host name;
// FailedPrecondition when the configuration does not load, the profile is
// not one the user's file or the built-in default defines, or the name is
// already allowed.
absl::StatusOr<NameAllowEdit> PreviewNameAllow(const HostContext& host, const Selector& selector,
                                               const std::string& profile,
                                               const std::string& name);

// Makes that edit when the file still hashes to `before_sha256`
// (FailedPrecondition otherwise). The file is replaced atomically (a new
// file in the same directory with the same mode, renamed over it). The
// configuration is then loaded again: unless the profile's allow_domains
// gained exactly `name` and nothing else about the profile changed, the old
// bytes are put back and the call fails.
absl::StatusOr<NameAllowEdit> ApplyNameAllow(const HostContext& host, const Selector& selector,
                                             const std::string& profile, const std::string& name,
                                             const std::string& before_sha256);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_PROFILE_EDIT_H_
