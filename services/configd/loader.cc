#include "services/configd/loader.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/configd/embedded_default.h"
#include "services/configd/narrowing.h"
#include "services/configd/persist_coherence.h"
#include "services/configd/resolve.h"
#include "services/vocab/profile_name.h"

namespace lazaret::config {
namespace {

template <typename T>
void Take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

void Take(EgressSettings& into, const EgressSettings& from) {
  Take(into.egress, from.egress);
  Take(into.ask_timeout, from.ask_timeout);
  Take(into.ask_unattended_wait, from.ask_unattended_wait);
  Take(into.trust_host_ca, from.trust_host_ca);
}

void Take(SessionConfig& into, const SessionConfig& from) {
  Take(into.on_detach_stop, from.on_detach_stop);
  Take(into.detached_limit, from.detached_limit);
}

void Take(TerminalConfig& into, const TerminalConfig& from) {
  Take(into.clipboard_write, from.clipboard_write);
}

LayerConfig Merge(const std::vector<const LayerConfig*>& layers) {
  LayerConfig m;
  for (const LayerConfig* l : layers) {
    m.layer = l->layer;
    m.file = l->file;
    Take(m.default_profile, l->default_profile);
    Take(m.data_root, l->data_root);
    Take(m.default_allow, l->default_allow);
    Take(m.default_deny, l->default_deny);
    Take(m.default_allow_domains, l->default_allow_domains);
    Take(m.dns_upstream, l->dns_upstream);
    Take(m.net, l->net);
    Take(m.escalation_enabled, l->escalation_enabled);
    Take(m.socket_dir, l->socket_dir);
    Take(m.auto_approve, l->auto_approve);
    Take(m.command_timeout, l->command_timeout);
    Take(m.approval_timeout, l->approval_timeout);
    Take(m.rate_limit, l->rate_limit);
    Take(m.approver, l->approver);
    Take(m.session, l->session);
    Take(m.terminal, l->terminal);
    for (const auto& [name, p] : l->profiles) {
      ProfileLayer& mp = m.profiles[name];
      mp.origin = p.origin;
      Take(mp.image, p.image);
      Take(mp.persistent_dirs, p.persistent_dirs);
      Take(mp.allow_egress, p.allow_egress);
      Take(mp.default_allow, p.default_allow);
      Take(mp.allow_domains, p.allow_domains);
      Take(mp.env, p.env);
      Take(mp.volumes, p.volumes);
      Take(mp.keep_planted_repositories, p.keep_planted_repositories);
      Take(mp.command_timeout, p.command_timeout);
      Take(mp.persistent_cap, p.persistent_cap);
      Take(mp.net, p.net);
      Take(mp.ports, p.ports);
      Take(mp.session, p.session);
      Take(mp.terminal, p.terminal);
      for (const auto& [secret, spec] : p.secrets) mp.secrets[secret] = spec;
      for (const auto& [host, rule] : p.http) mp.http[host] = rule;
    }
  }
  return m;
}

}  // namespace

absl::StatusOr<ResolvedProfile> LoadedConfig::Profile(absl::string_view name) const {
  if (absl::Status st = status(); !st.ok()) return st;
  const std::string wanted = name.empty() ? default_profile : std::string(name);
  if (!vocab::IsValidProfileName(wanted)) {
    return absl::InvalidArgumentError(absl::StrCat(
        InQuotes(wanted), " is not a valid profile name (names match ^[a-z0-9_-]{2,32}$)"));
  }
  auto it = profiles.find(wanted);
  if (it == profiles.end()) {
    std::vector<absl::string_view> names;
    for (const auto& [n, p] : profiles) names.push_back(n);
    const std::string close = SuggestKey(wanted, names);
    return absl::NotFoundError(
        absl::StrCat("no profile named ", InQuotes(wanted),
                     close.empty() ? "" : absl::StrCat("; did you mean ", InQuotes(close), "?"),
                     " (profiles: ", absl::StrJoin(names, ", "), ")"));
  }
  return it->second;
}

LoadedConfig LoadLayers(const HostContext& host, const std::string& workspace_dir,
                        const std::vector<LayerSource>& sources) {
  LoadedConfig out;
  Diagnostics& diags = out.diagnostics;
  std::vector<LayerConfig> parsed;
  parsed.reserve(sources.size() + 1);
  out.layers.push_back({Layer::kEmbeddedDefault, kEmbeddedFileName, "", true});
  parsed.push_back(
      ParseLayer(Layer::kEmbeddedDefault, kEmbeddedFileName, ViewOf(EmbeddedDefaultToml()), diags));
  const LayerConfig* workspace = nullptr;
  bool workspace_trusted = true;
  for (const LayerSource& s : sources) {
    out.layers.push_back({s.layer, s.path, s.sha256, s.trusted});
    parsed.push_back(ParseLayer(s.layer, s.path, ViewOf(s.text), diags));
    if (s.layer == Layer::kWorkspace) {
      workspace = &parsed.back();
      workspace_trusted = s.trusted;
    }
  }
  if (diags.has_errors()) return out;

  LoadContext g;
  g.host = &host;
  g.workspace_dir = workspace_dir;
  g.sensitive = SensitivePaths(host, workspace_dir);

  // The user's own grant: every layer but an untrusted workspace file.
  std::vector<const LayerConfig*> own;
  std::vector<const LayerConfig*> all;
  for (const LayerConfig& l : parsed) {
    all.push_back(&l);
    if (&l != workspace || workspace_trusted) own.push_back(&l);
  }
  const LayerConfig merged = Merge(all);
  if (std::optional<std::string> root = ResolveDataRoot(*merged.data_root, g, diags)) {
    g.data_root = *root;
  }
  if (workspace != nullptr && !workspace_trusted) {
    const LayerConfig ceiling = Merge(own);
    LoadContext cg = g;
    Diagnostics ignored;
    if (auto root = ResolveDataRoot(*ceiling.data_root, cg, ignored)) {
      cg.data_root = *root;
    } else {
      cg.data_root.clear();
    }
    CheckNarrowing(*workspace, ceiling, cg, diags);
  }

  out.default_profile = merged.default_profile->value;
  if (merged.profiles.find(out.default_profile) == merged.profiles.end()) {
    diags.Error(
        merged.default_profile->origin,
        absl::StrCat("names profile ", InQuotes(out.default_profile), ", which is not defined"),
        "define [profiles." + out.default_profile + "] or name an existing profile");
  }
  std::optional<std::string> socket_dir = ResolveSocketDir(*merged.socket_dir, g, diags);
  if (merged.auto_approve) CheckAutoApprovePaths(*merged.auto_approve, g, diags);

  // A replaced deny list that forgets a built-in entry is legal but worth a word.
  if (merged.default_deny->origin.layer != Layer::kEmbeddedDefault) {
    for (const Setting<vocab::Cidr>& n : parsed.front().default_deny->value) {
      if (!CoveredBy(n.value, merged.default_deny->value)) {
        diags.Warning(merged.default_deny->origin,
                      absl::StrCat("no longer denies ", InQuotes(n.value.ToString()),
                                   ", which the built-in default denies"),
                      "keep the built-in entries unless you mean to open that range");
      }
    }
  }

  std::map<std::string, ResolvedProfile> profiles;
  for (const auto& [name, pl] : merged.profiles) {
    std::optional<ResolvedProfile> p = ResolveProfile(merged, name, pl, g, diags);
    if (!p) continue;
    if (pl.persistent_dirs) {
      for (CoherenceWarning& w : CheckPersistCoherence(p->persistent_dirs)) {
        diags.Warning(pl.persistent_dirs->origin, std::move(w.message), std::move(w.hint));
      }
    }
    if (socket_dir) p->socket_dir = *socket_dir;
    profiles.emplace(name, *std::move(p));
  }
  if (!diags.has_errors()) out.profiles = std::move(profiles);
  return out;
}

}  // namespace lazaret::config
