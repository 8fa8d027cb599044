#include "services/configd/resolve.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/vocab/host_path.h"

namespace lazaret::config {
namespace {

// What differs between the two global host directories.
struct GlobalDirRules {
  unsigned tokens;             // expansion tokens allowed (schema.h)
  const char* expand_hint;     // when expansion fails
  const char* workspace_hint;  // when it lands inside the workspace
};

// Expands and canonicalises a global directory setting and refuses one
// inside the workspace (which the agent can write).
std::optional<std::string> ResolveGlobalDir(const Setting<std::string>& s, const LoadContext& g,
                                            const GlobalDirRules& rules, Diagnostics& diags) {
  absl::StatusOr<std::string> expanded = ExpandGlobal(s, rules.tokens, *g.host);
  if (!expanded.ok()) {
    diags.Error(s.origin, absl::StrCat(InQuotes(s.value), " ", expanded.status().message()),
                rules.expand_hint);
    return std::nullopt;
  }
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(*expanded);
  if (!canon.ok()) {
    diags.Error(s.origin, std::string(canon.status().message()));
    return std::nullopt;
  }
  if (!g.workspace_dir.empty() && vocab::IsAtOrUnder(*canon, g.workspace_dir)) {
    diags.Error(s.origin,
                absl::StrCat("resolves to ", InQuotes(*canon), ", inside the workspace ",
                             InQuotes(g.workspace_dir), ", which the agent can write"),
                rules.workspace_hint);
    return std::nullopt;
  }
  return *std::move(canon);
}

// Appends each entry of `from` whose value `to` does not hold yet.
template <typename T>
void AppendNew(std::vector<Setting<T>>& to, const std::vector<Setting<T>>& from) {
  for (const Setting<T>& e : from) {
    const bool present =
        std::any_of(to.begin(), to.end(), [&](const Setting<T>& t) { return t.value == e.value; });
    if (!present) to.push_back(e);
  }
}

void AddSource(ResolvedProfile& p, const std::string& key, const Origin& o) {
  p.sources.push_back({key, o.layer, o.file});
}

// The profile's own setting, else the network-wide one, else `fallback`.
template <typename T>
Setting<T> Pick(ResolvedProfile& p, const std::optional<Setting<T>>& own,
                const std::optional<Setting<T>>& global, const std::string& base, const char* key,
                T fallback) {
  if (own) {
    AddSource(p, absl::StrCat(base, ".", key), own->origin);
    return *own;
  }
  if (global) {
    AddSource(p, absl::StrCat("network.", key), global->origin);
    return *global;
  }
  return Setting<T>{fallback, {}};
}

// The profile's own setting (`<base>.<table>.<key>`), else the global one
// (`<table>.<key>`), else `fallback`.
template <typename T>
T PickTable(ResolvedProfile& p, const std::optional<Setting<T>>& own,
            const std::optional<Setting<T>>& global, const std::string& base, const char* table,
            const char* key, T fallback) {
  if (own) {
    AddSource(p, absl::StrCat(base, ".", table, ".", key), own->origin);
    return own->value;
  }
  if (global) {
    AddSource(p, absl::StrCat(table, ".", key), global->origin);
    return global->value;
  }
  return fallback;
}

// One secret of profile `p`, whose env and volumes are resolved and whose
// earlier secrets are in p.secrets. Nothing when it fails (reported).
std::optional<ResolvedSecret> ResolveSecret(const SecretSpec& s, const ResolvedProfile& p,
                                            const LoadContext& g, Diagnostics& diags) {
  const std::string base = absl::StrCat("profiles.", p.name);
  ResolvedSecret out;
  out.name = s.name;
  out.source = s.source;
  out.from = s.from.value;
  out.command = s.command;
  for (const Setting<std::string>& h : s.hosts) out.hosts.push_back(h.value);
  out.inject = s.inject;
  out.header = s.header;
  out.layer = s.origin.layer;
  bool ok = true;
  if (s.sandbox_env) {
    const std::string& var = s.sandbox_env->value;
    const bool in_env = std::any_of(p.env.begin(), p.env.end(),
                                    [&](const ResolvedEnv& e) { return e.name == var; });
    auto other = std::find_if(p.secrets.begin(), p.secrets.end(),
                              [&](const ResolvedSecret& o) { return o.sandbox_env == var; });
    if (in_env) {
      diags.Error(s.sandbox_env->origin,
                  absl::StrCat("secret ", InQuotes(s.name), " puts its placeholder in ", var,
                               ", which ", base, ".env also sets: the sandbox gets one value"),
                  absl::StrCat("remove ", var, " from ", base,
                               ".env (the secret replaces it), or name another variable"));
      ok = false;
    } else if (other != p.secrets.end()) {
      diags.Error(s.sandbox_env->origin,
                  absl::StrCat("secret ", InQuotes(s.name), " puts its placeholder in ", var,
                               ", as secret ", InQuotes(other->name), " does"),
                  "give each secret its own sandbox_env");
      ok = false;
    } else {
      out.sandbox_env = var;
    }
  }
  if (s.source == SecretSource::kFile) {
    ExpansionValues values;
    values.home = g.host->home;
    absl::StatusOr<std::string> expanded =
        ExpandHostPath(ViewOf(s.from.value), kSecretFileTokens, values);
    absl::StatusOr<std::string> canon = expanded;
    if (expanded.ok()) canon = CanonicalizeHostPath(*expanded);
    if (!canon.ok()) {
      diags.Error(s.from.origin,
                  absl::StrCat("secret ", InQuotes(s.name), ": ", InQuotes(s.from.value), " ",
                               canon.status().message()),
                  "write \"file:PATH\" with an absolute path or one starting with ~/");
      return std::nullopt;
    }
    // The directories the agent can read: a secret file there is no
    // secret. Checked canonically, so a symlink into them counts.
    std::vector<AgentWritableDir> readable;
    if (!g.workspace_dir.empty()) readable.push_back({g.workspace_dir, "the workspace"});
    if (!p.profile_dir.empty()) {
      readable.push_back({p.profile_dir, "the profile directory (mounted into the sandbox)"});
    }
    if (!g.data_root.empty()) {
      readable.push_back({g.data_root,
                          "data_root (profile directories are mounted into "
                          "sandboxes)"});
    }
    for (const ResolvedVolume& v : p.volumes) {
      readable.push_back(
          {v.host, absl::StrCat("a volume of ", base, " (mounted at ", v.container, ")")});
    }
    for (const AgentWritableDir& d : readable) {
      if (!vocab::IsAtOrUnder(*canon, d.canonical)) continue;
      diags.Error(
          s.from.origin,
          absl::StrCat("secret ", InQuotes(s.name), " is read from ", InQuotes(*canon),
                       *canon == *expanded ? "" : absl::StrCat(" (", InQuotes(*expanded), ")"),
                       ", inside ", d.what, " ", InQuotes(d.canonical),
                       ", which the agent can read: the value would not stay secret"),
          "keep the file outside the workspace, data_root and the profile's volumes, "
          "e.g. in ~/.config/<service>/");
      return std::nullopt;
    }
    out.from = *std::move(canon);
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace

absl::StatusOr<std::string> ExpandGlobal(const Setting<std::string>& s, unsigned tokens,
                                         const HostContext& host) {
  ExpansionValues v;
  v.home = host.home;
  v.runtime_dir = host.runtime_dir;
  return ExpandHostPath(ViewOf(s.value), tokens, v);
}

std::optional<std::string> ResolveDataRoot(const Setting<std::string>& s, const LoadContext& g,
                                           Diagnostics& diags) {
  std::optional<std::string> canon =
      ResolveGlobalDir(s, g,
                       {kDataRootTokens, "data_root is an absolute path or starts with ~/",
                        "keep persistent data outside any workspace, e.g. ~/.local/share/lazaret"},
                       diags);
  if (!canon) return std::nullopt;
  if (absl::Status st = CheckNotSensitive(*canon, g.sensitive, /*refuse_ancestors=*/false);
      !st.ok()) {
    diags.Error(s.origin, std::string(st.message()),
                "choose a directory of its own, e.g. ~/.local/share/lazaret");
    return std::nullopt;
  }
  return canon;
}

std::optional<std::string> ResolveSocketDir(const Setting<std::string>& s, const LoadContext& g,
                                            Diagnostics& diags) {
  std::optional<std::string> canon =
      ResolveGlobalDir(s, g,
                       {kSocketDirTokens, "the default is \"{runtime_dir}/escalation\"",
                        "escalation sockets live in a private host directory such as "
                        "\"{runtime_dir}/escalation\""},
                       diags);
  if (!canon) return std::nullopt;
  if (!g.data_root.empty() && vocab::IsAtOrUnder(*canon, g.data_root)) {
    diags.Error(s.origin,
                absl::StrCat("resolves to ", InQuotes(*canon),
                             ", inside data_root, whose directories are mounted into sandboxes"),
                "use a private host directory such as \"{runtime_dir}/escalation\"");
    return std::nullopt;
  }
  return canon;
}

std::optional<std::string> ResolveProfileDir(const std::string& name, const Origin& at,
                                             const LoadContext& g, Diagnostics& diags) {
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(absl::StrCat(g.data_root, "/", name));
  if (!canon.ok()) {
    diags.Error(at, absl::StrCat("profile directory: ", canon.status().message()));
    return std::nullopt;
  }
  if (!vocab::IsAtOrUnder(*canon, g.data_root) || *canon == g.data_root) {
    diags.Error(at,
                absl::StrCat("profile directory ", g.data_root, "/", name, " resolves to ",
                             InQuotes(*canon), ", outside data_root ", InQuotes(g.data_root)),
                absl::StrCat("remove the symlink at ", g.data_root, "/", name));
    return std::nullopt;
  }
  if (absl::Status st = CheckNotSensitive(*canon, g.sensitive, /*refuse_ancestors=*/true);
      !st.ok()) {
    diags.Error(at, absl::StrCat("profile directory ", st.message()));
    return std::nullopt;
  }
  return *std::move(canon);
}

std::optional<std::string> ResolveVolumeHost(const VolumeSpec& v, const std::string& name,
                                             const std::string& profile_dir, const LoadContext& g,
                                             Diagnostics* diags) {
  ExpansionValues values;
  values.home = g.host->home;
  values.profile_name = name;
  values.profile_dir = profile_dir;
  values.workspace_dir = g.workspace_dir;
  auto fail = [&](std::string msg, std::string hint) -> std::optional<std::string> {
    if (diags != nullptr) diags->Error(v.host.origin, std::move(msg), std::move(hint));
    return std::nullopt;
  };
  absl::StatusOr<std::string> expanded =
      ExpandHostPath(ViewOf(v.host.value), kVolumeHostTokens, values);
  if (!expanded.ok()) {
    return fail(absl::StrCat(InQuotes(v.host.value), " ", expanded.status().message()),
                "volume hosts are absolute, or start with ~/, {profile_dir} or {workspace_dir}");
  }
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(*expanded);
  if (!canon.ok()) return fail(std::string(canon.status().message()), "");
  const std::string shown = *canon == *expanded ? InQuotes(*canon)
                                                : absl::StrCat(InQuotes(*expanded), " (canonical ",
                                                               InQuotes(*canon), ")");
  if (absl::Status st = CheckNotSensitive(*canon, g.sensitive, /*refuse_ancestors=*/true);
      !st.ok()) {
    return fail(absl::StrCat("volume ", InQuotes(v.host.value), " ", st.message()),
                "volumes may not expose credentials, Lazaret's own files or the workspace's "
                "git directory; mount a narrower directory");
  }
  if (absl::Status st = CheckVolumePlacement(*canon, g.data_root, profile_dir); !st.ok()) {
    return fail(absl::StrCat("volume ", shown, ": ", st.message()), "");
  }
  return *std::move(canon);
}

void CheckAutoApprovePaths(const SettingList<vocab::CommandPrefix>& entries, const LoadContext& g,
                           Diagnostics& diags) {
  for (const Setting<vocab::CommandPrefix>& e : entries.value) {
    // Prefix entries too: an absolute path written in one (the value of a
    // file option, auto_approve.h rule 5) is as fixed as in an exact entry.
    for (size_t i = 1; i < e.value.argv.size(); ++i) {
      absl::string_view a = e.value.argv[i];
      if (absl::StartsWith(a, "-")) {
        const size_t eq = a.find('=');
        a = eq == absl::string_view::npos ? absl::string_view() : a.substr(eq + 1);
      }
      if (!absl::StartsWith(a, "/")) continue;
      absl::StatusOr<std::string> canon = CanonicalizeHostPath(std::string(a));
      const std::string path = canon.ok() ? *canon : std::string(a);
      const char* where = nullptr;
      std::string dir;
      if (!g.workspace_dir.empty() && vocab::IsAtOrUnder(path, g.workspace_dir)) {
        where = "the workspace";
        dir = g.workspace_dir;
      } else if (!g.data_root.empty() && vocab::IsAtOrUnder(path, g.data_root)) {
        where = "data_root";
        dir = g.data_root;
      }
      if (where == nullptr) continue;
      diags.Error(e.origin,
                  absl::StrCat(InQuotes(e.value.text), " names ", InQuotes(a),
                               path == a ? "" : absl::StrCat(" (canonical ", InQuotes(path), ")"),
                               ", inside ", where, " ", InQuotes(dir),
                               ", which the agent can write: by the time the command runs the "
                               "file may be a symlink to any of yours"),
                  "name a file outside the workspace and data_root, or let the agent ask");
    }
  }
}

std::optional<ResolvedProfile> ResolveProfile(const LayerConfig& m, const std::string& name,
                                              const ProfileLayer& pl, const LoadContext& g,
                                              Diagnostics& diags) {
  const std::string base = absl::StrCat("profiles.", name);
  ResolvedProfile p;
  p.name = name;
  bool ok = true;
  if (!pl.image) {
    Origin at = pl.origin;
    at.key_path = base;
    diags.Error(at, absl::StrCat("profile ", InQuotes(name), " has no image"),
                absl::StrCat("add image = \"<registry>/<name>:<tag>\" to [", base, "]"));
    ok = false;
  } else {
    p.image = pl.image->value;
    AddSource(p, base + ".image", pl.image->origin);
  }
  p.data_root = g.data_root;
  AddSource(p, "storage.data_root", m.data_root->origin);
  std::optional<std::string> profile_dir;
  if (!g.data_root.empty()) profile_dir = ResolveProfileDir(name, pl.origin, g, diags);
  if (!profile_dir) {
    ok = false;
  } else {
    p.profile_dir = *profile_dir;
  }
  if (pl.persistent_dirs) {
    for (const Setting<std::string>& d : pl.persistent_dirs->value) {
      p.persistent_dirs.push_back(d.value);
    }
    AddSource(p, base + ".persistent_dirs", pl.persistent_dirs->origin);
  }
  p.persistent_cap_bytes = kDefaultPersistentCapBytes;
  if (pl.persistent_cap) {
    p.persistent_cap_bytes = pl.persistent_cap->value;
    AddSource(p, base + ".persistent_cap", pl.persistent_cap->origin);
  }
  if (pl.keep_planted_repositories) {
    p.keep_planted_repositories = pl.keep_planted_repositories->value;
    AddSource(p, base + ".keep_planted_repositories", pl.keep_planted_repositories->origin);
  }
  // Each egress setting: the profile's own, else [network]'s (which the
  // built-in default always sets).
  p.egress = Pick(p, pl.net.egress, m.net.egress, base, "egress", EgressMode::kAsk);
  p.ask_timeout_seconds =
      Pick(p, pl.net.ask_timeout, m.net.ask_timeout, base, "ask_timeout", kDefaultAskTimeoutSeconds)
          .value;
  p.ask_unattended_wait =
      Pick(p, pl.net.ask_unattended_wait, m.net.ask_unattended_wait, base, "ask_unattended", false)
          .value;
  p.trust_host_ca =
      Pick(p, pl.net.trust_host_ca, m.net.trust_host_ca, base, "trust_host_ca", false).value;
  if (pl.ports) {
    p.ports = pl.ports->value;
    AddSource(p, base + ".ports", pl.ports->origin);
  }
  const bool own_default_allow = pl.default_allow.has_value();
  const SettingList<vocab::Cidr>& default_allow =
      own_default_allow ? *pl.default_allow : *m.default_allow;
  if (p.egress.value == EgressMode::kOpen) {
    AppendNew(p.allow, default_allow.value);
    AddSource(p, own_default_allow ? base + ".default_allow" : "network.default_allow",
              default_allow.origin);
  } else if (default_allow.origin.layer != Layer::kEmbeddedDefault &&
             !default_allow.value.empty()) {
    // Only the CIDRs the user listed for the profile open addresses when
    // names decide; a default_allow written for open egress would
    // otherwise silently do nothing.
    diags.Warning(
        default_allow.origin,
        absl::StrCat("default_allow is ignored when egress is not open (profile ", InQuotes(name),
                     " has egress = ", InQuotes(EgressModeName(p.egress.value)), ")"),
        absl::StrCat("list the networks this profile needs in ", base,
                     ".allow_egress, or set egress = \"open\""));
  }
  if (pl.allow_egress) {
    AppendNew(p.allow, pl.allow_egress->value);
    AddSource(p, base + ".allow_egress", pl.allow_egress->origin);
  }
  AppendNew(p.deny, m.default_deny->value);
  AddSource(p, "network.default_deny", m.default_deny->origin);
  if (m.default_allow_domains) {
    AppendNew(p.allow_domains, m.default_allow_domains->value);
    AddSource(p, "network.default_allow_domains", m.default_allow_domains->origin);
  }
  if (pl.allow_domains) {
    AppendNew(p.allow_domains, pl.allow_domains->value);
    AddSource(p, base + ".allow_domains", pl.allow_domains->origin);
  }
  if (m.dns_upstream) {
    for (const Setting<std::string>& u : m.dns_upstream->value) p.dns_upstream.push_back(u.value);
    AddSource(p, "network.dns_upstream", m.dns_upstream->origin);
  }
  if (pl.env) {
    for (const Setting<EnvValue>& e : pl.env->value) {
      p.env.push_back({e.value.name, e.value.host_pull, e.value.value, e.origin.layer});
    }
    AddSource(p, base + ".env", pl.env->origin);
  }
  if (pl.volumes) {
    for (const Setting<VolumeSpec>& v : pl.volumes->value) {
      if (!profile_dir) break;
      std::optional<std::string> host = ResolveVolumeHost(v.value, name, *profile_dir, g, &diags);
      if (!host) {
        ok = false;
        continue;
      }
      p.volumes.push_back(
          {*host, v.value.container.value, v.value.access, v.value.selinux, v.origin.layer});
    }
    AddSource(p, base + ".volumes", pl.volumes->origin);
  }
  p.escalation_enabled = m.escalation_enabled->value;
  AddSource(p, "escalation.enabled", m.escalation_enabled->origin);
  AddSource(p, "escalation.socket_dir", m.socket_dir->origin);
  if (m.auto_approve) {
    p.auto_approve = m.auto_approve->value;
    AddSource(p, "escalation.auto_approve", m.auto_approve->origin);
  }
  const std::optional<Setting<uint32_t>>& command_timeout =
      pl.command_timeout ? pl.command_timeout : m.command_timeout;
  if (command_timeout) {
    p.command_timeout_seconds = command_timeout->value;
    AddSource(p, pl.command_timeout ? base + ".command_timeout" : "escalation.command_timeout",
              command_timeout->origin);
  }
  if (m.approval_timeout) {
    p.approval_timeout_seconds = m.approval_timeout->value;
    AddSource(p, "escalation.approval_timeout", m.approval_timeout->origin);
  }
  if (m.rate_limit) {
    p.rate_limit = m.rate_limit->value;
    AddSource(p, "escalation.rate_limit", m.rate_limit->origin);
  }
  if (m.approver) {
    p.approver = m.approver->value;
    AddSource(p, "escalation.approver", m.approver->origin);
  }
  p.on_detach_stop = PickTable(p, pl.session.on_detach_stop, m.session.on_detach_stop, base,
                               "session", "on_detach", false);
  p.detached_limit_seconds = PickTable(p, pl.session.detached_limit, m.session.detached_limit, base,
                                       "session", "detached_limit", kDefaultDetachedLimitSeconds);
  p.clipboard_write = PickTable(p, pl.terminal.clipboard_write, m.terminal.clipboard_write, base,
                                "terminal", "clipboard_write", false);
  // After env and volumes: a secret's variable and file are checked
  // against them. By name (the map's order), so the output is stable.
  for (const auto& [secret_name, spec] : pl.secrets) {
    std::optional<ResolvedSecret> s = ResolveSecret(spec, p, g, diags);
    if (!s) {
      ok = false;
      continue;
    }
    p.secrets.push_back(*std::move(s));
    AddSource(p, absl::StrCat(base, ".secrets.", secret_name), spec.origin);
  }
  for (const auto& [host, rule] : pl.http) {
    vocab::HttpRule r{host, {}};
    for (const Setting<vocab::HttpAllow>& a : rule.allow) r.allow.push_back(a.value);
    p.http_rules.push_back(std::move(r));
    AddSource(p, absl::StrCat(base, ".http.", InQuotes(host)), rule.origin);
  }
  if (!ok) return std::nullopt;
  return p;
}

}  // namespace lazaret::config
