#include "services/configd/schema.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/configd/toml.h"

namespace lazaret::config {
namespace {

using KeyList = std::vector<absl::string_view>;

const KeyList kTopKeys = {"default_profile", "storage", "network", "escalation", "profiles"};
const KeyList kStorageKeys = {"data_root"};
const KeyList kNetworkKeys = {"default_allow", "default_deny"};
const KeyList kEscalationKeys = {"enabled", "socket_dir", "auto_approve"};
const KeyList kProfileKeys = {"image", "persistent_dirs", "allow_egress",
                              "env",   "volumes",         "keep_planted_repositories"};
const KeyList kVolumeKeys = {"host", "container", "mode"};

// Where each known key lives, for "belongs in [section]" hints.
const std::vector<std::pair<const KeyList*, const char*>> kSections = {
    {&kTopKeys, "the top level"},         {&kStorageKeys, "[storage]"},
    {&kNetworkKeys, "[network]"},         {&kEscalationKeys, "[escalation]"},
    {&kProfileKeys, "[profiles.<name>]"}, {&kVolumeKeys, "[[profiles.<name>.volumes]]"},
};

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, "\\u00", absl::string_view("0123456789abcdef").substr(c >> 4, 1),
                      absl::string_view("0123456789abcdef").substr(c & 15, 1));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

bool HasControlChar(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

absl::string_view View(const std::string& s) { return absl::string_view(s.data(), s.size()); }

class LayerParser {
 public:
  LayerParser(Layer layer, const std::string& file, Diagnostics& diags)
      : layer_(layer), file_(file), diags_(diags) {}

  LayerConfig Parse(absl::string_view text) {
    LayerConfig out;
    out.layer = layer_;
    out.file = file_;
    if (text.size() > kMaxConfigBytes) {
      diags_.Error(At("", 0, 0),
                   absl::StrCat("the file is larger than ", kMaxConfigBytes, " bytes"),
                   "a Lazaret configuration is a few kilobytes; check the file");
      return out;
    }
    toml::parse_result result =
        toml::parse(std::string_view(text.data(), text.size()), std::string_view(file_));
    if (!result) {
      const toml::parse_error& err = result.error();
      diags_.Error(At("", err.source().begin.line, err.source().begin.column),
                   absl::StrCat("TOML syntax error: ", std::string(err.description())),
                   "fix the TOML syntax at this position (see https://toml.io)");
      return out;
    }
    const toml::table& root = result.table();
    CheckKeys(root, "", kTopKeys);
    if (const toml::node* n = root.get("default_profile")) {
      if (auto s = String(*n, "default_profile")) {
        if (!IsValidProfileName(s->value)) {
          diags_.Error(s->origin, absl::StrCat(Quote(s->value), " is not a valid profile name"),
                       "profile names match ^[a-z0-9_-]{2,32}$");
        } else {
          out.default_profile = std::move(s);
        }
      }
    }
    if (const toml::table* t = Table(root, "storage", "storage")) {
      CheckKeys(*t, "storage", kStorageKeys);
      if (const toml::node* n = t->get("data_root")) {
        out.data_root = PathTemplate(*n, "storage.data_root", kDataRootTokens);
      }
    }
    if (const toml::table* t = Table(root, "network", "network")) {
      CheckKeys(*t, "network", kNetworkKeys);
      if (const toml::node* n = t->get("default_allow")) {
        out.default_allow = CidrList(*n, "network.default_allow");
      }
      if (const toml::node* n = t->get("default_deny")) {
        out.default_deny = CidrList(*n, "network.default_deny");
      }
    }
    if (const toml::table* t = Table(root, "escalation", "escalation")) {
      CheckKeys(*t, "escalation", kEscalationKeys);
      if (const toml::node* n = t->get("enabled")) {
        if (const auto* b = n->as_boolean()) {
          out.escalation_enabled = Setting<bool>{b->get(), At("escalation.enabled", *n)};
        } else {
          TypeError(*n, "escalation.enabled", "a boolean (true or false)");
        }
      }
      if (const toml::node* n = t->get("socket_dir")) {
        out.socket_dir = PathTemplate(*n, "escalation.socket_dir", kSocketDirTokens);
      }
      if (const toml::node* n = t->get("auto_approve")) {
        out.auto_approve = AutoApprove(*n, "escalation.auto_approve");
      }
    }
    if (const toml::table* t = Table(root, "profiles", "profiles")) {
      if (t->size() > kMaxProfiles) {
        diags_.Error(At("profiles", *t), absl::StrCat("more than ", kMaxProfiles, " profiles"));
      } else {
        for (const auto& [key, node] : *t) {
          const std::string name(key.str());
          const std::string path = absl::StrCat("profiles.", name);
          if (!IsValidProfileName(name)) {
            diags_.Error(At(path, key.source().begin.line, key.source().begin.column),
                         absl::StrCat(Quote(name), " is not a valid profile name"),
                         "profile names match ^[a-z0-9_-]{2,32}$: lowercase letters, digits, "
                         "'_' and '-', 2 to 32 characters");
            continue;
          }
          const toml::table* pt = node.as_table();
          if (pt == nullptr) {
            TypeError(node, path, "a table ([profiles.<name>])");
            continue;
          }
          out.profiles[name] = Profile(*pt, path);
        }
      }
    }
    return out;
  }

 private:
  Origin At(const std::string& key_path, uint32_t line, uint32_t column) const {
    return Origin{layer_, file_, key_path, line, column};
  }
  Origin At(const std::string& key_path, const toml::node& n) const {
    return At(key_path, n.source().begin.line, n.source().begin.column);
  }

  void TypeError(const toml::node& n, const std::string& path, const char* expected) {
    diags_.Error(At(path, n), absl::StrCat("expected ", expected, ", found ", TypeName(n)));
  }

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
      diags_.Error(At(key_path, key.source().begin.line, key.source().begin.column),
                   absl::StrCat("unknown key '", k, "'"), hint);
    }
  }

