#include "services/configd/loader.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/configd/embedded_default.h"

namespace lazaret::config {
namespace {

std::string Q(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

absl::string_view View(const std::string& s) { return absl::string_view(s.data(), s.size()); }

// The hint attached to every refused widening.
std::string TrustHint(const std::string& file) {
  return absl::StrCat(
      "a workspace lazaret.toml can be written by the agent, so it may only narrow what your own "
      "configuration grants. Remove this from ",
      file,
      ", put it in your own config.toml, or - if you wrote this exact file - review it and run: "
      "lazaret trust ",
      file);
}

template <typename T>
void Take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
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
    Take(m.escalation_enabled, l->escalation_enabled);
    Take(m.socket_dir, l->socket_dir);
    Take(m.auto_approve, l->auto_approve);
    for (const auto& [name, p] : l->profiles) {
      ProfileLayer& mp = m.profiles[name];
      mp.origin = p.origin;
      Take(mp.image, p.image);
      Take(mp.persistent_dirs, p.persistent_dirs);
      Take(mp.allow_egress, p.allow_egress);
      Take(mp.env, p.env);
      Take(mp.volumes, p.volumes);
      Take(mp.keep_planted_repositories, p.keep_planted_repositories);
    }
  }
  return m;
}

bool CoveredBy(const Cidr& c, const std::vector<Setting<Cidr>>& nets) {
  return std::any_of(nets.begin(), nets.end(),
                     [&](const Setting<Cidr>& n) { return n.value.Covers(c); });
}

// Expands a global path key (data_root, socket_dir) without canonicalising.
absl::StatusOr<std::string> ExpandGlobal(const Setting<std::string>& s, unsigned tokens,
                                         const HostContext& host) {
  ExpansionValues v;
  v.home = host.home;
  v.runtime_dir = host.runtime_dir;
  return ExpandHostPath(View(s.value), tokens, v);
}

// The state shared by every profile of one load.
struct Globals {
  const HostContext* host = nullptr;
  std::string workspace_dir;
  std::vector<SensitivePath> sensitive;
  std::string data_root;  // canonical; empty when it failed
};

// What differs between the two global host directories.
struct GlobalDirRules {
  unsigned tokens;             // expansion tokens allowed (schema.h)
  const char* expand_hint;     // when expansion fails
  const char* workspace_hint;  // when it lands inside the workspace
};

// Expands and canonicalises a global directory setting and refuses one
// inside the workspace (which the agent can write).
std::optional<std::string> ResolveGlobalDir(const Setting<std::string>& s, const Globals& g,
                                            const GlobalDirRules& rules, Diagnostics& diags) {
  absl::StatusOr<std::string> expanded = ExpandGlobal(s, rules.tokens, *g.host);
  if (!expanded.ok()) {
    diags.Error(s.origin, absl::StrCat(Q(s.value), " ", expanded.status().message()),
                rules.expand_hint);
    return std::nullopt;
  }
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(*expanded);
  if (!canon.ok()) {
    diags.Error(s.origin, std::string(canon.status().message()));
    return std::nullopt;
  }
  if (!g.workspace_dir.empty() && PathIsWithin(*canon, g.workspace_dir)) {
    diags.Error(s.origin,
                absl::StrCat("resolves to ", Q(*canon), ", inside the workspace ",
                             Q(g.workspace_dir), ", which the agent can write"),
                rules.workspace_hint);
    return std::nullopt;
  }
  return *std::move(canon);
}

std::optional<std::string> ResolveDataRoot(const Setting<std::string>& s, const Globals& g,
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

std::optional<std::string> ResolveSocketDir(const Setting<std::string>& s, const Globals& g,
                                            Diagnostics& diags) {
  std::optional<std::string> canon =
      ResolveGlobalDir(s, g,
                       {kSocketDirTokens, "the default is \"{runtime_dir}/escalation\"",
                        "escalation sockets live in a private host directory such as "
                        "\"{runtime_dir}/escalation\""},
                       diags);
  if (!canon) return std::nullopt;
  if (!g.data_root.empty() && PathIsWithin(*canon, g.data_root)) {
    diags.Error(s.origin,
                absl::StrCat("resolves to ", Q(*canon),
                             ", inside data_root, whose directories are mounted into sandboxes"),
                "use a private host directory such as \"{runtime_dir}/escalation\"");
    return std::nullopt;
  }
  return canon;
}

// profile_dir = <data_root>/<name>, canonical; refuses a symlink out of data_root.
std::optional<std::string> ResolveProfileDir(const std::string& name, const Origin& at,
                                             const Globals& g, Diagnostics& diags) {
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(absl::StrCat(g.data_root, "/", name));
  if (!canon.ok()) {
    diags.Error(at, absl::StrCat("profile directory: ", canon.status().message()));
    return std::nullopt;
  }
  if (!PathIsWithin(*canon, g.data_root) || *canon == g.data_root) {
    diags.Error(at,
                absl::StrCat("profile directory ", g.data_root, "/", name, " resolves to ",
                             Q(*canon), ", outside data_root ", Q(g.data_root)),
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

// Expands, canonicalises and checks one volume's host path.
std::optional<std::string> ResolveVolumeHost(const VolumeSpec& v, const std::string& name,
                                             const std::string& profile_dir, const Globals& g,
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
      ExpandHostPath(View(v.host.value), kVolumeHostTokens, values);
  if (!expanded.ok()) {
    return fail(absl::StrCat(Q(v.host.value), " ", expanded.status().message()),
                "volume hosts are absolute, or start with ~/, {profile_dir} or {workspace_dir}");
  }
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(*expanded);
  if (!canon.ok()) return fail(std::string(canon.status().message()), "");
  const std::string shown =
      *canon == *expanded ? Q(*canon) : absl::StrCat(Q(*expanded), " (canonical ", Q(*canon), ")");
  if (absl::Status st = CheckNotSensitive(*canon, g.sensitive, /*refuse_ancestors=*/true);
      !st.ok()) {
    return fail(absl::StrCat("volume ", Q(v.host.value), " ", st.message()),
                "volumes may not expose credentials, Lazaret's own files or the workspace's "
                "git directory; mount a narrower directory");
  }
  if (absl::Status st = CheckVolumePlacement(*canon, g.data_root, profile_dir); !st.ok()) {
    return fail(absl::StrCat("volume ", shown, ": ", st.message()), "");
  }
  return *std::move(canon);
}

// A volume's canonical host path with the spec that asked for it.
struct Granted {
  std::string host;
  const VolumeSpec* spec;
};

// The most specific volume covering `path`: the longest canonical host path
// that equals it or is a component-wise ancestor of it (~/d covers ~/d/x,
// not ~/dd). Where several volumes name that same path, the read-only one
// wins with `ties_to_read_only` (a grant), the read-write one without (a
// request). Null when none covers it. The order of the list never matters.
const Granted* MostSpecificVolume(const std::vector<Granted>& volumes, const std::string& path,
                                  bool ties_to_read_only) {
  const Granted* best = nullptr;
  for (const Granted& u : volumes) {
    if (!PathIsWithin(path, u.host)) continue;
    if (best == nullptr || u.host.size() > best->host.size()) {
      best = &u;
      continue;
    }
    if (u.host.size() == best->host.size() && u.spec->access != best->spec->access) {
      const Access wanted = ties_to_read_only ? Access::kReadOnly : Access::kReadWrite;
      if (u.spec->access == wanted) best = &u;
    }
  }
  return best;
}

// The workspace layer `w` (untrusted) against the user's own merge `c`.
void CheckNarrowing(const LayerConfig& w, const LayerConfig& c, const Globals& g,
                    Diagnostics& diags) {
  const std::string hint = TrustHint(w.file);
  if (w.default_profile && c.default_profile &&
      w.default_profile->value != c.default_profile->value) {
    diags.Widening(w.default_profile->origin,
                   absl::StrCat("changes the default profile from ", Q(c.default_profile->value),
                                " to ", Q(w.default_profile->value)),
                   hint);
  }
  auto same_path = [&](const Setting<std::string>& a, const Setting<std::string>& b,
                       unsigned tokens) {
    absl::StatusOr<std::string> ea = ExpandGlobal(a, tokens, *g.host);
    absl::StatusOr<std::string> eb = ExpandGlobal(b, tokens, *g.host);
    return ea.ok() && eb.ok() ? *ea == *eb : a.value == b.value;
  };
  if (w.data_root && c.data_root && !same_path(*w.data_root, *c.data_root, kDataRootTokens)) {
    diags.Widening(w.data_root->origin,
                   absl::StrCat("changes data_root from ", Q(c.data_root->value), " to ",
                                Q(w.data_root->value)),
                   hint);
  }
  if (w.socket_dir && c.socket_dir && !same_path(*w.socket_dir, *c.socket_dir, kSocketDirTokens)) {
    diags.Widening(w.socket_dir->origin,
                   absl::StrCat("changes escalation.socket_dir from ", Q(c.socket_dir->value),
                                " to ", Q(w.socket_dir->value)),
                   hint);
  }
  if (w.escalation_enabled && c.escalation_enabled && w.escalation_enabled->value &&
      !c.escalation_enabled->value) {
    diags.Widening(w.escalation_enabled->origin,
                   "turns host escalation on; your configuration turns it off", hint);
  }
  // Allow and deny lists are handed to the network policy, which may decide
  // by longest prefix. So a workspace keeps every deny entry exactly (a
  // broader deny can lose to a more specific allow), and an allow entry must
  // be one the user granted, or lie inside one and overlap no deny entry.
  const std::vector<Setting<Cidr>>& deny =
      w.default_deny ? w.default_deny->value : c.default_deny->value;
  auto allow_is_narrower = [&](const Cidr& n, const std::vector<Setting<Cidr>>& granted) {
    const bool exact = std::any_of(granted.begin(), granted.end(),
                                   [&](const Setting<Cidr>& g) { return g.value == n; });
    if (exact) return true;
    const bool overlaps_deny = std::any_of(
        deny.begin(), deny.end(), [&](const Setting<Cidr>& d) { return d.value.Overlaps(n); });
    return CoveredBy(n, granted) && !overlaps_deny;
  };
  if (w.default_allow && c.default_allow) {
    for (const Setting<Cidr>& n : w.default_allow->value) {
      if (!allow_is_narrower(n.value, c.default_allow->value)) {
        diags.Widening(n.origin,
                       absl::StrCat("allows ", Q(n.value.ToString()),
                                    ", which is neither an entry of network.default_allow in "
                                    "your configuration nor a part of one that avoids every "
                                    "denied range"),
                       hint);
      }
    }
  }
  if (w.default_deny && c.default_deny) {
    for (const Setting<Cidr>& n : c.default_deny->value) {
      const bool kept = std::any_of(w.default_deny->value.begin(), w.default_deny->value.end(),
                                    [&](const Setting<Cidr>& d) { return d.value == n.value; });
      if (!kept) {
        diags.Widening(
            w.default_deny->origin,
            absl::StrCat("drops ", Q(n.value.ToString()), " from network.default_deny (denied by ",
                         LayerName(n.origin.layer), " ", n.origin.file,
                         "); a workspace file may add deny entries, not remove or "
                         "replace them"),
            hint);
      }
    }
  }
  if (w.auto_approve) {
    for (const Setting<CommandPrefix>& e : w.auto_approve->value) {
      const bool covered =
          c.auto_approve && std::any_of(c.auto_approve->value.begin(), c.auto_approve->value.end(),
                                        [&](const Setting<CommandPrefix>& u) {
                                          return IsArgvPrefix(u.value.argv, e.value.argv);
                                        });
      if (!covered) {
        diags.Widening(e.origin,
                       absl::StrCat("auto-approves ", Q(e.value.text),
                                    ", which no escalation.auto_approve entry of your "
                                    "configuration covers"),
                       hint);
      }
    }
  }
  for (const auto& [name, wp] : w.profiles) {
    auto it = c.profiles.find(name);
    if (it == c.profiles.end()) {
      diags.Widening(
          wp.origin,
          absl::StrCat("defines profile ", Q(name), ", which your configuration does not have"),
          hint);
      continue;
    }
    const ProfileLayer& cp = it->second;
    const std::string base = absl::StrCat("profiles.", name);
    if (wp.image && (!cp.image || wp.image->value != cp.image->value)) {
      diags.Widening(
          wp.image->origin,
          absl::StrCat("changes the image to ", Q(wp.image->value),
                       cp.image ? absl::StrCat(" (your configuration: ", Q(cp.image->value), ")")
                                : std::string()),
          hint);
    }
    if (wp.keep_planted_repositories && wp.keep_planted_repositories->value &&
        !(cp.keep_planted_repositories && cp.keep_planted_repositories->value)) {
      diags.Widening(wp.keep_planted_repositories->origin,
                     absl::StrCat("keeps the git repositories a session plants armed, which ", base,
                                  ".keep_planted_repositories of your configuration does not"),
                     hint);
    }
    if (wp.persistent_dirs) {
      for (const Setting<std::string>& d : wp.persistent_dirs->value) {
        const bool granted =
            cp.persistent_dirs &&
            std::any_of(cp.persistent_dirs->value.begin(), cp.persistent_dirs->value.end(),
                        [&](const Setting<std::string>& u) { return u.value == d.value; });
        if (!granted) {
          diags.Widening(d.origin,
                         absl::StrCat("persists ", Q(d.value), ", which ", base,
                                      ".persistent_dirs of your configuration does not"),
                         hint);
        }
      }
    }
    if (wp.allow_egress) {
      for (const Setting<Cidr>& n : wp.allow_egress->value) {
        if (!cp.allow_egress || !allow_is_narrower(n.value, cp.allow_egress->value)) {
          diags.Widening(n.origin,
                         absl::StrCat("allows egress to ", Q(n.value.ToString()),
                                      ", which is neither an entry of ", base,
                                      ".allow_egress in your configuration nor a part of one "
                                      "that avoids every denied range"),
                         hint);
        }
      }
    }
    if (wp.env) {
      for (const Setting<EnvValue>& e : wp.env->value) {
        if (!e.value.host_pull) continue;  // literals only reach the sandbox
        const bool granted = cp.env && std::any_of(cp.env->value.begin(), cp.env->value.end(),
                                                   [&](const Setting<EnvValue>& u) {
                                                     return u.value.host_pull &&
                                                            u.value.name == e.value.name &&
                                                            u.value.value == e.value.value;
                                                   });
        if (!granted) {
          diags.Widening(e.origin,
                         absl::StrCat("pulls host variable $", e.value.value, " into ",
                                      e.value.name, ", which your configuration does not"),
                         hint);
        }
      }
    }
    if (wp.volumes) {
      // Compare canonical host paths under the user's own data_root.
      std::optional<std::string> profile_dir;
      if (!g.data_root.empty()) {
        Diagnostics ignored;
        profile_dir = ResolveProfileDir(name, wp.origin, g, ignored);
      }
      std::vector<Granted> granted;
      if (cp.volumes && profile_dir) {
        for (const Setting<VolumeSpec>& u : cp.volumes->value) {
          if (auto h = ResolveVolumeHost(u.value, name, *profile_dir, g, nullptr)) {
            granted.push_back({*h, &u.value});
          }
        }
      }
      // The workspace's own volumes, resolved, for the rw-over-ro check.
      std::vector<Granted> asked;
      for (const Setting<VolumeSpec>& v : wp.volumes->value) {
        std::optional<std::string> h;
        if (profile_dir) h = ResolveVolumeHost(v.value, name, *profile_dir, g, &diags);
        if (h) asked.push_back({*h, &v.value});
      }
      for (const Setting<VolumeSpec>& v : wp.volumes->value) {
        auto self = std::find_if(asked.begin(), asked.end(),
                                 [&](const Granted& a) { return a.spec == &v.value; });
        if (self == asked.end()) continue;
        const std::string& h = self->host;
        const Granted* match = MostSpecificVolume(granted, h, /*ties_to_read_only=*/true);
        if (match == nullptr) {
          diags.Widening(v.value.host.origin,
                         absl::StrCat("mounts ", Q(h), ", which no volume of ", base,
                                      " in your configuration grants"),
                         hint);
          continue;
        }
        if (v.value.access == Access::kReadWrite && match->spec->access == Access::kReadOnly) {
          diags.Widening(v.origin,
                         absl::StrCat("mounts ", Q(h), " read-write; your configuration grants ",
                                      match->host == h ? "it" : Q(match->host), " read-only"),
                         hint);
          continue;
        }
        if (v.value.selinux != SelinuxLabel::kNone && v.value.selinux != match->spec->selinux) {
          diags.Widening(v.origin,
                         absl::StrCat("relabels ", Q(h), " with mode ", Q(v.value.mode_text),
                                      ", which your configuration does not"),
                         hint);
        }
        if (v.value.access != Access::kReadWrite) continue;
        // A read-write mount also exposes everything below it: a read-only
        // grant below `h` must stay read-only, which only a more specific
        // read-only volume of this same file can ensure.
        for (const Granted& u : granted) {
          if (u.spec->access != Access::kReadOnly || u.host == h || !PathIsWithin(u.host, h)) {
            continue;
          }
          const Granted* inner = MostSpecificVolume(asked, u.host, /*ties_to_read_only=*/false);
          if (inner != nullptr && inner->spec->access == Access::kReadOnly) continue;
          diags.Widening(v.origin,
                         absl::StrCat("mounts ", Q(h), " read-write, which includes ", Q(u.host),
                                      " that your configuration grants read-only"),
                         hint);
        }
      }
    }
  }
}

void AddSource(ResolvedProfile& p, const std::string& key, const Origin& o) {
  p.sources.push_back({key, o.layer, o.file});
}

std::optional<ResolvedProfile> ResolveOne(const LayerConfig& m, const std::string& name,
                                          const ProfileLayer& pl, const Globals& g,
                                          Diagnostics& diags) {
  const std::string base = absl::StrCat("profiles.", name);
  ResolvedProfile p;
  p.name = name;
  bool ok = true;
  if (!pl.image) {
    Origin at = pl.origin;
    at.key_path = base;
    diags.Error(at, absl::StrCat("profile ", Q(name), " has no image"),
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
  if (pl.keep_planted_repositories) {
    p.keep_planted_repositories = pl.keep_planted_repositories->value;
    AddSource(p, base + ".keep_planted_repositories", pl.keep_planted_repositories->origin);
  }
  for (const Setting<Cidr>& n : m.default_allow->value) p.allow.push_back(n.value);
  AddSource(p, "network.default_allow", m.default_allow->origin);
  if (pl.allow_egress) {
    for (const Setting<Cidr>& n : pl.allow_egress->value) {
      if (std::find(p.allow.begin(), p.allow.end(), n.value) == p.allow.end()) {
        p.allow.push_back(n.value);
      }
    }
    AddSource(p, base + ".allow_egress", pl.allow_egress->origin);
  }
  for (const Setting<Cidr>& n : m.default_deny->value) p.deny.push_back(n.value);
  AddSource(p, "network.default_deny", m.default_deny->origin);
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
    for (const Setting<CommandPrefix>& e : m.auto_approve->value) p.auto_approve.push_back(e.value);
    AddSource(p, "escalation.auto_approve", m.auto_approve->origin);
  }
  if (!ok) return std::nullopt;
  return p;
}

}  // namespace

absl::StatusOr<ResolvedProfile> LoadedConfig::Profile(absl::string_view name) const {
  if (absl::Status st = status(); !st.ok()) return st;
  const std::string wanted = name.empty() ? default_profile : std::string(name);
  if (!IsValidProfileName(wanted)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Q(wanted), " is not a valid profile name (names match ^[a-z0-9_-]{2,32}$)"));
  }
  auto it = profiles.find(wanted);
  if (it == profiles.end()) {
    std::vector<absl::string_view> names;
    for (const auto& [n, p] : profiles) names.push_back(n);
    const std::string close = SuggestKey(wanted, names);
    return absl::NotFoundError(
        absl::StrCat("no profile named ", Q(wanted),
                     close.empty() ? "" : absl::StrCat("; did you mean ", Q(close), "?"),
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
      ParseLayer(Layer::kEmbeddedDefault, kEmbeddedFileName, View(EmbeddedDefaultToml()), diags));
  const LayerConfig* workspace = nullptr;
  bool workspace_trusted = true;
  for (const LayerSource& s : sources) {
    out.layers.push_back({s.layer, s.path, s.sha256, s.trusted});
    parsed.push_back(ParseLayer(s.layer, s.path, View(s.text), diags));
    if (s.layer == Layer::kWorkspace) {
      workspace = &parsed.back();
      workspace_trusted = s.trusted;
    }
  }
  if (diags.has_errors()) return out;

  Globals g;
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
    Globals cg = g;
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
    diags.Error(merged.default_profile->origin,
                absl::StrCat("names profile ", Q(out.default_profile), ", which is not defined"),
                "define [profiles." + out.default_profile + "] or name an existing profile");
  }
  std::optional<std::string> socket_dir = ResolveSocketDir(*merged.socket_dir, g, diags);

  // A replaced deny list that forgets a built-in entry is legal but worth a word.
  if (merged.default_deny->origin.layer != Layer::kEmbeddedDefault) {
    for (const Setting<Cidr>& n : parsed.front().default_deny->value) {
      if (!CoveredBy(n.value, merged.default_deny->value)) {
        diags.Warning(merged.default_deny->origin,
                      absl::StrCat("no longer denies ", Q(n.value.ToString()),
                                   ", which the built-in default denies"),
                      "keep the built-in entries unless you mean to open that range");
      }
    }
  }

  std::map<std::string, ResolvedProfile> profiles;
  for (const auto& [name, pl] : merged.profiles) {
    std::optional<ResolvedProfile> p = ResolveOne(merged, name, pl, g, diags);
    if (!p) continue;
    if (socket_dir) p->socket_dir = *socket_dir;
    profiles.emplace(name, *std::move(p));
  }
  if (!diags.has_errors()) out.profiles = std::move(profiles);
  return out;
}

}  // namespace lazaret::config
