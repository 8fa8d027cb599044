#include "services/configd/schema.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/persist_layout.h"
#include "services/configd/toml.h"
#include "services/configd/toml_reader.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/host_path.h"
#include "services/vocab/http_rule.h"
#include "services/vocab/profile_name.h"

namespace lazaret::config {
namespace {

using KeyList = std::vector<absl::string_view>;

const KeyList kTopKeys = {"default_profile", "storage",  "network", "escalation",
                          "session",         "terminal", "profiles"};
const KeyList kStorageKeys = {"data_root"};
const KeyList kNetworkKeys = {"default_allow",  "default_deny", "default_allow_domains",
                              "dns_upstream",   "egress",       "ask_timeout",
                              "ask_unattended", "trust_host_ca"};
const KeyList kEscalationKeys = {"enabled",         "socket_dir",       "auto_approve",
                                 "command_timeout", "approval_timeout", "rate_limit",
                                 "approver"};
const KeyList kProfileKeys = {"image",
                              "persistent_dirs",
                              "allow_egress",
                              "default_allow",
                              "allow_domains",
                              "env",
                              "volumes",
                              "keep_planted_repositories",
                              "command_timeout",
                              "persistent_cap",
                              "egress",
                              "ask_timeout",
                              "ask_unattended",
                              "trust_host_ca",
                              "ports",
                              "session",
                              "terminal",
                              "secrets",
                              "http"};
const KeyList kVolumeKeys = {"host", "container", "mode"};
const KeyList kSessionKeys = {"on_detach", "detached_limit"};
const KeyList kTerminalKeys = {"clipboard_write"};
const KeyList kSecretKeys = {"from", "command", "hosts", "inject", "sandbox_env"};
const KeyList kHttpKeys = {"allow"};

// Where each known key lives, for "belongs in [section]" hints.
const std::vector<std::pair<const KeyList*, const char*>> kSections = {
    {&kTopKeys, "the top level"},
    {&kStorageKeys, "[storage]"},
    {&kNetworkKeys, "[network]"},
    {&kEscalationKeys, "[escalation]"},
    {&kProfileKeys, "[profiles.<name>]"},
    {&kVolumeKeys, "[[profiles.<name>.volumes]]"},
    {&kSessionKeys, "[session]"},
    {&kTerminalKeys, "[terminal]"},
    {&kSecretKeys, "[profiles.<name>.secrets.<secret>]"},
    {&kHttpKeys, "[profiles.<name>.http.\"<host>\"]"},
};

class LayerParser {
 public:
  LayerParser(Layer layer, const std::string& file, Diagnostics& diags)
      : layer_(layer), file_(file), diags_(diags), r_(layer, file, diags) {}

