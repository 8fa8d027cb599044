// Finding and reading the configuration files of one request, and looking
// up the workspace file in the trust store. Part of lazaret_config; runs in
// lazaret-configd. The workspace directory and --config path come from the
// `lazaret` client (same user, peer-checked); the workspace's contents are
// agent-controlled, so its lazaret.toml is opened without following
// symlinks and must be a regular file.
#ifndef LAZARET_SERVICES_CONFIGD_LAYER_FILES_H_
#define LAZARET_SERVICES_CONFIGD_LAYER_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/loader.h"

namespace lazaret::config {

inline constexpr char kWorkspaceFileName[] = "lazaret.toml";

// Which files take part in a request.
struct Selector {
  std::string workspace_dir;    // absolute; its ./lazaret.toml is the workspace layer
  std::string explicit_config;  // absolute --config FILE, or empty
  // `lazaret trust`: the workspace layer is exactly these bytes (the ones
  // the CLI read once and shows), never trusted, instead of what the file
  // holds now - so the widenings listed are those of the bytes trusted.
  std::optional<std::string> workspace_text = std::nullopt;
};

// Reads one configuration file: a regular file of at most kMaxConfigBytes.
// NotFound when it does not exist. With `follow_symlinks` false a symlink
// is refused. Never blocks on a FIFO.
absl::StatusOr<std::string> ReadConfigFile(const std::string& path, bool follow_symlinks);

// The canonical path of <dir>/lazaret.toml for `lazaret trust`: the
// directory is canonicalised, the file name is kept (it must not be a
// symlink, which ReadConfigFile refuses).
absl::StatusOr<std::string> CanonicalWorkspaceFile(const std::string& file);

// Reads every layer of `selector`, checks trust, and runs LoadLayers.
// Problems reading a file are reported as errors of the result, naming the
// file; nothing falls back to a wider configuration. Every file the trusted
// layers read (TrustedPaths) is read at its canonical path, and refused -
// with the whole load - when that lies in the workspace, data_root or a
// read-write volume of any profile (AgentWritableDirs).
LoadedConfig LoadForSelector(const HostContext& host, const Selector& selector);

// The directories of a loaded configuration the agent can write: the
// workspace (if any), data_root, and every profile's read-write volumes.
std::vector<AgentWritableDir> AgentWritableDirs(const std::string& workspace_dir,
                                                const LoadedConfig& loaded);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_LAYER_FILES_H_
