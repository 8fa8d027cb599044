#include "services/configd/narrowing.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/configd/network_narrowing.h"
#include "services/vocab/host_path.h"

namespace lazaret::config {
namespace {

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
    if (!vocab::IsAtOrUnder(path, u.host)) continue;
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

// A timeout may only get shorter. `granted` is the user's value for the
// same setting, named `granted_key`.
void CheckLonger(const std::optional<Setting<uint32_t>>& asked,
                 const std::optional<Setting<uint32_t>>& granted, const std::string& granted_key,
                 const std::string& hint, Diagnostics& diags) {
  if (!asked || !granted || asked->value <= granted->value) return;
  diags.Widening(asked->origin,
                 absl::StrCat("raises the timeout to ", asked->value, " seconds; ", granted_key,
                              " of your configuration is ", granted->value,
                              " seconds (a workspace may only lower it)"),
                 hint);
}

// The [session] and [terminal] keys a workspace table writes (`ws`, `wt`)
// against the user's grant for the same scope: the user's own value for
// that scope (`cs`, `ct`), else the global one (`gs`, `gt`; null for the
// global scope itself), else the built-in default. `scope` is "" or
// "profiles.<name>".
void CheckSessionAndTerminal(const SessionConfig& ws, const TerminalConfig& wt,
                             const SessionConfig& cs, const TerminalConfig& ct,
                             const SessionConfig* gs, const TerminalConfig* gt,
                             const std::string& scope, const std::string& hint,
                             Diagnostics& diags) {
  const std::string at = scope.empty() ? std::string() : scope + ".";
  auto granted = [](const auto& own, const auto* global, auto member) {
    const auto& value = own.*member;
    if (value || global == nullptr) return value;
    return global->*member;
  };
  if (ws.on_detach_stop && !ws.on_detach_stop->value) {
    const auto g = granted(cs, gs, &SessionConfig::on_detach_stop);
    if (g && g->value) {
      diags.Widening(ws.on_detach_stop->origin,
                     absl::StrCat("sets ", at,
                                  "session.on_detach to \"keep\"; your configuration stops a "
                                  "session when its last terminal detaches (a workspace may only "
                                  "set \"stop\")"),
                     hint);
    }
  }
  if (ws.detached_limit) {
    const auto g = granted(cs, gs, &SessionConfig::detached_limit);
    const uint32_t limit = g ? g->value : kDefaultDetachedLimitSeconds;
    if (ws.detached_limit->value > limit) {
      diags.Widening(ws.detached_limit->origin,
                     absl::StrCat("raises ", at, "session.detached_limit to ",
                                  InQuotes(FormatDuration(ws.detached_limit->value)),
                                  "; your configuration has ", InQuotes(FormatDuration(limit)),
                                  " (a workspace may only lower it)"),
                     hint);
    }
  }
  if (wt.clipboard_write && wt.clipboard_write->value) {
    const auto g = granted(ct, gt, &TerminalConfig::clipboard_write);
    if (!(g && g->value)) {
      diags.Widening(wt.clipboard_write->origin,
                     absl::StrCat("sets ", at,
                                  "terminal.clipboard_write, which would let the sandbox set "
                                  "your clipboard; your configuration does not (a workspace may "
                                  "only set it to false)"),
                     hint);
    }
  }
}

}  // namespace

bool CoveredBy(const vocab::Cidr& c, const std::vector<Setting<vocab::Cidr>>& nets) {
  return std::any_of(nets.begin(), nets.end(),
                     [&](const Setting<vocab::Cidr>& n) { return n.value.Covers(c); });
}

void CheckNarrowing(const LayerConfig& w, const LayerConfig& c, const LoadContext& g,
                    Diagnostics& diags) {
  const std::string hint = TrustHint(w.file);
  if (w.default_profile && c.default_profile &&
      w.default_profile->value != c.default_profile->value) {
    diags.Widening(
        w.default_profile->origin,
        absl::StrCat("changes the default profile from ", InQuotes(c.default_profile->value),
                     " to ", InQuotes(w.default_profile->value)),
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
                   absl::StrCat("changes data_root from ", InQuotes(c.data_root->value), " to ",
                                InQuotes(w.data_root->value)),
                   hint);
  }
  if (w.socket_dir && c.socket_dir && !same_path(*w.socket_dir, *c.socket_dir, kSocketDirTokens)) {
    diags.Widening(
        w.socket_dir->origin,
        absl::StrCat("changes escalation.socket_dir from ", InQuotes(c.socket_dir->value), " to ",
                     InQuotes(w.socket_dir->value)),
        hint);
  }
  if (w.escalation_enabled && c.escalation_enabled && w.escalation_enabled->value &&
      !c.escalation_enabled->value) {
    diags.Widening(w.escalation_enabled->origin,
                   "turns host escalation on; your configuration turns it off", hint);
  }
  CheckNetworkNarrowing(w, c, hint, diags);
  if (w.auto_approve) {
    for (const Setting<vocab::CommandPrefix>& e : w.auto_approve->value) {
      const bool covered =
          c.auto_approve && std::any_of(c.auto_approve->value.begin(), c.auto_approve->value.end(),
                                        [&](const Setting<vocab::CommandPrefix>& u) {
                                          return vocab::EntryCovers(u.value, e.value);
                                        });
      if (!covered) {
        diags.Widening(
            e.origin,
            absl::StrCat("auto-approves ", e.value.exact ? "exactly " : "", InQuotes(e.value.text),
                         ", which no escalation.auto_approve entry of your "
                         "configuration covers"),
            hint);
      }
    }
  }
  CheckLonger(w.command_timeout, c.command_timeout, "escalation.command_timeout", hint, diags);
  CheckLonger(w.approval_timeout, c.approval_timeout, "escalation.approval_timeout", hint, diags);
  if (w.rate_limit && c.rate_limit && w.rate_limit->value > c.rate_limit->value) {
    diags.Widening(w.rate_limit->origin,
                   absl::StrCat("raises escalation.rate_limit to ", w.rate_limit->value,
                                " requests per second; your configuration allows ",
                                c.rate_limit->value, " (a workspace may only lower it)"),
                   hint);
  }
  CheckSessionAndTerminal(w.session, w.terminal, c.session, c.terminal, nullptr, nullptr, "", hint,
                          diags);
  for (const auto& [name, wp] : w.profiles) {
    auto it = c.profiles.find(name);
    if (it == c.profiles.end()) {
      diags.Widening(wp.origin,
                     absl::StrCat("defines profile ", InQuotes(name),
                                  ", which your configuration does not have"),
                     hint);
      continue;
    }
    const ProfileLayer& cp = it->second;
    const std::string base = absl::StrCat("profiles.", name);
    CheckSessionAndTerminal(wp.session, wp.terminal, cp.session, cp.terminal, &c.session,
                            &c.terminal, base, hint, diags);
    if (wp.image && (!cp.image || wp.image->value != cp.image->value)) {
      diags.Widening(
          wp.image->origin,
          absl::StrCat("changes the image to ", InQuotes(wp.image->value),
                       cp.image
                           ? absl::StrCat(" (your configuration: ", InQuotes(cp.image->value), ")")
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
    CheckLonger(wp.command_timeout, cp.command_timeout ? cp.command_timeout : c.command_timeout,
                cp.command_timeout ? base + ".command_timeout" : "escalation.command_timeout", hint,
                diags);
    if (wp.persistent_cap) {
      const uint64_t granted =
          cp.persistent_cap ? cp.persistent_cap->value : kDefaultPersistentCapBytes;
      if (wp.persistent_cap->value > granted) {
        diags.Widening(
            wp.persistent_cap->origin,
            absl::StrCat("raises the persistent data cap to ",
                         InQuotes(FormatByteSize(wp.persistent_cap->value)), "; ",
                         cp.persistent_cap
                             ? absl::StrCat(base, ".persistent_cap of your configuration is ")
                             : absl::StrCat("your configuration leaves ", base,
                                            ".persistent_cap at its default, "),
                         InQuotes(FormatByteSize(granted)), " (a workspace may only lower it)"),
            hint);
      }
    }
    if (wp.persistent_dirs) {
      for (const Setting<std::string>& d : wp.persistent_dirs->value) {
        const bool granted =
            cp.persistent_dirs &&
            std::any_of(cp.persistent_dirs->value.begin(), cp.persistent_dirs->value.end(),
                        [&](const Setting<std::string>& u) { return u.value == d.value; });
        if (!granted) {
          diags.Widening(d.origin,
                         absl::StrCat("persists ", InQuotes(d.value), ", which ", base,
                                      ".persistent_dirs of your configuration does not"),
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
                         absl::StrCat("mounts ", InQuotes(h), ", which no volume of ", base,
                                      " in your configuration grants"),
                         hint);
          continue;
        }
        if (v.value.access == Access::kReadWrite && match->spec->access == Access::kReadOnly) {
          diags.Widening(
              v.origin,
              absl::StrCat("mounts ", InQuotes(h), " read-write; your configuration grants ",
                           match->host == h ? "it" : InQuotes(match->host), " read-only"),
              hint);
          continue;
        }
        if (v.value.selinux != SelinuxLabel::kNone && v.value.selinux != match->spec->selinux) {
          diags.Widening(
              v.origin,
              absl::StrCat("relabels ", InQuotes(h), " with mode ", InQuotes(v.value.mode_text),
                           ", which your configuration does not"),
              hint);
        }
        if (v.value.access != Access::kReadWrite) continue;
        // A read-write mount also exposes everything below it: a read-only
        // grant below `h` must stay read-only, which only a more specific
        // read-only volume of this same file can ensure.
        for (const Granted& u : granted) {
          if (u.spec->access != Access::kReadOnly || u.host == h ||
              !vocab::IsAtOrUnder(u.host, h)) {
            continue;
          }
          const Granted* inner = MostSpecificVolume(asked, u.host, /*ties_to_read_only=*/false);
          if (inner != nullptr && inner->spec->access == Access::kReadOnly) continue;
          diags.Widening(
              v.origin,
              absl::StrCat("mounts ", InQuotes(h), " read-write, which includes ", InQuotes(u.host),
                           " that your configuration grants read-only"),
              hint);
        }
      }
    }
  }
}

}  // namespace lazaret::config