  const toml::table* Table(const toml::table& parent, const char* key, const std::string& path) {
    const toml::node* n = parent.get(key);
    if (n == nullptr) return nullptr;
    if (const toml::table* t = n->as_table()) return t;
    TypeError(*n, path, "a table");
    return nullptr;
  }

  std::optional<Setting<std::string>> String(const toml::node& n, const std::string& path) {
    const auto* s = n.as_string();
    if (s == nullptr) {
      TypeError(n, path, "a string");
      return std::nullopt;
    }
    const std::string& v = s->get();
    if (v.size() > kMaxStringBytes) {
      diags_.Error(At(path, n),
                   absl::StrCat("the string is longer than ", kMaxStringBytes, " bytes"));
      return std::nullopt;
    }
    if (v.find('\0') != std::string::npos) {
      diags_.Error(At(path, n), "the string contains a NUL character");
      return std::nullopt;
    }
    return Setting<std::string>{v, At(path, n)};
  }

  const toml::array* Array(const toml::node& n, const std::string& path) {
    const toml::array* a = n.as_array();
    if (a == nullptr) {
      TypeError(n, path, "an array");
      return nullptr;
    }
    if (a->size() > kMaxListEntries) {
      diags_.Error(At(path, n), absl::StrCat("more than ", kMaxListEntries, " entries"));
      return nullptr;
    }
    return a;
  }

  std::optional<Setting<std::string>> PathTemplate(const toml::node& n, const std::string& path,
                                                   unsigned tokens) {
    auto s = String(n, path);
    if (!s) return std::nullopt;
    if (s->value.empty()) {
      diags_.Error(s->origin, "the path is empty");
      return std::nullopt;
    }
    if (HasControlChar(s->value)) {
      diags_.Error(s->origin, "the path contains a control character");
      return std::nullopt;
    }
    if (absl::Status st = CheckPathTemplate(View(s->value), tokens); !st.ok()) {
      diags_.Error(s->origin, absl::StrCat(Quote(s->value), " ", st.message()),
                   "paths may start with ~/ and use only the tokens listed; see "
                   "docs/configuration.md#expansion");
      return std::nullopt;
    }
    return s;
  }

