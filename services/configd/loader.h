// The configuration pipeline: parse each layer, refuse a workspace layer
// that widens what the user granted, merge, expand, canonicalise and check
// every profile. Part of lazaret_config; runs in lazaret-configd (and the
// fuzzer). Layer text is untrusted; the HostContext is the user's own.
//
// Layers, lowest precedence first: the embedded default, the user file
// ($XDG_CONFIG_HOME/lazaret/config.toml), the workspace's ./lazaret.toml,
// then --config FILE. Merge rule, for every key: a key set in a higher
// layer replaces the lower value entirely (lists and the env table
// included); tables ([storage], [network], [escalation], each
// [profiles.<name>]) merge key by key. The workspace layer, unless its
// exact content is trusted, must only narrow the merge of the user's own
// layers (embedded default, user file and --config): see CheckNarrowing in
// narrowing.h and docs/configuration.md for the rule of each key. The
// expansion and checks of each profile are in resolve.h.
#ifndef LAZARET_SERVICES_CONFIGD_LOADER_H_
#define LAZARET_SERVICES_CONFIGD_LOADER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/configd/diagnostics.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/schema.h"
#include "services/vocab/auto_approve.h"
#include "services/vocab/cidr.h"
#include "services/vocab/http_rule.h"
#include "services/vocab/port_spec.h"

namespace lazaret::config {

// One configuration file as read, before parsing.
struct LayerSource {
  Layer layer = Layer::kUser;
  std::string path;
  std::string text;
  std::string sha256;   // hex digest of `text`
  bool trusted = true;  // false only for a workspace file whose digest is not trusted
};

struct ResolvedEnv {
  std::string name;
  bool host_pull = false;
  std::string value;  // literal, or the host variable's name for a pull
  Layer source = Layer::kEmbeddedDefault;
};

struct ResolvedVolume {
  std::string host;  // canonical: what gets mounted
  std::string container;
  Access access = Access::kReadOnly;
  SelinuxLabel selinux = SelinuxLabel::kNone;
  Layer source = Layer::kEmbeddedDefault;
};

// A secret of a profile: where its value comes from and where it may go.
// The value itself is read on the host when a session starts, never here.
struct ResolvedSecret {
  std::string name;
  SecretSource source = SecretSource::kEnv;
  // kEnv: the variable's name; kFile: the canonical absolute path, outside
  // the workspace, data_root and every volume of the profile.
  std::string from;
  std::vector<std::string> command;  // kCommand
  std::vector<std::string> hosts;    // canonical name patterns
  SecretInjection inject = SecretInjection::kHeader;
  std::string header;       // kHeader: lower case
  std::string sandbox_env;  // empty: no variable holds the placeholder
  Layer layer = Layer::kEmbeddedDefault;
};

// Which layer (and file) supplied a key of a resolved profile.
struct KeySource {
  std::string key_path;
  Layer layer = Layer::kEmbeddedDefault;
  std::string file;
};

// Everything `lazaret run` needs for one profile. Host paths are absolute
// and canonical at resolution time; consumers still open them without
// following symlinks.
struct ResolvedProfile {
  std::string name;
  std::string image;
  std::string data_root;
  std::string profile_dir;  // <data_root>/<name>
  std::vector<std::string> persistent_dirs;
  // profiles.<name>.persistent_cap, else kDefaultPersistentCapBytes.
  uint64_t persistent_cap_bytes = 0;
  // Each network entry with the place it was written. allow: the
  // profile's default_allow (else network.default_allow), then its
  // allow_egress; deny: network.default_deny; allow_domains:
  // network.default_allow_domains, then the profile's allow_domains. Each
  // list without repeats (the first occurrence is kept).
  std::vector<Setting<vocab::Cidr>> allow;
  std::vector<Setting<vocab::Cidr>> deny;
  std::vector<Setting<std::string>> allow_domains;
  // network.dns_upstream, canonical "address:port"; empty: the host's own.
  std::vector<std::string> dns_upstream;
  // The profile's egress settings, else [network]'s (the built-in default
  // sets each one). With kNames or kAsk, `allow` holds only allow_egress.
  Setting<EgressMode> egress{EgressMode::kAsk, {}};
  uint32_t ask_timeout_seconds = kDefaultAskTimeoutSeconds;
  bool ask_unattended_wait = false;
  bool trust_host_ca = false;
  // profiles.<name>.ports (never from a workspace file).
  std::vector<Setting<vocab::PortSpec>> ports;
  std::vector<ResolvedEnv> env;
  std::vector<ResolvedVolume> volumes;
  bool keep_planted_repositories = false;
  bool escalation_enabled = false;
  std::string socket_dir;
  // escalation.auto_approve, each entry with the place it was written.
  std::vector<Setting<vocab::CommandPrefix>> auto_approve;
  // The profile's command_timeout, else escalation.command_timeout; and
  // escalation.approval_timeout. Seconds, > 0.
  uint32_t command_timeout_seconds = 0;
  uint32_t approval_timeout_seconds = 0;
  // escalation.rate_limit: requests per second per session, > 0.
  uint32_t rate_limit = 0;
  // escalation.approver: "inline" or "remote".
  std::string approver;
  // The profile's session.on_detach, else [session]'s: true for "stop".
  bool on_detach_stop = false;
  // The profile's session.detached_limit, else [session]'s, in seconds.
  uint32_t detached_limit_seconds = kDefaultDetachedLimitSeconds;
  // The profile's terminal.clipboard_write, else [terminal]'s.
  bool clipboard_write = false;
  // profiles.<name>.secrets by name, and profiles.<name>.http by host.
  std::vector<ResolvedSecret> secrets;
  std::vector<vocab::HttpRule> http_rules;
  std::vector<KeySource> sources;
};

struct LayerSummary {
  Layer layer = Layer::kEmbeddedDefault;
  std::string path;
  std::string sha256;
  bool trusted = true;
};

struct LoadedConfig {
  std::vector<LayerSummary> layers;
  Diagnostics diagnostics;
  std::string default_profile;
  std::map<std::string, ResolvedProfile> profiles;  // empty when there are errors

  // OK when no layer had an error (see Diagnostics::ToStatus).
  absl::Status status() const { return diagnostics.ToStatus(); }

  // The named profile; an empty name selects default_profile. Fails with the
  // load errors, or InvalidArgument / NotFound for a bad or unknown name.
  absl::StatusOr<ResolvedProfile> Profile(absl::string_view name) const;
};

// Runs the pipeline. The embedded default is added below `layers`, which
// must be in precedence order (user, workspace, explicit; each optional).
// `workspace_dir` is canonical, or empty when there is no workspace.
LoadedConfig LoadLayers(const HostContext& host, const std::string& workspace_dir,
                        const std::vector<LayerSource>& layers);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_LOADER_H_
