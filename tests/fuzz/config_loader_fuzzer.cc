// libFuzzer target for the configuration loader (lazaret_config's core).
// The input is one TOML file, loaded twice through the real pipeline: as an
// untrusted workspace lazaret.toml over a fixed user file, and as the user
// file itself. Besides crashes and sanitizer reports it checks the clamp as
// a property: whenever the untrusted workspace layer is accepted, the
// result grants nothing the user file alone did not.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "services/configd/dns_upstream.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/loader.h"
#include "services/configd/schema_values.h"
#include "services/vocab/auto_approve.h"
#include "services/vocab/cidr.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/host_path.h"
#include "services/vocab/http_rule.h"
#include "services/vocab/shell_words.h"

namespace {

using namespace lazaret::config;  // NOLINT: a fuzz target, not a library
namespace vocab = lazaret::vocab;

constexpr char kRoot[] = "/nonexistent-lazaret-fuzz";

const HostContext& Host() {
  static const HostContext* const kHost = [] {
    auto* h = new HostContext;
    h->home = std::string(kRoot) + "/home";
    h->config_home = h->home + "/.config";
    h->state_home = h->home + "/.local/state";
    h->runtime_dir = std::string(kRoot) + "/run";
    return h;
  }();
  return *kHost;
}

constexpr char kUser[] = R"(
[network]
default_allow_domains = ["*.npmjs.org", "pypi.org"]
dns_upstream = ["192.0.2.53", "[2001:db8::53]:5353"]
[escalation]
auto_approve = ["aws sts get-caller-identity", "gh pr view", { exact = "cat /etc/os-release" },
                { prefix = "gh pr list", options = ["--json", "--limit"] }]
command_timeout = 120
[profiles.claude-code]
image = "docker.io/library/node:22.12.0"
command_timeout = 30
persistent_dirs = ["/root", "/usr/local"]
persistent_cap = "8GiB"
allow_egress = ["160.79.104.0/23", "10.20.0.0/16"]
allow_domains = ["api.anthropic.com", "*.anthropic.com"]
[profiles.names-only]
image = "docker.io/library/node:22.12.0"
default_allow = []
allow_domains = ["github.com", "*.githubusercontent.com"]
env = { ANTHROPIC_API_KEY = "env:ANTHROPIC_API_KEY", MODE = "x" }
volumes = [{ host = "~/src", container = "/src", mode = "rw,z" },
           { host = "{profile_dir}/cache", container = "/cache", mode = "ro" }]
)";

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Covered(const std::vector<Setting<vocab::Cidr>>& nets, const vocab::Cidr& c) {
  for (const Setting<vocab::Cidr>& n : nets) {
    if (n.value.Covers(c)) return true;
  }
  return false;
}