  LayerConfig Parse(absl::string_view text) {
    LayerConfig out;
    out.layer = layer_;
    out.file = file_;
    if (text.size() > kMaxConfigBytes) {
      diags_.Error(r_.At("", 0, 0),
                   absl::StrCat("the file is larger than ", kMaxConfigBytes, " bytes"),
                   "a Lazaret configuration is a few kilobytes; check the file");
      return out;
    }
    toml::parse_result result =
        toml::parse(std::string_view(text.data(), text.size()), std::string_view(file_));
    if (!result) {
      const toml::parse_error& err = result.error();
      diags_.Error(r_.At("", err.source().begin.line, err.source().begin.column),
                   absl::StrCat("TOML syntax error: ", std::string(err.description())),
                   "fix the TOML syntax at this position (see https://toml.io)");
      return out;
    }
    const toml::table& root = result.table();
    CheckKeys(root, "", kTopKeys);
    if (const toml::node* n = root.get("default_profile")) {
      if (auto s = r_.String(*n, "default_profile")) {
        if (!vocab::IsValidProfileName(s->value)) {
          diags_.Error(s->origin,
                       absl::StrCat(QuoteValue(s->value), " is not a valid profile name"),
                       "profile names match ^[a-z0-9_-]{2,32}$");
        } else {
          out.default_profile = std::move(s);
        }
      }
    }
    if (const toml::table* t = r_.Table(root, "storage", "storage")) {
      CheckKeys(*t, "storage", kStorageKeys);
      if (const toml::node* n = t->get("data_root")) {
        out.data_root = r_.PathTemplate(*n, "storage.data_root", kDataRootTokens);
      }
    }
    if (const toml::table* t = r_.Table(root, "network", "network")) {
      CheckKeys(*t, "network", kNetworkKeys);
      if (const toml::node* n = t->get("default_allow")) {
        out.default_allow = r_.CidrList(*n, "network.default_allow");
      }
      if (const toml::node* n = t->get("default_deny")) {
        out.default_deny = r_.CidrList(*n, "network.default_deny");
      }
      if (const toml::node* n = t->get("default_allow_domains")) {
        out.default_allow_domains = r_.DomainList(*n, "network.default_allow_domains");
      }
      if (const toml::node* n = t->get("dns_upstream")) {
        out.dns_upstream = r_.DnsUpstreamList(*n, "network.dns_upstream");
      }
      out.net = Egress(*t, "network");
    }
    if (const toml::table* t = r_.Table(root, "escalation", "escalation")) {
      CheckKeys(*t, "escalation", kEscalationKeys);
      if (const toml::node* n = t->get("enabled")) {
        if (const auto* b = n->as_boolean()) {
          out.escalation_enabled = Setting<bool>{b->get(), r_.At("escalation.enabled", *n)};
        } else {
          r_.TypeError(*n, "escalation.enabled", "a boolean (true or false)");
        }
      }
      if (const toml::node* n = t->get("socket_dir")) {
        out.socket_dir = r_.PathTemplate(*n, "escalation.socket_dir", kSocketDirTokens);
      }
      if (const toml::node* n = t->get("auto_approve")) {
        out.auto_approve = r_.AutoApprove(*n, "escalation.auto_approve");
      }
      if (const toml::node* n = t->get("command_timeout")) {
        out.command_timeout =
            r_.Seconds(*n, "escalation.command_timeout", kMinTimeoutSeconds, kMaxTimeoutSeconds);
      }
      if (const toml::node* n = t->get("approval_timeout")) {
        out.approval_timeout =
            r_.Seconds(*n, "escalation.approval_timeout", kMinTimeoutSeconds, kMaxTimeoutSeconds);
      }
      if (const toml::node* n = t->get("approver")) {
        if (std::optional<Setting<std::string>> v = r_.String(*n, "escalation.approver")) {
          if (v->value == "inline" || v->value == "remote") {
            out.approver = std::move(v);
          } else {
            diags_.Error(v->origin, absl::StrCat(QuoteValue(v->value), " is not an approver"),
                         "escalation.approver is \"inline\" (a prompt in the lazaret run "
                         "terminal when no lazaret approve is attached) or \"remote\" (never "
                         "inline)");
          }
        }
      }
      if (const toml::node* n = t->get("rate_limit")) {
        out.rate_limit = r_.Count(*n, "escalation.rate_limit", kMinRateLimit, kMaxRateLimit,
                                  "requests per second", 10);
      }
    }
    if (const toml::table* t = r_.Table(root, "session", "session")) {
      out.session = Session(*t, "session");
    }
    if (const toml::table* t = r_.Table(root, "terminal", "terminal")) {
      out.terminal = Terminal(*t, "terminal");
    }
    if (const toml::table* t = r_.Table(root, "profiles", "profiles")) {
      if (t->size() > kMaxProfiles) {
        diags_.Error(r_.At("profiles", *t), absl::StrCat("more than ", kMaxProfiles, " profiles"));
      } else {
        for (const auto& [key, node] : *t) {
          const std::string name(key.str());
          const std::string path = absl::StrCat("profiles.", name);
          if (!vocab::IsValidProfileName(name)) {
            diags_.Error(r_.At(path, key.source().begin.line, key.source().begin.column),
                         absl::StrCat(QuoteValue(name), " is not a valid profile name"),
                         "profile names match ^[a-z0-9_-]{2,32}$: lowercase letters, digits, "
                         "'_' and '-', 2 to 32 characters");
            continue;
          }
          const toml::table* pt = node.as_table();
          if (pt == nullptr) {
            r_.TypeError(node, path, "a table ([profiles.<name>])");
            continue;
          }
          out.profiles[name] = Profile(*pt, path);
        }
      }
    }
    return out;
  }

 private:
  void CheckKeys(const toml::table& t, const std::string& path, const KeyList& known) {
    for (const auto& [key, node] : t) {
      const absl::string_view k(key.str().data(), key.str().size());
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      const std::string key_path = path.empty() ? std::string(k) : absl::StrCat(path, ".", k);
      std::string hint;
      for (const auto& [keys, section] : kSections) {
        if (keys != &known && std::find(keys->begin(), keys->end(), k) != keys->end()) {
          hint = absl::StrCat("'", k, "' belongs in ", section);
          break;
        }
      }
      if (hint.empty()) {
        const std::string suggestion = SuggestKey(k, known);
        hint = suggestion.empty() ? absl::StrCat("valid keys here: ", absl::StrJoin(known, ", "))
                                  : absl::StrCat("did you mean '", suggestion, "'?");
      }
      diags_.Error(r_.At(key_path, key.source().begin.line, key.source().begin.column),
                   absl::StrCat("unknown key '", k, "'"), hint);
    }
  }

