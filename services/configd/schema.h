// The TOML schema of one configuration layer. Part of lazaret_config (runs
// in lazaret-configd and the loader fuzzer). The text is untrusted: the
// workspace layer is written by whoever controls the workspace, including
// the agent. Everything that can be checked within one file is checked
// here (single values in schema_values.h, typed reads in toml_reader.h);
// what needs other layers (merge, narrowing, expansion) is in loader.h.
#ifndef LAZARET_SERVICES_CONFIGD_SCHEMA_H_
#define LAZARET_SERVICES_CONFIGD_SCHEMA_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "services/configd/diagnostics.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/schema_values.h"
#include "services/vocab/auto_approve.h"
#include "services/vocab/cidr.h"
#include "services/vocab/http_rule.h"
#include "services/vocab/port_spec.h"

namespace lazaret::config {

// Limits that keep a hostile file cheap to process.
inline constexpr size_t kMaxConfigBytes = 1 << 20;
inline constexpr size_t kMaxListEntries = 256;
inline constexpr size_t kMaxProfiles = 128;
inline constexpr size_t kMaxStringBytes = 4096;
// escalation.command_timeout, escalation.approval_timeout and
// profiles.<name>.command_timeout, in seconds.
inline constexpr int64_t kMinTimeoutSeconds = 1;
inline constexpr int64_t kMaxTimeoutSeconds = 86400;
// escalation.rate_limit: requests per second one session may send.
inline constexpr int64_t kMinRateLimit = 1;
inline constexpr int64_t kMaxRateLimit = 100000;
// profiles.<name>.persistent_cap: bytes a profile's persistent directories
// may hold together. The lower bound leaves room for the filesystem's own
// metadata; the upper one is far beyond any disk such data belongs on.
inline constexpr uint64_t kMinPersistentCapBytes = uint64_t{32} << 20;
inline constexpr uint64_t kMaxPersistentCapBytes = uint64_t{16} << 40;
inline constexpr uint64_t kDefaultPersistentCapBytes = uint64_t{4} << 30;
// ask_timeout: seconds a held name waits for a decision before it is
// refused. The upper bound is far beyond any resolver's own patience.
inline constexpr int64_t kMinAskTimeoutSeconds = 5;
inline constexpr int64_t kMaxAskTimeoutSeconds = 600;
inline constexpr uint32_t kDefaultAskTimeoutSeconds = 120;
// session.detached_limit: how long a session may run with no terminal
// attached (on_detach = "keep") before it is stopped cleanly. At least a
// minute (a dropped connection takes that long to come back), at most 30
// days.
inline constexpr uint32_t kMinDetachedLimitSeconds = 60;
inline constexpr uint32_t kMaxDetachedLimitSeconds = 30 * 86400;
inline constexpr uint32_t kDefaultDetachedLimitSeconds = 12 * 3600;
// profiles.<name>.ports: forwards one profile may open.
inline constexpr size_t kMaxPortForwards = 16;
// profiles.<name>.secrets.<secret>.hosts: names one secret may be sent to.
inline constexpr size_t kMaxSecretHosts = 32;

// A value with the place it was written.
template <typename T>
struct Setting {
  T value;
  Origin origin;
};
template <typename T>
using SettingList = Setting<std::vector<Setting<T>>>;

// `NAME = "literal"` or `NAME = "env:VAR"` (a pull from the host environment
// of `lazaret run`, never resolved by the config service).
struct EnvValue {
  std::string name;
  bool host_pull = false;
  std::string value;  // the literal, or VAR for a pull
};

// One [[profiles.<name>.volumes]] entry, syntax-checked. `host` is still a
// template; it is expanded and canonicalised when a profile is resolved.
struct VolumeSpec {
  Setting<std::string> host;
  Setting<std::string> container;  // clean absolute path
  Access access = Access::kReadOnly;
  SelinuxLabel selinux = SelinuxLabel::kNone;
  std::string mode_text;  // as written (default "ro")
};

// The egress settings of [network] and of [profiles.<name>] (a profile's
// own value wins over the network-wide one).
struct EgressSettings {
  // Wider: kNames < kAsk < kOpen.
  std::optional<Setting<EgressMode>> egress;
  // Seconds a held name waits for a decision. Higher is a widening.
  std::optional<Setting<uint32_t>> ask_timeout;
  // true: "wait" (hold until ask_timeout with no approver); false: "deny".
  // true is a widening.
  std::optional<Setting<bool>> ask_unattended_wait;
  // Add the CAs the host trusts to the sandbox's trust store. true is a
  // widening.
  std::optional<Setting<bool>> trust_host_ca;
};

// The [session] table, and [profiles.<name>.session] (a profile's own
// value wins over the global one).
struct SessionConfig {
  // on_detach: true for "stop" (the session stops when its last terminal
  // detaches), false for "keep". false is a widening.
  std::optional<Setting<bool>> on_detach_stop;
  // Seconds a kept session may run with no terminal attached. Higher is a
  // widening.
  std::optional<Setting<uint32_t>> detached_limit;
};

// The [terminal] table, and [profiles.<name>.terminal] (a profile's own
// value wins over the global one).
struct TerminalConfig {
  // OSC 52 clipboard writes from the sandbox reach the developer's
  // terminal. true is a widening.
  std::optional<Setting<bool>> clipboard_write;
};

// Where a secret's value comes from, on the host, when a session starts.
enum class SecretSource { kEnv, kFile, kCommand };
// How the egress proxy sends it (see SecretInjection in config.proto).
enum class SecretInjection { kHeader, kBearer, kBasic };

// One [profiles.<name>.secrets.<secret>] table, syntax-checked. Never from a
// workspace file (ParseLayer refuses `secrets` there). The value itself is
// never read by the configuration service.
struct SecretSpec {
  std::string name;  // [A-Za-z0-9_-], 1 to 64
  Origin origin;     // the table
  SecretSource source = SecretSource::kEnv;
  // kEnv: the variable's name; kFile: the path template (~ only); kCommand:
  // empty.
  Setting<std::string> from;
  std::vector<std::string> command;         // kCommand: the argv
  std::vector<Setting<std::string>> hosts;  // canonical name patterns, 1..kMaxSecretHosts
  SecretInjection inject = SecretInjection::kHeader;
  std::string header;  // kHeader: the header name, lower case
  std::optional<Setting<std::string>> sandbox_env;
};

// One [profiles.<name>.http."<host>"] table: the requests allowed to that
// host. A workspace file may only narrow it (narrowing.cc).
struct HttpRuleSpec {
  std::string host;                              // canonical name pattern
  Origin origin;                                 // the table
  std::vector<Setting<vocab::HttpAllow>> allow;  // 1..vocab::kMaxHttpAllowEntries
};

// One [profiles.<name>] table as written in one layer.
struct ProfileLayer {
  Origin origin;  // the table header (or first key)
  std::optional<Setting<std::string>> image;
  std::optional<SettingList<std::string>> persistent_dirs;  // clean container paths
  std::optional<SettingList<vocab::Cidr>> allow_egress;
  // Replaces network.default_allow for this profile ([] with allow_domains:
  // a profile that reaches names only).
  std::optional<SettingList<vocab::Cidr>> default_allow;
  std::optional<SettingList<std::string>> allow_domains;  // canonical patterns
  std::optional<SettingList<EnvValue>> env;
  std::optional<SettingList<VolumeSpec>> volumes;
  // true: git repositories the session plants are only reported, not
  // neutralised (docs/git-shadow.md). A widening.
  std::optional<Setting<bool>> keep_planted_repositories;
  // Replaces escalation.command_timeout for this profile. Higher is a
  // widening.
  std::optional<Setting<uint32_t>> command_timeout;
  // The size cap of the profile's persistent data, in bytes
  // (kDefaultPersistentCapBytes when no layer sets it). Higher is a
  // widening.
  std::optional<Setting<uint64_t>> persistent_cap;
  EgressSettings net;
  // Inbound forwards opened when a session of this profile starts. Never
  // from a workspace file (ParseLayer refuses them there).
  std::optional<SettingList<vocab::PortSpec>> ports;
  SessionConfig session;
  TerminalConfig terminal;
  // By name and by host. Unlike the other keys these tables merge entry by
  // entry: a higher layer's secret or host replaces only the same name's.
  std::map<std::string, SecretSpec> secrets;
  std::map<std::string, HttpRuleSpec> http;
};

// One layer, every key optional. The same type holds a merge of layers, in
// which each setting keeps the origin of the layer that won.
struct LayerConfig {
  Layer layer = Layer::kEmbeddedDefault;
  std::string file;
  std::optional<Setting<std::string>> default_profile;
  std::optional<Setting<std::string>> data_root;  // template
  std::optional<SettingList<vocab::Cidr>> default_allow;
  std::optional<SettingList<vocab::Cidr>> default_deny;
  std::optional<SettingList<std::string>> default_allow_domains;  // canonical patterns
  std::optional<SettingList<std::string>> dns_upstream;           // canonical "address:port"
  EgressSettings net;
  std::optional<Setting<bool>> escalation_enabled;
  std::optional<Setting<std::string>> socket_dir;  // template
  std::optional<SettingList<vocab::CommandPrefix>> auto_approve;
  // Seconds an approved command may run on the host, and a request may
  // wait for a human. Higher is a widening.
  std::optional<Setting<uint32_t>> command_timeout;
  std::optional<Setting<uint32_t>> approval_timeout;
  std::optional<Setting<uint32_t>> rate_limit;
  // "inline" or "remote" (checked).
  std::optional<Setting<std::string>> approver;
  SessionConfig session;
  TerminalConfig terminal;
  std::map<std::string, ProfileLayer> profiles;
};

// Tokens allowed per path key.
inline constexpr unsigned kDataRootTokens = 0;
inline constexpr unsigned kSocketDirTokens = kTokenRuntimeDir;
inline constexpr unsigned kVolumeHostTokens =
    kTokenProfileName | kTokenProfileDir | kTokenWorkspaceDir;
// A secret's "file:PATH": ~ only (a token would name a directory the agent
// can read).
inline constexpr unsigned kSecretFileTokens = 0;

// Parses and checks one layer. Every problem goes to `diags` with file, key
// path, line and column; the returned layer holds the values that passed.
// Callers must not use the layer when diags has errors.
LayerConfig ParseLayer(Layer layer, const std::string& file, absl::string_view text,
                       Diagnostics& diags);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_SCHEMA_H_