// `narrow` came from an accepted untrusted workspace layer over `wide`.
void CheckNarrower(const ResolvedProfile& narrow, const ResolvedProfile& wide) {
  Check(narrow.image == wide.image);
  Check(narrow.data_root == wide.data_root);
  Check(narrow.profile_dir == wide.profile_dir);
  Check(narrow.socket_dir == wide.socket_dir);
  Check(!narrow.escalation_enabled || wide.escalation_enabled);
  for (const Setting<vocab::CommandPrefix>& e : narrow.auto_approve) {
    bool covered = false;
    for (const Setting<vocab::CommandPrefix>& u : wide.auto_approve) {
      covered |= vocab::EntryCovers(u.value, e.value);
    }
    Check(covered);
  }
  Check(narrow.command_timeout_seconds <= wide.command_timeout_seconds);
  Check(narrow.approval_timeout_seconds <= wide.approval_timeout_seconds);
  Check(narrow.persistent_cap_bytes <= wide.persistent_cap_bytes);
  Check(narrow.on_detach_stop || !wide.on_detach_stop);
  Check(narrow.detached_limit_seconds <= wide.detached_limit_seconds);
  Check(!narrow.clipboard_write || wide.clipboard_write);
  for (const Setting<vocab::Cidr>& d : wide.deny) {
    bool kept = false;
    for (const Setting<vocab::Cidr>& n : narrow.deny) kept |= n.value == d.value;
    Check(kept);
  }
  for (const Setting<vocab::Cidr>& a : narrow.allow) Check(Covered(wide.allow, a.value));
  for (const Setting<std::string>& d : narrow.allow_domains) {
    bool covered = false;
    for (const Setting<std::string>& u : wide.allow_domains) {
      covered |= vocab::DomainCovers(u.value, d.value);
    }
    Check(covered);
  }
  Check(narrow.dns_upstream == wide.dns_upstream);
  for (const std::string& d : narrow.persistent_dirs) {
    bool granted = false;
    for (const std::string& u : wide.persistent_dirs) granted |= u == d;
    Check(granted);
  }
  for (const ResolvedEnv& e : narrow.env) {
    if (!e.host_pull) continue;
    bool granted = false;
    for (const ResolvedEnv& u : wide.env) {
      granted |= u.host_pull && u.name == e.name && u.value == e.value;
    }
    Check(granted);
  }
  for (const ResolvedVolume& v : narrow.volumes) {
    bool granted = false;
    for (const ResolvedVolume& u : wide.volumes) {
      granted |= vocab::IsAtOrUnder(v.host, u.host) &&
                 (v.access == Access::kReadOnly || u.access == Access::kReadWrite);
    }
    Check(granted);
  }
  // Secrets come only from the user's files; HTTP rules only narrow.
  Check(narrow.secrets.size() == wide.secrets.size());
  for (size_t i = 0; i < narrow.secrets.size() && i < wide.secrets.size(); ++i) {
    const ResolvedSecret& n = narrow.secrets[i];
    const ResolvedSecret& w = wide.secrets[i];
    Check(n.name == w.name && n.source == w.source && n.from == w.from && n.command == w.command &&
          n.hosts == w.hosts && n.inject == w.inject && n.header == w.header &&
          n.sandbox_env == w.sandbox_env);
  }
  std::vector<std::string> hosts;
  for (const vocab::HttpRule& r : narrow.http_rules) hosts.push_back(r.host);
  for (const vocab::HttpRule& r : wide.http_rules) hosts.push_back(r.host);
  for (const std::string& h : hosts) {
    const vocab::HttpRule* w = vocab::DecidingHttpRule(wide.http_rules, h);
    if (w == nullptr) continue;
    const vocab::HttpRule* n = vocab::DecidingHttpRule(narrow.http_rules, h);
    Check(n != nullptr);
    if (n == nullptr) continue;
    for (const vocab::HttpAllow& a : n->allow) {
      bool granted = false;
      for (const vocab::HttpAllow& u : w->allow) granted |= vocab::HttpAllowCovers(u, a);
      Check(granted);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string workspace = std::string(kRoot) + "/ws";

  // The small parsers on their own.
  (void)vocab::Cidr::Parse(text);
  (void)vocab::SplitShellWords(text);
  (void)vocab::CheckAutoApproveEntry(text, nullptr);
  (void)vocab::CheckAutoApproveEntry(text, vocab::EntryForm::kExact, nullptr);
  if (absl::StatusOr<std::string> name = vocab::CheckDomainPattern(text); name.ok()) {
    // Canonical forms are fixed points.
    absl::StatusOr<std::string> again = vocab::CheckDomainPattern(*name);
    Check(again.ok() && *again == *name && vocab::DomainCovers(*name, *name));
  }
  if (absl::StatusOr<uint64_t> size = ParseByteSize(text); size.ok()) {
    absl::StatusOr<uint64_t> again = ParseByteSize(FormatByteSize(*size));
    Check(again.ok() && *again == *size);
  }
  if (absl::StatusOr<std::string> up = CheckDnsUpstream(text); up.ok()) {
    absl::StatusOr<std::string> again = CheckDnsUpstream(*up);
    Check(again.ok() && *again == *up);
  }
  ExpansionValues values;
  values.home = Host().home;
  values.profile_name = "fuzz";
  values.profile_dir = std::string(kRoot) + "/data/fuzz";
  values.workspace_dir = workspace;
  (void)ExpandHostPath(text, kTokenProfileName | kTokenProfileDir | kTokenWorkspaceDir, values);

  // As the user's own file.
  LoadedConfig as_user = LoadLayers(
      Host(), workspace, {LayerSource{Layer::kUser, "/fuzz/config.toml", text, "", true}});
  for (const Diagnostic& d : as_user.diagnostics.errors()) (void)FormatDiagnostic(d);
  (void)as_user.Profile("");

  // As an untrusted workspace file over a fixed user file.
  const LoadedConfig user_only =
      LoadLayers(Host(), workspace, {LayerSource{Layer::kUser, "/u/config.toml", kUser, "", true}});
  Check(user_only.status().ok());
  LoadedConfig clamped =
      LoadLayers(Host(), workspace,
                 {LayerSource{Layer::kUser, "/u/config.toml", kUser, "", true},
                  LayerSource{Layer::kWorkspace, workspace + "/lazaret.toml", text, "", false}});
  (void)clamped.status();
  if (clamped.status().ok()) {
    Check(clamped.default_profile == user_only.default_profile);
    for (const auto& [name, p] : clamped.profiles) {
      auto it = user_only.profiles.find(name);
      Check(it != user_only.profiles.end());
      CheckNarrower(p, it->second);
    }
  }
  return 0;
}
