// Host paths in the configuration: the user's directories, `~` and {token}
// expansion, `..` refusal, canonicalisation, the directories no volume may
// expose, the files the trusted layers read, and the re-check of a mount
// source. Its own small library, lazaret_host_paths (no TOML, no protos):
// it runs in lazaret-configd, which resolves paths from untrusted layer
// text, and in the session worker of lazaret-sessiond, which re-checks
// every host path configd returns before mounting it (a compromised parser
// must not get a mount the same rules would refuse). Templates and configd's answers are
// untrusted; the environment (HOME, XDG_*) is the user's own and trusted.
#ifndef LAZARET_SERVICES_COMMON_PROFILE_PATHS_HOST_PATHS_H_
#define LAZARET_SERVICES_COMMON_PROFILE_PATHS_HOST_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

// Facts about the host user that the loader needs. Captured once at process
// start; every field is an absolute path without a trailing slash.
struct HostContext {
  std::string home;             // $HOME, else the passwd entry
  std::string config_home;      // $XDG_CONFIG_HOME if absolute, else <home>/.config
  std::string state_home;       // $XDG_STATE_HOME if absolute, else <home>/.local/state
  std::string runtime_dir;      // Lazaret's runtime directory (sockets)
  std::string xdg_runtime_dir;  // $XDG_RUNTIME_DIR if absolute, else empty

  std::string LazaretConfigDir() const { return config_home + "/lazaret"; }
  std::string UserConfigFile() const { return LazaretConfigDir() + "/config.toml"; }
  std::string StateDir() const { return state_home + "/lazaret"; }
  std::string TrustStoreFile() const { return StateDir() + "/trusted-workspace-files"; }
};

// Reads HOME (falling back to getpwuid_r when unset, empty or relative) and
// the XDG variables from the process environment. `runtime_dir` is the
// Lazaret runtime directory the caller already uses.
absl::StatusOr<HostContext> HostContextFromEnvironment(const std::string& runtime_dir);

// The expansion tokens. Each path key allows a subset (see schema.cc).
enum Token : unsigned {
  kTokenProfileName = 1u << 0,   // {profile_name}
  kTokenProfileDir = 1u << 1,    // {profile_dir} = <data_root>/<profile_name>
  kTokenWorkspaceDir = 1u << 2,  // {workspace_dir}
  kTokenRuntimeDir = 1u << 3,    // {runtime_dir} (Lazaret's runtime directory)
};

// Values for the tokens; an empty value means "not known here".
struct ExpansionValues {
  std::string home;
  std::string profile_name;
  std::string profile_dir;
  std::string workspace_dir;
  std::string runtime_dir;
};

// Syntax only: `~` is expanded only as the very first character and only as
// "~" or "~/..." ("~user" is refused; a `~` elsewhere is literal); every
// {name} must be a known token allowed in this key; a stray '{' or '}' is
// an error (there is no escape).
absl::Status CheckPathTemplate(absl::string_view tmpl, unsigned allowed_tokens);

// Expands `tmpl`, then refuses any ".." segment in the result, requires an
// absolute path, and removes "." segments, repeated and trailing slashes.
absl::StatusOr<std::string> ExpandHostPath(absl::string_view tmpl, unsigned allowed_tokens,
                                           const ExpansionValues& values);

// realpath(3) semantics extended to paths that do not exist yet: the
// realpath of the longest existing ancestor followed by the remaining
// components. A dangling symlink, a symlink loop or an unreadable component
// is an error. The result contains no symlink at the time of the call.
absl::StatusOr<std::string> CanonicalizeHostPath(const std::string& absolute_path);

// A directory that no volume may expose, with the reason.
struct SensitivePath {
  std::string path;  // canonical
  std::string what;  // "~/.ssh (ssh keys)"
};

// The user's secrets (~/.ssh, ~/.gnupg, ~/.aws, ...), Lazaret's own
// configuration, state and runtime directories, $XDG_RUNTIME_DIR, /proc,
// /sys, /dev, container engine sockets, and the workspace's git directory
// (the Git Shadow guards it). Each is listed lexically and canonically.
std::vector<SensitivePath> SensitivePaths(const HostContext& host,
                                          const std::string& workspace_dir);

// Refuses a canonical path that is a sensitive path, lies inside one, or
// (with refuse_ancestors) contains one. The error names the sensitive path.
absl::Status CheckNotSensitive(const std::string& canonical,
                               const std::vector<SensitivePath>& sensitive, bool refuse_ancestors);

// Where a volume's canonical host path may lie with respect to data_root:
// it may not contain data_root (every profile's persistent data), and
// inside data_root only its own profile_dir. Either may be empty (unknown).
absl::Status CheckVolumePlacement(const std::string& canonical, const std::string& data_root,
                                  const std::string& profile_dir);

// A host file or directory whose content the user's own layers trust: the
// user configuration file and its directory, a --config file, the state
// directory and the trust store in it. `canonical` is where it really is
// (every symlink resolved, a missing file under its canonical directory).
struct TrustedPath {
  std::string what;        // "your configuration file ~/.config/lazaret/config.toml"
  std::string configured;  // the path as Lazaret looks it up
  std::string canonical;
};

// The trusted paths of one request (`explicit_config` absolute or empty).
// A dangling symlink, a loop or an unresolvable component is an error: a
// link to a file that does not exist yet is a file someone else may create.
absl::StatusOr<std::vector<TrustedPath>> TrustedPaths(const HostContext& host,
                                                      const std::string& explicit_config);

// A host directory the agent can write: the workspace, data_root (each
// profile's directory is mounted read-write) or a read-write volume.
struct AgentWritableDir {
  std::string canonical;
  std::string what;  // "the workspace", "the read-write volume of profile p"
};

// Refuses a trusted path equal to or inside an agent-writable directory:
// the agent could rewrite the user's own configuration or trust store.
// The error names both, and how to fix it.
absl::Status CheckTrustedPathsNotAgentWritable(const std::vector<TrustedPath>& trusted,
                                               const std::vector<AgentWritableDir>& writable);

// Re-checks a host path that is about to become a bind-mount source, in a
// process that did not resolve it itself: absolute; clean (no empty, "."
// or ".." segment, no trailing slash); existing; no component a symlink
// (walked from / with O_NOFOLLOW, one directory fd at a time); canonical
// (realpath gives it back unchanged); and not sensitive, nor containing a
// sensitive path. `what` names the path in the error ("volume /x").
absl::Status CheckMountSource(const std::string& path, absl::string_view what,
                              const std::vector<SensitivePath>& sensitive);

// Like CheckMountSource for a directory Lazaret creates on first use
// (data_root, a profile directory): the part that exists must pass the
// same checks; missing trailing components are allowed.
absl::Status CheckFutureMountSource(const std::string& path, absl::string_view what,
                                    const std::vector<SensitivePath>& sensitive);

// Validates a path inside the container: absolute, no "." or ".." segment,
// no empty segment, printable, not "/" and not below /workspace (Lazaret's
// workspace and Git Shadow mounts), /run/lazaret, /proc, /sys or /dev.
// Returns the path without a trailing slash.
absl::StatusOr<std::string> CheckContainerPath(absl::string_view path);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_COMMON_PROFILE_PATHS_HOST_PATHS_H_
