// Resolution of the merged configuration: expanding, canonicalising and
// checking the global directories and every profile's host paths, and
// building each ResolvedProfile. Part of lazaret_config (runs in
// lazaret-configd and the loader fuzzer); used by LoadLayers (loader.h) and
// by the narrowing check (narrowing.h). The settings are untrusted layer
// text; the HostContext is the user's own.
#ifndef LAZARET_SERVICES_CONFIGD_RESOLVE_H_
#define LAZARET_SERVICES_CONFIGD_RESOLVE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/configd/diagnostics.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/loader.h"
#include "services/configd/schema.h"

namespace lazaret::config {

// The state shared by every profile of one load.
struct LoadContext {
  const HostContext* host = nullptr;
  std::string workspace_dir;
  std::vector<SensitivePath> sensitive;
  std::string data_root;  // canonical; empty when it failed
};

// Expands a global path key (data_root, socket_dir) without canonicalising.
absl::StatusOr<std::string> ExpandGlobal(const Setting<std::string>& s, unsigned tokens,
                                         const HostContext& host);

// storage.data_root, canonical, outside the workspace and every sensitive
// directory. Each resolver reports why it fails to `diags`.
std::optional<std::string> ResolveDataRoot(const Setting<std::string>& s, const LoadContext& g,
                                           Diagnostics& diags);

// escalation.socket_dir, canonical, outside the workspace and data_root.
std::optional<std::string> ResolveSocketDir(const Setting<std::string>& s, const LoadContext& g,
                                            Diagnostics& diags);

// profile_dir = <data_root>/<name>, canonical; refuses a symlink out of data_root.
std::optional<std::string> ResolveProfileDir(const std::string& name, const Origin& at,
                                             const LoadContext& g, Diagnostics& diags);

// Expands, canonicalises and checks one volume's host path; `diags` may be
// null to resolve silently.
std::optional<std::string> ResolveVolumeHost(const VolumeSpec& v, const std::string& name,
                                             const std::string& profile_dir, const LoadContext& g,
                                             Diagnostics* diags);

// escalation.auto_approve: an entry (exact or prefix) may not name a path (an argument
// or an option's value after '=') inside the workspace or data_root, whose
// files the agent can write or replace with a symlink to any other file
// before the command runs. Compares canonical paths.
void CheckAutoApprovePaths(const SettingList<vocab::CommandPrefix>& entries, const LoadContext& g,
                           Diagnostics& diags);

// Profile `name` of the merged configuration `m`, with the source of each
// key; nothing when any of its settings fails (reported to `diags`). Its
// socket_dir is left for the caller to set.
std::optional<ResolvedProfile> ResolveProfile(const LayerConfig& m, const std::string& name,
                                              const ProfileLayer& pl, const LoadContext& g,
                                              Diagnostics& diags);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_RESOLVE_H_