  ProfileLayer Profile(const toml::table& t, const std::string& path) {
    ProfileLayer p;
    p.origin = r_.At(path, t);
    CheckKeys(t, path, kProfileKeys);
    if (const toml::node* n = t.get("image")) {
      const std::string kp = absl::StrCat(path, ".image");
      if (auto s = r_.String(*n, kp)) {
        std::string warning;
        if (absl::Status st = CheckImageReference(ViewOf(s->value), &warning); !st.ok()) {
          diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), ": ", st.message()),
                       "write a full reference such as "
                       "\"docker.io/library/debian:trixie-20250101\" or "
                       "\"registry.example/name@sha256:<64 hex digits>\"");
        } else {
          if (!warning.empty()) {
            diags_.Warning(s->origin, warning,
                           "pin a specific version tag or an @sha256 digest so the sandbox "
                           "does not change under you");
          }
          p.image = std::move(s);
        }
      }
    }
    if (const toml::node* n = t.get("persistent_dirs")) {
      const std::string kp = absl::StrCat(path, ".persistent_dirs");
      if (const toml::array* a = r_.Array(*n, kp)) {
        SettingList<std::string> dirs{{}, r_.At(kp, *n)};
        std::set<std::string> seen;
        bool ok = true;
        for (size_t i = 0; i < a->size(); ++i) {
          auto s = r_.String(*a->get(i), absl::StrCat(kp, "[", i, "]"));
          if (!s) {
            ok = false;
            continue;
          }
          absl::StatusOr<std::string> clean = CheckContainerPath(ViewOf(s->value));
          if (!clean.ok()) {
            diags_.Error(s->origin,
                         absl::StrCat(QuoteValue(s->value), " ", clean.status().message()),
                         "persistent_dirs are absolute paths inside the container, e.g. \"/usr\" "
                         "or \"/root\"");
            ok = false;
            continue;
          }
          if (absl::Status st = CheckPersistentDir(*clean); !st.ok()) {
            diags_.Error(s->origin, std::string(st.message()),
                         "persist a directory of the image such as \"/usr\", \"/etc\" or "
                         "\"/root\"");
            ok = false;
            continue;
          }
          if (!seen.insert(*clean).second) {
            diags_.Error(s->origin, absl::StrCat(QuoteValue(*clean), " is listed twice"),
                         "remove the duplicate");
            ok = false;
            continue;
          }
          // One overlay inside another would hide the outer one's changes
          // below the inner directory (and the inner one's lower layer
          // would not be the outer one's view).
          const Setting<std::string>* outer = nullptr;
          for (const Setting<std::string>& o : dirs.value) {
            if (vocab::IsAtOrUnder(*clean, o.value) || vocab::IsAtOrUnder(o.value, *clean))
              outer = &o;
          }
          if (outer != nullptr) {
            const bool inside = vocab::IsAtOrUnder(*clean, outer->value);
            diags_.Error(s->origin,
                         absl::StrCat(QuoteValue(*clean), inside ? " is inside " : " contains ",
                                      QuoteValue(outer->value),
                                      ", also listed: persistent directories may not nest"),
                         absl::StrCat("keep only ", QuoteValue(inside ? outer->value : *clean),
                                      " (it persists everything below it)"));
            ok = false;
            continue;
          }
          dirs.value.push_back({*clean, s->origin});
        }
        if (ok) p.persistent_dirs = std::move(dirs);
      }
    }
    if (const toml::node* n = t.get("allow_egress")) {
      p.allow_egress = r_.CidrList(*n, absl::StrCat(path, ".allow_egress"));
    }
    if (const toml::node* n = t.get("default_allow")) {
      p.default_allow = r_.CidrList(*n, absl::StrCat(path, ".default_allow"));
    }
    if (const toml::node* n = t.get("allow_domains")) {
      p.allow_domains = r_.DomainList(*n, absl::StrCat(path, ".allow_domains"));
    }
    if (const toml::node* n = t.get("env")) {
      const std::string kp = absl::StrCat(path, ".env");
      if (const toml::table* et = n->as_table()) {
        if (et->size() > kMaxListEntries) {
          diags_.Error(r_.At(kp, *n), absl::StrCat("more than ", kMaxListEntries, " variables"));
        } else {
          SettingList<EnvValue> env{{}, r_.At(kp, *n)};
          bool ok = true;
          for (const auto& [key, node] : *et) {
            const std::string name(key.str());
            const std::string vp = absl::StrCat(kp, ".", name);
            if (!IsValidEnvName(name)) {
              diags_.Error(
                  r_.At(vp, key.source().begin.line, key.source().begin.column),
                  absl::StrCat(QuoteValue(name), " is not a valid environment variable name"),
                  "names match ^[A-Za-z_][A-Za-z0-9_]*$");
              ok = false;
              continue;
            }
            auto s = r_.String(node, vp);
            if (!s) {
              ok = false;
              continue;
            }
            EnvValue ev{name, false, s->value};
            if (absl::StartsWith(s->value, "env:")) {
              ev.host_pull = true;
              ev.value = s->value.substr(4);
              if (!IsValidEnvName(ev.value)) {
                diags_.Error(s->origin,
                             absl::StrCat(QuoteValue(s->value), " does not name a host variable"),
                             "write \"env:VAR\" with VAR matching ^[A-Za-z_][A-Za-z0-9_]*$");
                ok = false;
                continue;
              }
            } else if (std::any_of(s->value.begin(), s->value.end(), [](char c) {
                         const auto u = static_cast<unsigned char>(c);
                         return (u < 0x20 && c != '\t') || u == 0x7f;
                       })) {
              diags_.Error(s->origin, "the value contains a newline or control character",
                           "environment values are single-line text");
              ok = false;
              continue;
            }
            env.value.push_back({std::move(ev), s->origin});
          }
          if (ok) p.env = std::move(env);
        }
      } else {
        r_.TypeError(*n, kp, "a table of NAME = \"value\" or NAME = \"env:VAR\"");
      }
    }
    if (const toml::node* n = t.get("keep_planted_repositories")) {
      const std::string kp = absl::StrCat(path, ".keep_planted_repositories");
      if (const auto* b = n->as_boolean()) {
        p.keep_planted_repositories = Setting<bool>{b->get(), r_.At(kp, *n)};
      } else {
        r_.TypeError(*n, kp, "a boolean (true or false)");
      }
    }
    if (const toml::node* n = t.get("command_timeout")) {
      p.command_timeout = r_.Seconds(*n, absl::StrCat(path, ".command_timeout"), kMinTimeoutSeconds,
                                     kMaxTimeoutSeconds);
    }
    if (const toml::node* n = t.get("persistent_cap")) {
      p.persistent_cap = r_.ByteSize(*n, absl::StrCat(path, ".persistent_cap"),
                                     kMinPersistentCapBytes, kMaxPersistentCapBytes);
    }
    p.net = Egress(t, path);
    if (const toml::table* st = r_.Table(t, "session", absl::StrCat(path, ".session"))) {
      p.session = Session(*st, absl::StrCat(path, ".session"));
    }
    if (const toml::table* tt = r_.Table(t, "terminal", absl::StrCat(path, ".terminal"))) {
      p.terminal = Terminal(*tt, absl::StrCat(path, ".terminal"));
    }
    if (const toml::node* n = t.get("ports")) {
      const std::string kp = absl::StrCat(path, ".ports");
      if (layer_ == Layer::kWorkspace) {
        // Trusted or not: a forward exposes the sandbox to the host, and
        // the workspace is written by the agent.
        diags_.Error(r_.At(kp, *n), "a workspace file may not open ports",
                     "open ports in your own configuration file "
                     "(~/.config/lazaret/config.toml), with lazaret run -p, or with "
                     "lazaret port SESSION add");
      } else {
        p.ports = r_.PortList(*n, kp, kMaxPortForwards);
      }
    }
    if (const toml::node* n = t.get("secrets")) {
      const std::string kp = absl::StrCat(path, ".secrets");
      if (layer_ == Layer::kWorkspace) {
        // Trusted or not: a secret names a value of the host and where it
        // may be sent, and the workspace is written by the agent.
        diags_.Error(r_.At(kp, *n), "a workspace file may not name secrets",
                     "define secrets in your own configuration file "
                     "(~/.config/lazaret/config.toml) or a --config file");
      } else if (const toml::table* st = r_.Table(t, "secrets", kp)) {
        Secrets(*st, kp, p);
      }
    }
    if (const toml::table* ht = r_.Table(t, "http", absl::StrCat(path, ".http"))) {
      HttpRules(*ht, absl::StrCat(path, ".http"), p);
    }
    if (const toml::node* n = t.get("volumes")) {
      const std::string kp = absl::StrCat(path, ".volumes");
      if (const toml::array* a = r_.Array(*n, kp)) {
        SettingList<VolumeSpec> vols{{}, r_.At(kp, *n)};
        std::set<std::string> containers;
        bool ok = true;
        for (size_t i = 0; i < a->size(); ++i) {
          const std::string vp = absl::StrCat(kp, "[", i, "]");
          std::optional<VolumeSpec> v = Volume(*a->get(i), vp);
          if (!v) {
            ok = false;
            continue;
          }
          if (!containers.insert(v->container.value).second) {
            diags_.Error(v->container.origin,
                         absl::StrCat("two volumes mount at ", QuoteValue(v->container.value)),
                         "each container path may be mounted once");
            ok = false;
            continue;
          }
          vols.value.push_back({*std::move(v), r_.At(vp, *a->get(i))});
        }
        if (ok) p.volumes = std::move(vols);
      }
    }
    return p;
  }

  // [profiles.<name>.secrets] (`path`): each [.<secret>] table into `p`.
  void Secrets(const toml::table& t, const std::string& path, ProfileLayer& p) {
    if (t.size() > kMaxListEntries) {
      diags_.Error(r_.At(path, t), absl::StrCat("more than ", kMaxListEntries, " secrets"));
      return;
    }
    for (const auto& [key, node] : t) {
      const std::string name(key.str());
      const std::string sp = absl::StrCat(path, ".", name);
      if (!IsValidSecretName(name)) {
        diags_.Error(r_.At(sp, key.source().begin.line, key.source().begin.column),
                     absl::StrCat(QuoteValue(name), " is not a valid secret name"),
                     "secret names are 1 to 64 letters, digits, '_' and '-'");
        continue;
      }
      if (std::optional<SecretSpec> s = Secret(node, name, sp)) p.secrets[name] = *std::move(s);
    }
  }

  std::optional<SecretSpec> Secret(const toml::node& n, const std::string& name,
                                   const std::string& path) {
    const toml::table* t = n.as_table();
    if (t == nullptr) {
      r_.TypeError(n, path, "a table [profiles.<name>.secrets.<secret>]");
      return std::nullopt;
    }
    CheckKeys(*t, path, kSecretKeys);
    SecretSpec out;
    out.name = name;
    out.origin = r_.At(path, n);
    bool ok = true;
    const toml::node* from = t->get("from");
    const toml::node* command = t->get("command");
    if ((from == nullptr) == (command == nullptr)) {
      diags_.Error(out.origin,
                   from == nullptr ? "the secret does not say where its value comes from"
                                   : "the secret has both 'from' and 'command'",
                   "write exactly one: from = \"env:VAR\" (a variable of lazaret run's "
                   "environment) or from = \"file:PATH\" (a host file), or command = [\"argv\", "
                   "...] (run on the host; its output is the value)");
      ok = false;
    } else if (from != nullptr) {
      ok = SecretFrom(*from, absl::StrCat(path, ".from"), out) && ok;
    } else {
      ok = SecretCommand(*command, absl::StrCat(path, ".command"), out) && ok;
    }
    if (const toml::node* h = t->get("hosts")) {
      const std::string hp = absl::StrCat(path, ".hosts");
      if (const toml::array* a = h->as_array(); a != nullptr && a->size() > kMaxSecretHosts) {
        diags_.Error(r_.At(hp, *h), absl::StrCat("more than ", kMaxSecretHosts, " hosts"),
                     "a secret belongs to the few hosts of one service; use a wildcard such as "
                     "\"*.example.com\"");
        ok = false;
      } else if (std::optional<SettingList<std::string>> hosts = r_.DomainList(*h, hp)) {
        if (hosts->value.empty()) {
          diags_.Error(hosts->origin, "the secret may be sent to no host",
                       "list the hosts it belongs to, e.g. hosts = [\"api.example.com\"]");
          ok = false;
        }
        out.hosts = std::move(hosts->value);
      } else {
        ok = false;
      }
    } else {
      diags_.Error(out.origin, "the secret has no 'hosts'",
                   "list the hosts it may be sent to, e.g. hosts = [\"api.example.com\"]");
      ok = false;
    }
    if (const toml::node* i = t->get("inject")) {
      ok = SecretInject(*i, absl::StrCat(path, ".inject"), out) && ok;
    } else {
      diags_.Error(out.origin, "the secret has no 'inject'",
                   "say how it is sent: inject = \"header:NAME\", \"bearer\" or \"basic\"");
      ok = false;
    }
    if (const toml::node* e = t->get("sandbox_env")) {
      if (auto v = r_.String(*e, absl::StrCat(path, ".sandbox_env"))) {
        if (IsValidEnvName(v->value)) {
          out.sandbox_env = std::move(v);
        } else {
          diags_.Error(
              v->origin,
              absl::StrCat(QuoteValue(v->value), " is not a valid environment variable name"),
              "names match ^[A-Za-z_][A-Za-z0-9_]*$, e.g. \"ANTHROPIC_API_KEY\"");
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // from = "env:VAR" or "file:PATH".
  bool SecretFrom(const toml::node& n, const std::string& path, SecretSpec& out) {
    std::optional<Setting<std::string>> v = r_.String(n, path);
    if (!v) return false;
    const absl::string_view text = ViewOf(v->value);
    if (absl::StartsWith(text, "env:")) {
      const absl::string_view var = text.substr(4);
      if (!IsValidEnvName(var)) {
        diags_.Error(v->origin,
                     absl::StrCat(QuoteValue(v->value), " does not name a host variable"),
                     "write \"env:VAR\" with VAR matching ^[A-Za-z_][A-Za-z0-9_]*$");
        return false;
      }
      out.source = SecretSource::kEnv;
      out.from = {std::string(var), v->origin};
      return true;
    }
    if (absl::StartsWith(text, "file:")) {
      const absl::string_view file = text.substr(5);
      const bool control = HasControlChar(file);
      absl::Status st = file.empty() ? absl::InvalidArgumentError("names no file")
                        : control    ? absl::InvalidArgumentError("contains a control character")
                                     : CheckPathTemplate(file, kSecretFileTokens);
      if (!st.ok()) {
        diags_.Error(v->origin, absl::StrCat(QuoteValue(v->value), " ", st.message()),
                     "write \"file:PATH\" with an absolute path or one starting with ~/, e.g. "
                     "\"file:~/.config/anthropic/key\"");
        return false;
      }
      out.source = SecretSource::kFile;
      out.from = {std::string(file), v->origin};
      return true;
    }
    diags_.Error(v->origin,
                 absl::StrCat(QuoteValue(v->value), " does not say where the value comes from"),
                 "from is \"env:VAR\" (a variable of lazaret run's environment) or \"file:PATH\" "
                 "(a host file); for a program's output use command = [...] instead");
    return false;
  }

  // command = ["argv0", ...]: run on the host, never through a shell.
  bool SecretCommand(const toml::node& n, const std::string& path, SecretSpec& out) {
    const toml::array* a = r_.Array(n, path);
    if (a == nullptr) return false;
    if (a->empty()) {
      diags_.Error(r_.At(path, n), "the command is empty",
                   "write the program and its arguments, e.g. [\"secret-tool\", \"lookup\", "
                   "\"service\", \"anthropic\"]");
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < a->size(); ++i) {
      std::optional<Setting<std::string>> w =
          r_.String(*a->get(i), absl::StrCat(path, "[", i, "]"));
      if (!w) {
        ok = false;
        continue;
      }
      // A relative program path would resolve in lazaret run's working
      // directory: the workspace, which the agent writes.
      if (i == 0 &&
          (w->value.empty() || (w->value.find('/') != std::string::npos && w->value[0] != '/'))) {
        diags_.Error(w->origin,
                     absl::StrCat(QuoteValue(w->value),
                                  " is not a program: name one on your PATH or by its absolute "
                                  "path (a relative path would resolve in the workspace)"),
                     "e.g. \"secret-tool\" or \"/usr/bin/secret-tool\"");
        ok = false;
        continue;
      }
      out.command.push_back(std::move(w->value));
    }
    if (ok) out.source = SecretSource::kCommand;
    return ok;
  }

  // inject = "header:NAME", "bearer" or "basic".
  bool SecretInject(const toml::node& n, const std::string& path, SecretSpec& out) {
    std::optional<Setting<std::string>> v = r_.String(n, path);
    if (!v) return false;
    if (v->value == "bearer" || v->value == "basic") {
      out.inject = v->value == "bearer" ? SecretInjection::kBearer : SecretInjection::kBasic;
      return true;
    }
    if (absl::StartsWith(v->value, "header:")) {
      absl::StatusOr<std::string> header = vocab::CheckInjectHeaderName(ViewOf(v->value).substr(7));
      if (!header.ok()) {
        diags_.Error(v->origin, std::string(header.status().message()),
                     "name the header the service reads the key from, e.g. "
                     "\"header:x-api-key\"");
        return false;
      }
      out.inject = SecretInjection::kHeader;
      out.header = *std::move(header);
      return true;
    }
    diags_.Error(v->origin, absl::StrCat(QuoteValue(v->value), " is not a way to send a secret"),
                 "inject is \"header:NAME\" (the placeholder replaced in that header's value), "
                 "\"bearer\" (Authorization: Bearer) or \"basic\" (the password of "
                 "Authorization: Basic)");
    return false;
  }

  // [profiles.<name>.http] (`path`): each ."<host>" table into `p`.
  void HttpRules(const toml::table& t, const std::string& path, ProfileLayer& p) {
    if (t.size() > kMaxListEntries) {
      diags_.Error(r_.At(path, t), absl::StrCat("more than ", kMaxListEntries, " hosts"));
      return;
    }
    for (const auto& [key, node] : t) {
      const std::string written(key.str());
      const std::string hp = absl::StrCat(path, ".", QuoteValue(written));
      const Origin at = r_.At(hp, key.source().begin.line, key.source().begin.column);
      absl::StatusOr<std::string> host = vocab::CheckDomainPattern(ViewOf(written));
      if (!host.ok()) {
        diags_.Error(at, std::string(host.status().message()),
                     "write a host name such as \"api.example.com\", or \"*.example.com\" for "
                     "every name below example.com (see docs/configuration.md#names)");
        continue;
      }
      if (p.http.count(*host) != 0) {
        diags_.Error(at, absl::StrCat(QuoteValue(*host), " has two tables"),
                     "write one table per host (names are compared in lower case)");
        continue;
      }
      const toml::table* ht = node.as_table();
      if (ht == nullptr) {
        r_.TypeError(node, hp, "a table [profiles.<name>.http.\"<host>\"] with allow = [...]");
        continue;
      }
      CheckKeys(*ht, hp, kHttpKeys);
      const toml::node* allow = ht->get("allow");
      if (allow == nullptr) {
        diags_.Error(r_.At(hp, node), "the rule has no 'allow'",
                     "list what may be sent, e.g. allow = [\"POST /v1/messages\"]");
        continue;
      }
      const std::string ap = absl::StrCat(hp, ".allow");
      const toml::array* a = allow->as_array();
      if (a != nullptr && (a->empty() || a->size() > vocab::kMaxHttpAllowEntries)) {
        diags_.Error(r_.At(ap, *allow),
                     a->empty()
                         ? std::string("the rule allows nothing")
                         : absl::StrCat("more than ", vocab::kMaxHttpAllowEntries, " entries"),
                     a->empty() ? "list at least one \"METHOD /path-prefix\"; to refuse the host, "
                                  "leave it out of the allowed names"
                                : "use shorter prefixes or \"*\" for the method");
        continue;
      }
      std::optional<SettingList<vocab::HttpAllow>> entries = r_.HttpAllowList(*allow, ap);
      if (!entries) continue;
      p.http[*host] = HttpRuleSpec{*host, r_.At(hp, node), std::move(entries->value)};
    }
  }

  // egress, ask_timeout, ask_unattended and trust_host_ca of [network] or
  // [profiles.<name>] (`path`).
  EgressSettings Egress(const toml::table& t, const std::string& path) {
    EgressSettings out;
    if (const toml::node* n = t.get("egress")) {
      const std::string kp = absl::StrCat(path, ".egress");
      if (auto s = r_.String(*n, kp)) {
        absl::StatusOr<EgressMode> mode = ParseEgressMode(ViewOf(s->value));
        if (mode.ok()) {
          out.egress = Setting<EgressMode>{*mode, s->origin};
        } else {
          diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), " ", mode.status().message()),
                       "egress is \"open\" (every public address and name), \"names\" (only "
                       "listed names and CIDRs) or \"ask\" (as names, and unlisted names are "
                       "asked for)");
        }
      }
    }
    if (const toml::node* n = t.get("ask_timeout")) {
      out.ask_timeout = r_.Seconds(*n, absl::StrCat(path, ".ask_timeout"), kMinAskTimeoutSeconds,
                                   kMaxAskTimeoutSeconds);
    }
    if (const toml::node* n = t.get("ask_unattended")) {
      const std::string kp = absl::StrCat(path, ".ask_unattended");
      if (auto s = r_.String(*n, kp)) {
        if (s->value == "deny" || s->value == "wait") {
          out.ask_unattended_wait = Setting<bool>{s->value == "wait", s->origin};
        } else {
          diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), " is not a choice here"),
                       "ask_unattended is \"deny\" (refuse unlisted names at once when no "
                       "approver is attached) or \"wait\" (hold them until ask_timeout)");
        }
      }
    }
    if (const toml::node* n = t.get("trust_host_ca")) {
      const std::string kp = absl::StrCat(path, ".trust_host_ca");
      if (const auto* b = n->as_boolean()) {
        out.trust_host_ca = Setting<bool>{b->get(), r_.At(kp, *n)};
      } else {
        r_.TypeError(*n, kp, "a boolean (true or false)");
      }
    }
    return out;
  }

  // [session] or [profiles.<name>.session] (`path`).
  SessionConfig Session(const toml::table& t, const std::string& path) {
    SessionConfig out;
    CheckKeys(t, path, kSessionKeys);
    if (const toml::node* n = t.get("on_detach")) {
      const std::string kp = absl::StrCat(path, ".on_detach");
      if (auto s = r_.String(*n, kp)) {
        if (s->value == "keep" || s->value == "stop") {
          out.on_detach_stop = Setting<bool>{s->value == "stop", s->origin};
        } else {
          diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), " is not a choice here"),
                       "on_detach is \"keep\" (the session runs on with no terminal attached, "
                       "up to detached_limit; lazaret attach picks it up) or \"stop\" (the "
                       "session stops cleanly when its last terminal detaches)");
        }
      }
    }
    if (const toml::node* n = t.get("detached_limit")) {
      out.detached_limit = r_.Duration(*n, absl::StrCat(path, ".detached_limit"),
                                       kMinDetachedLimitSeconds, kMaxDetachedLimitSeconds);
    }
    return out;
  }

  // [terminal] or [profiles.<name>.terminal] (`path`).
  TerminalConfig Terminal(const toml::table& t, const std::string& path) {
    TerminalConfig out;
    CheckKeys(t, path, kTerminalKeys);
    if (const toml::node* n = t.get("clipboard_write")) {
      const std::string kp = absl::StrCat(path, ".clipboard_write");
      if (const auto* b = n->as_boolean()) {
        out.clipboard_write = Setting<bool>{b->get(), r_.At(kp, *n)};
      } else {
        r_.TypeError(*n, kp, "a boolean (true or false)");
      }
    }
    return out;
  }

  std::optional<VolumeSpec> Volume(const toml::node& n, const std::string& path) {
    const toml::table* t = n.as_table();
    if (t == nullptr) {
      r_.TypeError(n, path, "a table { host = \"...\", container = \"...\", mode = \"ro\" }");
      return std::nullopt;
    }
    CheckKeys(*t, path, kVolumeKeys);
    VolumeSpec v;
    bool ok = true;
    const toml::node* host = t->get("host");
    const toml::node* container = t->get("container");
    if (host == nullptr || container == nullptr) {
      diags_.Error(r_.At(path, n),
                   absl::StrCat("a volume needs '", host == nullptr ? "host" : "container", "'"),
                   "write { host = \"~/src/shared\", container = \"/shared\", mode = \"ro\" }");
      return std::nullopt;
    }
    if (auto h = r_.PathTemplate(*host, absl::StrCat(path, ".host"), kVolumeHostTokens)) {
      v.host = *std::move(h);
    } else {
      ok = false;
    }
    if (auto c = r_.String(*container, absl::StrCat(path, ".container"))) {
      absl::StatusOr<std::string> clean = CheckContainerPath(ViewOf(c->value));
      if (clean.ok()) {
        v.container = {*clean, c->origin};
      } else {
        diags_.Error(c->origin, absl::StrCat(QuoteValue(c->value), " ", clean.status().message()),
                     "use an absolute path such as \"/data\"");
        ok = false;
      }
    } else {
      ok = false;
    }
    v.mode_text = "ro";
    if (const toml::node* m = t->get("mode")) {
      if (auto s = r_.String(*m, absl::StrCat(path, ".mode"))) {
        if (absl::Status st = ParseVolumeMode(ViewOf(s->value), &v.access, &v.selinux); !st.ok()) {
          diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), ": ", st.message()),
                       "mode is a comma-separated subset of ro|rw and z|Z, e.g. \"ro\", \"rw\", "
                       "\"ro,z\", \"rw,Z\"");
          ok = false;
        } else {
          v.mode_text = s->value.empty() ? "ro" : s->value;
        }
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return v;
  }

  Layer layer_;
  const std::string& file_;
  Diagnostics& diags_;
  TomlReader r_;
};

}  // namespace

LayerConfig ParseLayer(Layer layer, const std::string& file, absl::string_view text,
                       Diagnostics& diags) {
  return LayerParser(layer, file, diags).Parse(text);
}

}  // namespace lazaret::config
