#include "services/configd/toml_reader.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/dns_upstream.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/http_rule.h"

namespace lazaret::config {
namespace {

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

}  // namespace

bool HasControlChar(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string QuoteValue(absl::string_view s) {
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

Origin TomlReader::At(const std::string& key_path, uint32_t line, uint32_t column) const {
  return Origin{layer_, file_, key_path, line, column};
}

Origin TomlReader::At(const std::string& key_path, const toml::node& n) const {
  return At(key_path, n.source().begin.line, n.source().begin.column);
}

void TomlReader::TypeError(const toml::node& n, const std::string& path, const char* expected) {
  diags_.Error(At(path, n), absl::StrCat("expected ", expected, ", found ", TypeName(n)));
}

const toml::table* TomlReader::Table(const toml::table& parent, const char* key,
                                     const std::string& path) {
  const toml::node* n = parent.get(key);
  if (n == nullptr) return nullptr;
  if (const toml::table* t = n->as_table()) return t;
  TypeError(*n, path, "a table");
  return nullptr;
}

std::optional<Setting<std::string>> TomlReader::String(const toml::node& n,
                                                       const std::string& path) {
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

const toml::array* TomlReader::Array(const toml::node& n, const std::string& path) {
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

std::optional<Setting<std::string>> TomlReader::PathTemplate(const toml::node& n,
                                                             const std::string& path,
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
  if (absl::Status st = CheckPathTemplate(ViewOf(s->value), tokens); !st.ok()) {
    diags_.Error(s->origin, absl::StrCat(QuoteValue(s->value), " ", st.message()),
                 "paths may start with ~/ and use only the tokens listed; see "
                 "docs/configuration.md#expansion");
    return std::nullopt;
  }
  return s;
}

template <typename T, typename Parse>
std::optional<SettingList<T>> TomlReader::StringList(const toml::node& n, const std::string& path,
                                                     Parse parse) {
  const toml::array* a = Array(n, path);
  if (a == nullptr) return std::nullopt;
  SettingList<T> out{{}, At(path, n)};
  bool ok = true;
  for (size_t i = 0; i < a->size(); ++i) {
    std::optional<Setting<std::string>> s = String(*a->get(i), absl::StrCat(path, "[", i, "]"));
    std::optional<T> v = s ? parse(*s) : std::nullopt;
    if (!v) {
      ok = false;
      continue;
    }
    out.value.push_back({*std::move(v), s->origin});
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<SettingList<vocab::Cidr>> TomlReader::CidrList(const toml::node& n,
                                                             const std::string& path) {
  return StringList<vocab::Cidr>(
      n, path, [&](const Setting<std::string>& s) -> std::optional<vocab::Cidr> {
        absl::StatusOr<vocab::Cidr> c = vocab::Cidr::Parse(ViewOf(s.value));
        if (!c.ok()) {
          diags_.Error(s.origin, std::string(c.status().message()),
                       "write a network in CIDR form with its host bits zero, e.g. "
                       "\"192.0.2.0/24\" or \"2001:db8::/32\"");
          return std::nullopt;
        }
        return *c;
      });
}

std::optional<SettingList<std::string>> TomlReader::DomainList(const toml::node& n,
                                                               const std::string& path) {
  return StringList<std::string>(
      n, path, [&](const Setting<std::string>& s) -> std::optional<std::string> {
        absl::StatusOr<std::string> name = vocab::CheckDomainPattern(ViewOf(s.value));
        if (!name.ok()) {
          diags_.Error(s.origin, std::string(name.status().message()),
                       "write a host name such as \"api.example.com\", or \"*.example.com\" for "
                       "every name below example.com (see docs/configuration.md#names)");
          return std::nullopt;
        }
        return *std::move(name);
      });
}

std::optional<SettingList<vocab::HttpAllow>> TomlReader::HttpAllowList(const toml::node& n,
                                                                       const std::string& path) {
  return StringList<vocab::HttpAllow>(
      n, path, [&](const Setting<std::string>& s) -> std::optional<vocab::HttpAllow> {
        absl::StatusOr<vocab::HttpAllow> e = vocab::ParseHttpAllow(ViewOf(s.value));
        if (!e.ok()) {
          diags_.Error(s.origin, std::string(e.status().message()),
                       "write \"METHOD /path-prefix\", e.g. \"POST /v1/messages\", \"GET /\" or "
                       "\"* /v1/\"");
          return std::nullopt;
        }
        return *std::move(e);
      });
}

std::optional<SettingList<vocab::PortSpec>> TomlReader::PortList(const toml::node& n,
                                                                 const std::string& path,
                                                                 size_t max) {
  if (const toml::array* a = n.as_array(); a != nullptr && a->size() > max) {
    diags_.Error(At(path, n), absl::StrCat("more than ", max, " port forwards"),
                 "a profile opens a few ports; forward the others live with lazaret port");
    return std::nullopt;
  }
  std::vector<vocab::PortSpec> seen;
  return StringList<vocab::PortSpec>(
      n, path, [&](const Setting<std::string>& s) -> std::optional<vocab::PortSpec> {
        absl::StatusOr<vocab::PortSpec> spec = vocab::ParsePortSpec(ViewOf(s.value));
        if (!spec.ok()) {
          diags_.Error(s.origin, absl::StrCat(QuoteValue(s.value), ": ", spec.status().message()),
                       "write [ADDRESS:]HOSTPORT[:SANDBOXPORT], e.g. \"3000\", \"8080:3000\", "
                       "\"127.0.0.1:1455\" or \"[::1]:3000\"");
          return std::nullopt;
        }
        for (const vocab::PortSpec& o : seen) {
          if (o.host_port == spec->host_port &&
              (o.host_address.empty() || spec->host_address.empty() ||
               o.host_address == spec->host_address)) {
            diags_.Error(s.origin,
                         absl::StrCat("host port ", spec->host_port, " is forwarded twice"),
                         "each host port is forwarded once");
            return std::nullopt;
          }
        }
        seen.push_back(*spec);
        return *std::move(spec);
      });
}

std::optional<SettingList<std::string>> TomlReader::DnsUpstreamList(const toml::node& n,
                                                                    const std::string& path) {
  std::vector<std::string> seen;
  return StringList<std::string>(
      n, path, [&](const Setting<std::string>& s) -> std::optional<std::string> {
        absl::StatusOr<std::string> upstream = CheckDnsUpstream(ViewOf(s.value));
        if (!upstream.ok()) {
          diags_.Error(s.origin, std::string(upstream.status().message()),
                       "write a resolver's address with an optional port, e.g. \"192.0.2.53\", "
                       "\"192.0.2.53:5353\" or \"[2001:db8::53]:53\"");
          return std::nullopt;
        }
        if (std::find(seen.begin(), seen.end(), *upstream) != seen.end()) {
          diags_.Error(s.origin,
                       absl::StrCat(QuoteValue(s.value), " is listed twice (as ",
                                    QuoteValue(*upstream), ")"),
                       "remove the duplicate");
          return std::nullopt;
        }
        seen.push_back(*upstream);
        return *std::move(upstream);
      });
}

std::optional<SettingList<vocab::CommandPrefix>> TomlReader::AutoApprove(const toml::node& n,
                                                                         const std::string& path) {
  const toml::array* a = Array(n, path);
  if (a == nullptr) return std::nullopt;
  SettingList<vocab::CommandPrefix> out{{}, At(path, n)};
  bool ok = true;
  for (size_t i = 0; i < a->size(); ++i) {
    std::optional<Setting<vocab::CommandPrefix>> e =
        AutoApproveEntry(*a->get(i), absl::StrCat(path, "[", i, "]"));
    if (!e) {
      ok = false;
      continue;
    }
    out.value.push_back(*std::move(e));
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<Setting<vocab::CommandPrefix>> TomlReader::AutoApproveEntry(const toml::node& n,
                                                                          const std::string& path) {
  static constexpr char kForms[] =
      "a string \"cmd args\" or a table { prefix = \"cmd args\", options = [\"--opt\"] } or "
      "{ exact = \"cmd args\" }";
  vocab::EntryForm form = vocab::EntryForm::kPrefix;
  const toml::node* text = &n;
  std::string text_path = path;
  std::vector<std::string> options;
  std::optional<Origin> options_origin;
  if (const toml::table* t = n.as_table()) {
    const toml::node* prefix = t->get("prefix");
    const toml::node* exact = t->get("exact");
    bool ok = true;
    for (const auto& [key, value] : *t) {
      const std::string k(key.str());
      if (k == "prefix" || k == "exact" || k == "options") continue;
      diags_.Error(
          At(absl::StrCat(path, ".", k), key.source().begin.line, key.source().begin.column),
          absl::StrCat("unknown key '", k, "'"),
          "an auto_approve table has one of prefix or exact, and a prefix may have options");
      ok = false;
    }
    if (const toml::node* o = t->get("options")) {
      const std::string options_path = absl::StrCat(path, ".options");
      options_origin = At(options_path, *o);
      std::optional<SettingList<std::string>> list = StringList<std::string>(
          *o, options_path,
          [](const Setting<std::string>& s) -> std::optional<std::string> { return s.value; });
      if (!list) {
        ok = false;
      } else {
        for (const Setting<std::string>& s : list->value) options.push_back(s.value);
      }
      if (exact != nullptr) {
        diags_.Error(*options_origin, "an exact entry has no options: it admits only its own words",
                     "write the options into the exact command, or make it "
                     "{ prefix = \"cmd\", options = [\"--opt\"] }");
        ok = false;
      }
    }
    if ((prefix == nullptr) == (exact == nullptr)) {
      diags_.Error(At(path, n),
                   prefix == nullptr ? "the table names no command"
                                     : "the table has both 'prefix' and 'exact'",
                   "write { prefix = \"gh pr view\" } (more arguments may follow) or "
                   "{ exact = \"cat /etc/os-release\" } (nothing may follow)");
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
    form = exact != nullptr ? vocab::EntryForm::kExact : vocab::EntryForm::kPrefix;
    text = exact != nullptr ? exact : prefix;
    text_path = absl::StrCat(path, exact != nullptr ? ".exact" : ".prefix");
  } else if (n.as_string() == nullptr) {
    TypeError(n, path, kForms);
    return std::nullopt;
  }
  std::optional<Setting<std::string>> s = String(*text, text_path);
  if (!s) return std::nullopt;
  std::vector<std::string> warnings;
  absl::StatusOr<vocab::CommandPrefix> p =
      vocab::CheckAutoApproveEntry(ViewOf(s->value), form, options, &warnings);
  if (!p.ok()) {
    const bool about_options = absl::StartsWith(p.status().message(), "options ");
    diags_.Error(about_options && options_origin ? *options_origin : s->origin,
                 absl::StrCat(QuoteValue(s->value), " is refused: ", p.status().message()),
                 about_options
                     ? "list only options that neither read nor write files, load code, print "
                       "secrets nor redirect the request, or let the agent ask (see "
                       "docs/configuration.md#auto_approve)"
                     : "remove it and let the agent ask each time, or approve a narrower, "
                       "read-only command (see docs/configuration.md#auto_approve)");
    return std::nullopt;
  }
  for (std::string& w : warnings) diags_.Warning(s->origin, std::move(w));
  return Setting<vocab::CommandPrefix>{*std::move(p), s->origin};
}

std::optional<Setting<uint32_t>> TomlReader::Seconds(const toml::node& n, const std::string& path,
                                                     int64_t min, int64_t max) {
  return Count(n, path, min, max, "seconds", 60);
}

std::optional<Setting<uint64_t>> TomlReader::ByteSize(const toml::node& n, const std::string& path,
                                                      uint64_t min, uint64_t max) {
  const std::string key = path.substr(path.rfind('.') + 1);
  const std::string range =
      absl::StrCat("the value must be between ", QuoteValue(FormatByteSize(min)), " and ",
                   QuoteValue(FormatByteSize(max)));
  const std::string example = absl::StrCat("write, e.g., ", key, " = \"4GiB\"");
  std::string shown;
  absl::StatusOr<uint64_t> bytes;
  if (const auto* i = n.as_integer()) {
    shown = absl::StrCat(i->get(), " bytes");
    if (i->get() < 0) {
      bytes = absl::OutOfRangeError("negative");
    } else {
      bytes = static_cast<uint64_t>(i->get());
    }
  } else if (n.as_string() != nullptr) {
    std::optional<Setting<std::string>> s = String(n, path);
    if (!s) return std::nullopt;
    shown = QuoteValue(s->value);
    bytes = ParseByteSize(ViewOf(s->value));
  } else {
    diags_.Error(At(path, n), absl::StrCat("expected a size such as \"4GiB\", found ", TypeName(n)),
                 example);
    return std::nullopt;
  }
  if (!bytes.ok() && bytes.status().code() == absl::StatusCode::kInvalidArgument) {
    diags_.Error(At(path, n),
                 absl::StrCat(shown,
                              " is not a size: write a whole number with KiB, MiB, GiB or TiB "
                              "(powers of 1024), e.g. \"4GiB\""),
                 example);
    return std::nullopt;
  }
  if (!bytes.ok() || *bytes < min || *bytes > max) {
    diags_.Error(At(path, n), absl::StrCat(shown, " is out of range: ", range), example);
    return std::nullopt;
  }
  return Setting<uint64_t>{*bytes, At(path, n)};
}

std::optional<Setting<uint32_t>> TomlReader::Duration(const toml::node& n, const std::string& path,
                                                      uint32_t min, uint32_t max) {
  const std::string key = path.substr(path.rfind('.') + 1);
  const std::string example = absl::StrCat("write, e.g., ", key, " = \"12h\"");
  if (n.as_string() == nullptr) {
    diags_.Error(At(path, n),
                 absl::StrCat("expected a duration such as \"12h\", found ", TypeName(n)), example);
    return std::nullopt;
  }
  std::optional<Setting<std::string>> s = String(n, path);
  if (!s) return std::nullopt;
  absl::StatusOr<uint32_t> seconds = ParseDuration(ViewOf(s->value));
  if (!seconds.ok() && seconds.status().code() == absl::StatusCode::kInvalidArgument) {
    diags_.Error(s->origin,
                 absl::StrCat(QuoteValue(s->value),
                              " is not a duration: write a whole number followed by s, m, h or "
                              "d (seconds, minutes, hours, days), e.g. \"12h\""),
                 example);
    return std::nullopt;
  }
  if (!seconds.ok() || *seconds < min || *seconds > max) {
    diags_.Error(
        s->origin,
        absl::StrCat(QuoteValue(s->value), " is out of range: the value must be between ",
                     QuoteValue(FormatDuration(min)), " and ", QuoteValue(FormatDuration(max))),
        example);
    return std::nullopt;
  }
  return Setting<uint32_t>{*seconds, s->origin};
}

std::optional<Setting<uint32_t>> TomlReader::Count(const toml::node& n, const std::string& path,
                                                   int64_t min, int64_t max,
                                                   const std::string& unit, int64_t example) {
  const auto* v = n.as_integer();
  if (v == nullptr) {
    diags_.Error(At(path, n),
                 absl::StrCat("expected an integer number of ", unit, " (", min, " to ", max,
                              "), found ", TypeName(n)),
                 absl::StrCat("write, e.g., ", path.substr(path.rfind('.') + 1), " = ", example));
    return std::nullopt;
  }
  if (v->get() < min || v->get() > max) {
    diags_.Error(At(path, n),
                 absl::StrCat(v->get(), " ", unit, " is out of range: the value must be between ",
                              min, " and ", max, " ", unit));
    return std::nullopt;
  }
  return Setting<uint32_t>{static_cast<uint32_t>(v->get()), At(path, n)};
}

}  // namespace lazaret::config