  std::optional<SettingList<Cidr>> CidrList(const toml::node& n, const std::string& path) {
    const toml::array* a = Array(n, path);
    if (a == nullptr) return std::nullopt;
    SettingList<Cidr> out{{}, At(path, n)};
    bool ok = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string ep = absl::StrCat(path, "[", i, "]");
      auto s = String(*a->get(i), ep);
      if (!s) {
        ok = false;
        continue;
      }
      absl::StatusOr<Cidr> c = Cidr::Parse(View(s->value));
      if (!c.ok()) {
        diags_.Error(s->origin, std::string(c.status().message()),
                     "write a network in CIDR form with its host bits zero, e.g. "
                     "\"192.0.2.0/24\" or \"2001:db8::/32\"");
        ok = false;
        continue;
      }
      out.value.push_back({*c, s->origin});
    }
    if (!ok) return std::nullopt;
    return out;
  }

  std::optional<SettingList<CommandPrefix>> AutoApprove(const toml::node& n,
                                                        const std::string& path) {
    const toml::array* a = Array(n, path);
    if (a == nullptr) return std::nullopt;
    SettingList<CommandPrefix> out{{}, At(path, n)};
    bool ok = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string ep = absl::StrCat(path, "[", i, "]");
      auto s = String(*a->get(i), ep);
      if (!s) {
        ok = false;
        continue;
      }
      std::vector<std::string> warnings;
      absl::StatusOr<CommandPrefix> p = CheckAutoApproveEntry(View(s->value), &warnings);
      if (!p.ok()) {
        diags_.Error(s->origin,
                     absl::StrCat(Quote(s->value), " is refused: ", p.status().message()),
                     "remove it and let the agent ask each time, or approve a narrower, "
                     "read-only command (see docs/configuration.md#auto_approve)");
        ok = false;
        continue;
      }
      for (std::string& w : warnings) diags_.Warning(s->origin, std::move(w));
      out.value.push_back({*std::move(p), s->origin});
    }
    if (!ok) return std::nullopt;
    return out;
  }

  ProfileLayer Profile(const toml::table& t, const std::string& path) {
    ProfileLayer p;
    p.origin = At(path, t);
    CheckKeys(t, path, kProfileKeys);
    if (const toml::node* n = t.get("image")) {
      const std::string kp = absl::StrCat(path, ".image");
      if (auto s = String(*n, kp)) {
        std::string warning;
        if (absl::Status st = CheckImageReference(View(s->value), &warning); !st.ok()) {
          diags_.Error(s->origin, absl::StrCat(Quote(s->value), ": ", st.message()),
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
      if (const toml::array* a = Array(*n, kp)) {
        SettingList<std::string> dirs{{}, At(kp, *n)};
        std::set<std::string> seen;
        bool ok = true;
        for (size_t i = 0; i < a->size(); ++i) {
          auto s = String(*a->get(i), absl::StrCat(kp, "[", i, "]"));
          if (!s) {
            ok = false;
            continue;
          }
          absl::StatusOr<std::string> clean = CheckContainerPath(View(s->value));
          if (!clean.ok()) {
            diags_.Error(s->origin, absl::StrCat(Quote(s->value), " ", clean.status().message()),
                         "persistent_dirs are absolute paths inside the container, e.g. \"/usr\" "
                         "or \"/root\"");
            ok = false;
            continue;
          }
          if (!seen.insert(*clean).second) {
            diags_.Error(s->origin, absl::StrCat(Quote(*clean), " is listed twice"),
                         "remove the duplicate");
            ok = false;
            continue;
          }
          dirs.value.push_back({*clean, s->origin});
        }
        if (ok) p.persistent_dirs = std::move(dirs);
      }
    }
    if (const toml::node* n = t.get("allow_egress")) {
      p.allow_egress = CidrList(*n, absl::StrCat(path, ".allow_egress"));
    }
    if (const toml::node* n = t.get("env")) {
      const std::string kp = absl::StrCat(path, ".env");
      if (const toml::table* et = n->as_table()) {
        if (et->size() > kMaxListEntries) {
          diags_.Error(At(kp, *n), absl::StrCat("more than ", kMaxListEntries, " variables"));
        } else {
          SettingList<EnvValue> env{{}, At(kp, *n)};
          bool ok = true;
          for (const auto& [key, node] : *et) {
            const std::string name(key.str());
            const std::string vp = absl::StrCat(kp, ".", name);
            if (!IsValidEnvName(name)) {
              diags_.Error(At(vp, key.source().begin.line, key.source().begin.column),
                           absl::StrCat(Quote(name), " is not a valid environment variable name"),
                           "names match ^[A-Za-z_][A-Za-z0-9_]*$");
              ok = false;
              continue;
            }
            auto s = String(node, vp);
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
                             absl::StrCat(Quote(s->value), " does not name a host variable"),
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
        TypeError(*n, kp, "a table of NAME = \"value\" or NAME = \"env:VAR\"");
      }
    }
    if (const toml::node* n = t.get("keep_planted_repositories")) {
      const std::string kp = absl::StrCat(path, ".keep_planted_repositories");
      if (const auto* b = n->as_boolean()) {
        p.keep_planted_repositories = Setting<bool>{b->get(), At(kp, *n)};
      } else {
        TypeError(*n, kp, "a boolean (true or false)");
      }
    }
    if (const toml::node* n = t.get("volumes")) {
      const std::string kp = absl::StrCat(path, ".volumes");
      if (const toml::array* a = Array(*n, kp)) {
        SettingList<VolumeSpec> vols{{}, At(kp, *n)};
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
                         absl::StrCat("two volumes mount at ", Quote(v->container.value)),
                         "each container path may be mounted once");
            ok = false;
            continue;
          }
          vols.value.push_back({*std::move(v), At(vp, *a->get(i))});
        }
        if (ok) p.volumes = std::move(vols);
      }
    }
    return p;
  }

  std::optional<VolumeSpec> Volume(const toml::node& n, const std::string& path) {
    const toml::table* t = n.as_table();
    if (t == nullptr) {
      TypeError(n, path, "a table { host = \"...\", container = \"...\", mode = \"ro\" }");
      return std::nullopt;
    }
    CheckKeys(*t, path, kVolumeKeys);
    VolumeSpec v;
    bool ok = true;
    const toml::node* host = t->get("host");
    const toml::node* container = t->get("container");
    if (host == nullptr || container == nullptr) {
      diags_.Error(At(path, n),
                   absl::StrCat("a volume needs '", host == nullptr ? "host" : "container", "'"),
                   "write { host = \"~/src/shared\", container = \"/shared\", mode = \"ro\" }");
      return std::nullopt;
    }
    if (auto h = PathTemplate(*host, absl::StrCat(path, ".host"), kVolumeHostTokens)) {
      v.host = *std::move(h);
    } else {
      ok = false;
    }
    if (auto c = String(*container, absl::StrCat(path, ".container"))) {
      absl::StatusOr<std::string> clean = CheckContainerPath(View(c->value));
      if (clean.ok()) {
        v.container = {*clean, c->origin};
      } else {
        diags_.Error(c->origin, absl::StrCat(Quote(c->value), " ", clean.status().message()),
                     "use an absolute path such as \"/data\"");
        ok = false;
      }
    } else {
      ok = false;
    }
    v.mode_text = "ro";
    if (const toml::node* m = t->get("mode")) {
      if (auto s = String(*m, absl::StrCat(path, ".mode"))) {
        if (absl::Status st = ParseVolumeMode(View(s->value), &v.access, &v.selinux); !st.ok()) {
          diags_.Error(s->origin, absl::StrCat(Quote(s->value), ": ", st.message()),
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
};

}  // namespace

bool IsValidProfileName(absl::string_view name) {
  if (name.size() < 2 || name.size() > 32) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool IsValidEnvName(absl::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

absl::Status ParseVolumeMode(absl::string_view mode, Access* access, SelinuxLabel* selinux) {
  *access = Access::kReadOnly;
  *selinux = SelinuxLabel::kNone;
  if (mode.empty()) return absl::OkStatus();
  bool have_access = false;
  bool have_label = false;
  for (absl::string_view opt : absl::StrSplit(mode, ',')) {
    if (opt == "ro" || opt == "rw") {
      if (have_access) return absl::InvalidArgumentError("ro/rw is given more than once");
      have_access = true;
      *access = opt == "rw" ? Access::kReadWrite : Access::kReadOnly;
    } else if (opt == "z" || opt == "Z") {
      if (have_label) return absl::InvalidArgumentError("z/Z is given more than once");
      have_label = true;
      *selinux = opt == "z" ? SelinuxLabel::kShared : SelinuxLabel::kPrivate;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown mount option \"", opt, "\" (allowed: ro, rw, z, Z)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckImageReference(absl::string_view image, std::string* warning) {
  if (image.empty()) return absl::InvalidArgumentError("the image is empty");
  if (image.size() > 512) return absl::InvalidArgumentError("the reference is too long");
  if (!absl::ascii_isalnum(static_cast<unsigned char>(image[0]))) {
    return absl::InvalidArgumentError("a reference starts with a letter or digit");
  }
  for (char c : image) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        absl::string_view("._-/:@").find(c) == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", absl::string_view(&c, 1), "' cannot appear in an image reference"));
    }
  }
  absl::string_view name = image;
  bool digest = false;
  if (const size_t at = image.find('@'); at != absl::string_view::npos) {
    absl::string_view d = image.substr(at + 1);
    name = image.substr(0, at);
    if (!absl::ConsumePrefix(&d, "sha256:") || d.size() != 64 ||
        !std::all_of(d.begin(), d.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
      return absl::InvalidArgumentError("a digest is written @sha256:<64 lowercase hex digits>");
    }
    digest = true;
  }
  std::string tag;
  const size_t slash = name.rfind('/');
  const size_t colon = name.rfind(':');
  if (colon != absl::string_view::npos && (slash == absl::string_view::npos || colon > slash)) {
    tag = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
    if (tag.empty() || tag.size() > 128 || tag[0] == '.' || tag[0] == '-' ||
        tag.find('/') != std::string::npos) {
      return absl::InvalidArgumentError("the tag is malformed");
    }
  }
  std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::string_view part = parts[i];
    if (part.empty()) return absl::InvalidArgumentError("the name has an empty path component");
    if (i > 0 || parts.size() == 1) {
      for (char c : part) {
        if (absl::ascii_isupper(static_cast<unsigned char>(c)) || c == ':' || c == '@') {
          return absl::InvalidArgumentError("repository names are lowercase");
        }
      }
    }
  }
  std::vector<std::string> notes;
  if (!digest && (tag.empty() || tag == "latest")) {
    notes.push_back(tag.empty() ? "the image has no tag (podman uses :latest), so it is not pinned"
                                : "the image uses :latest, so it is not pinned");
  }
  const absl::string_view first = parts[0];
  const bool qualified =
      parts.size() > 1 && (first == "localhost" || first.find('.') != absl::string_view::npos ||
                           first.find(':') != absl::string_view::npos);
  if (!qualified) {
    notes.push_back(
        "the image has no registry, so podman resolves the short name through "
        "registries.conf; write the registry (e.g. docker.io/library/...)");
  }
  if (warning != nullptr) *warning = absl::StrJoin(notes, "; ");
  return absl::OkStatus();
}

std::string SuggestKey(absl::string_view unknown, const std::vector<absl::string_view>& known) {
  std::string best;
  size_t best_d = 3;
  const std::string u = absl::AsciiStrToLower(unknown);
  for (absl::string_view k : known) {
    // Optimal string alignment distance.
    const size_t n = u.size();
    const size_t m = k.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 1; j <= m; ++j) {
        const size_t cost = u[i - 1] == k[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && u[i - 1] == k[j - 2] && u[i - 2] == k[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    const size_t dist = d[n][m];
    if (dist < best_d && dist < std::max<size_t>(u.size(), 2)) {
      best_d = dist;
      best = std::string(k);
    }
  }
  // Also catch a singular/plural slip or a missing prefix ("profile", "allow").
  if (best.empty()) {
    for (absl::string_view k : known) {
      if (u.size() >= 4 && absl::StartsWith(k, u)) return std::string(k);
    }
  }
  return best;
}

LayerConfig ParseLayer(Layer layer, const std::string& file, absl::string_view text,
                       Diagnostics& diags) {
  return LayerParser(layer, file, diags).Parse(text);
}

}  // namespace lazaret::config
