#include "clients/lazaret/config/print.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/configd/diagnostics.h"
#include "services/configd/schema_values.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::config {
namespace {

namespace pb = ::lazaret::config::v1;
namespace cpb = ::lazaret::common::v1;

std::string AccessText(const pb::Volume& v) {
  std::string m = v.access() == pb::MOUNT_ACCESS_READ_WRITE ? "rw" : "ro";
  if (v.selinux() == pb::SELINUX_LABEL_SHARED) m += ",z";
  if (v.selinux() == pb::SELINUX_LABEL_PRIVATE) m += ",Z";
  return m;
}

// "[user: /path/config.toml:12]"; the built-in default has no file to open.
std::string EntrySourceText(const pb::EntrySource& s) {
  if (s.layer() == cpb::CONFIG_LAYER_EMBEDDED_DEFAULT) return "[embedded default]";
  return absl::StrCat("[", LayerText(s.layer()), ": ", vocab::EscapeForTerminal(s.file()), ":",
                      s.line(), "]");
}

// One labelled block of entries, each with its source, values aligned.
void PrintEntries(const char* label, const std::vector<std::pair<std::string, std::string>>& rows,
                  const char* none) {
  if (rows.empty()) {
    std::printf("  %-16s %s\n", label, none);
    return;
  }
  size_t width = 0;
  for (const auto& [value, source] : rows) width = std::max(width, value.size());
  width = std::min<size_t>(width, 40);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("  %-16s %-*s   %s\n", i == 0 ? label : "", static_cast<int>(width),
                rows[i].first.c_str(), rows[i].second.c_str());
  }
}

// The network section: every allow and deny entry and allowed name with
// the file and line it came from, and the resolvers asked for names.
// Names and files are escaped: a workspace file may have supplied them.
void PrintNetwork(const pb::NetworkPolicy& n, std::map<std::string, std::string>& from) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const pb::CidrEntry& e : n.allow()) {
    rows.emplace_back(vocab::EscapeForTerminal(e.cidr().prefix()), EntrySourceText(e.source()));
  }
  PrintEntries("network allow", rows,
               n.allow_domains().empty() ? "(none: every address is denied)"
                                         : "(none: only what the names below resolve to)");
  rows.clear();
  for (const pb::CidrEntry& e : n.deny()) {
    rows.emplace_back(vocab::EscapeForTerminal(e.cidr().prefix()), EntrySourceText(e.source()));
  }
  PrintEntries("network deny", rows, "(none)");
  rows.clear();
  for (const pb::DomainEntry& e : n.allow_domains()) {
    rows.emplace_back(vocab::EscapeForTerminal(e.pattern()), EntrySourceText(e.source()));
  }
  PrintEntries("allow_domains", rows, "(none)");
  rows.clear();
  for (const std::string& u : n.dns_upstream()) {
    rows.emplace_back(vocab::EscapeForTerminal(u), from["network.dns_upstream"]);
  }
  PrintEntries("dns_upstream", rows, "(the host's resolvers, /etc/resolv.conf)");
}

}  // namespace

const char* LayerText(cpb::ConfigLayer l) {
  switch (l) {
    case cpb::CONFIG_LAYER_EMBEDDED_DEFAULT:
      return "embedded default";
    case cpb::CONFIG_LAYER_USER:
      return "user";
    case cpb::CONFIG_LAYER_WORKSPACE:
      return "workspace";
    case cpb::CONFIG_LAYER_EXPLICIT:
      return "--config";
    default:
      return "?";
  }
}

std::string FormatDiagnostic(const pb::Diagnostic& d) {
  return ::lazaret::config::FormatDiagnostic(::lazaret::config::Diagnostic{
      d.file(), d.key_path(), d.line(), d.column(), d.message(), d.hint(), d.widening()});
}

void PrintLayers(const google::protobuf::RepeatedPtrField<pb::LayerInfo>& layers) {
  std::printf("Configuration layers (lowest first):\n");
  for (const pb::LayerInfo& l : layers) {
    std::string note;
    if (!l.sha256().empty()) note = absl::StrCat("  sha256:", l.sha256().substr(0, 12));
    if (l.layer() == cpb::CONFIG_LAYER_WORKSPACE) {
      absl::StrAppend(&note,
                      l.trusted() ? "  trusted (lazaret trust)" : "  not trusted: may only narrow");
    }
    std::printf("  %-17s %s%s\n", LayerText(l.layer()), l.path().c_str(), note.c_str());
  }
}

void PrintDiagnostics(const char* kind,
                      const google::protobuf::RepeatedPtrField<pb::Diagnostic>& ds, FILE* out) {
  for (const pb::Diagnostic& d : ds) {
    std::fprintf(out, "%s: %s\n", kind, FormatDiagnostic(d).c_str());
  }
}

void PrintProfile(const pb::ResolveProfileResponse& resp) {
  const pb::ResolvedProfile& p = resp.profile();
  std::map<std::string, std::string> from;
  for (const pb::KeySource& k : p.key_sources()) {
    from[k.key_path()] = k.layer() == cpb::CONFIG_LAYER_EMBEDDED_DEFAULT
                             ? "[embedded default]"
                             : absl::StrCat("[", LayerText(k.layer()), ": ", k.file(), "]");
  }
  const std::string base = absl::StrCat("profiles.", p.name(), ".");
  auto row = [&](const char* label, const std::string& value, const std::string& key) {
    std::printf("  %-16s %s%s%s\n", label, value.c_str(), key.empty() ? "" : "   ",
                key.empty() ? "" : from[key].c_str());
  };
  std::printf("Profile %s\n", p.name().c_str());
  row("image", p.image(), base + "image");
  row("data_root", p.data_root(), "storage.data_root");
  row("profile_dir", p.profile_dir(), "");
  row("persistent_dirs",
      p.persistent_dirs().empty() ? "(none)" : absl::StrJoin(p.persistent_dirs(), " "),
      p.persistent_dirs().empty() ? "" : base + "persistent_dirs");
  if (from.count(base + "persistent_cap") != 0) {
    row("persistent_cap", ::lazaret::config::FormatByteSize(p.persistent_cap_bytes()),
        base + "persistent_cap");
  } else {
    row("persistent_cap",
        absl::StrCat(::lazaret::config::FormatByteSize(p.persistent_cap_bytes()),
                     "   [built-in default]"),
        "");
  }
  PrintNetwork(p.network(), from);
  // The egress settings: each comes from the profile's own key, else
  // [network]'s.
  auto own_or_network = [&](const char* key) {
    const std::string own = base + key;
    return from.count(own) != 0 ? own : absl::StrCat("network.", key);
  };
  const pb::NetworkPolicy& n = p.network();
  const char* egress = n.egress() == pb::EGRESS_MODE_OPEN    ? "open (every public address and name)"
                       : n.egress() == pb::EGRESS_MODE_NAMES ? "names (only the listed ones)"
                                                             : "ask (unlisted names are asked for)";
  row("egress", egress, own_or_network("egress"));
  row("ask_timeout", absl::StrCat(n.ask_timeout_seconds(), " s"), own_or_network("ask_timeout"));
  row("ask_unattended",
      n.ask_unattended() == pb::ASK_UNATTENDED_WAIT ? "wait (hold until ask_timeout)"
                                                    : "deny (refuse at once)",
      own_or_network("ask_unattended"));
  row("trust_host_ca", p.trust_host_ca() ? "true" : "false", own_or_network("trust_host_ca"));
  if (n.ports().empty()) row("ports", "(none)", "");
  for (int i = 0; i < n.ports_size(); ++i) {
    const cpb::PortForward& f = n.ports(i);
    const std::string host = f.host_address().empty() ? "127.0.0.1 and ::1"
                                                       : vocab::EscapeForTerminal(f.host_address());
    std::printf("  %-16s host %s port %u -> sandbox port %u   %s\n", i == 0 ? "ports" : "",
                host.c_str(), f.host_port(), f.sandbox_port(), from[base + "ports"].c_str());
  }
  if (p.env().empty()) row("env", "(none)", "");
  for (int i = 0; i < p.env_size(); ++i) {
    const pb::EnvVar& e = p.env(i);
    // Values are never printed: a literal may be a secret too.
    const std::string what = e.has_host_var()
                                 ? absl::StrCat(e.name(), " <- host $", e.host_var())
                                 : absl::StrCat(e.name(), " (literal, value not shown)");
    std::printf("  %-16s %s   [%s]\n", i == 0 ? "env" : "", what.c_str(), LayerText(e.source()));
  }
  if (p.volumes().empty()) row("volumes", "(none)", "");
  for (int i = 0; i < p.volumes_size(); ++i) {
    const pb::Volume& v = p.volumes(i);
    std::printf("  %-16s %s -> %s (%s)   [%s]\n", i == 0 ? "volumes" : "", v.host().c_str(),
                v.container().c_str(), AccessText(v).c_str(), LayerText(v.source()));
  }
  // Secrets by name: where the value comes from (never the value: the
  // service never reads it), how and where it is sent, and the sandbox
  // variable holding its placeholder. HTTP rules by host, entries in
  // order. Escaped: a workspace file may have supplied the rules.
  std::vector<std::pair<std::string, std::string>> secret_rows;
  for (const pb::Secret& sec : p.secrets()) {
    const std::string source =
        sec.has_from_command()
            ? absl::StrCat("command ", absl::StrJoin(sec.from_command().argv(), " "))
        : sec.has_from_file() ? absl::StrCat("file ", sec.from_file())
                              : absl::StrCat("host $", sec.from_env());
    const std::string how = sec.inject() == pb::SECRET_INJECTION_HEADER
                                ? absl::StrCat("header ", sec.header())
                            : sec.inject() == pb::SECRET_INJECTION_BASIC ? "basic"
                                                                         : "bearer";
    const std::string sandbox =
        sec.sandbox_env().empty() ? "" : absl::StrCat(", sandbox $", sec.sandbox_env());
    secret_rows.emplace_back(
        vocab::EscapeForTerminal(absl::StrCat(sec.name(), " <- ", source, ", ", how, " to ",
                                              absl::StrJoin(sec.hosts(), " "), sandbox)),
        from[absl::StrCat(base, "secrets.", sec.name())]);
  }
  PrintEntries("secrets", secret_rows, "(none)");
  std::vector<std::pair<std::string, std::string>> http_rows;
  for (const pb::HttpRule& r : p.http_rules()) {
    std::vector<std::string> allow;
    for (const pb::HttpAllow& a : r.allow()) allow.push_back(a.method() + " " + a.path_prefix());
    http_rows.emplace_back(
        vocab::EscapeForTerminal(absl::StrCat(r.host(), ": ", absl::StrJoin(allow, ", "))),
        from[absl::StrCat(base, "http.\"", r.host(), "\"")]);
  }
  PrintEntries("http", http_rows, "(no rule: every request allowed)");
  row("escalation", p.escalation().enabled() ? "enabled" : "disabled", "escalation.enabled");
  row("socket_dir", p.escalation().socket_dir(), "escalation.socket_dir");
  const pb::EscalationPolicy& esc = p.escalation();
  const std::string command_key = from.count(base + "command_timeout") != 0
                                      ? base + "command_timeout"
                                      : "escalation.command_timeout";
  row("command_timeout", absl::StrCat(esc.command_timeout_seconds(), " s"), command_key);
  row("approval_timeout", absl::StrCat(esc.approval_timeout_seconds(), " s"),
      "escalation.approval_timeout");
  row("rate_limit", absl::StrCat(esc.rate_limit(), " requests/s"), "escalation.rate_limit");
  row("approver",
      esc.approver() == pb::EscalationPolicy::APPROVER_REMOTE ? "remote (never inline)"
                                                              : "inline (when none is attached)",
      "escalation.approver");
  // The entries as written (escaped: a workspace file may have supplied
  // them), prefix entries followed by "..." (plain operands) and the
  // options they list.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const pb::CommandPrefix& c : esc.auto_approve()) {
    const std::string text =
        c.text().empty() ? absl::StrJoin(c.argv(), " ") : std::string(c.text());
    const std::string options =
        c.options().empty()
            ? std::string()
            : absl::StrCat(" (options ", vocab::EscapeForTerminal(absl::StrJoin(c.options(), " ")),
                           ")");
    rows.emplace_back(
        absl::StrCat(c.exact() ? "exactly: " : "prefix:  ", vocab::EscapeForTerminal(text),
                     c.exact() ? "" : " ...", options),
        absl::StrCat("[", LayerText(c.source()), "]"));
  }
  PrintEntries("auto_approve", rows, "(none)");
  // The session and terminal settings: each from the profile's own table,
  // else the global one.
  auto own_or_global = [&](const char* table, const char* key) {
    const std::string own = absl::StrCat(base, table, ".", key);
    return from.count(own) != 0 ? own : absl::StrCat(table, ".", key);
  };
  const pb::SessionSettings& session = p.session();
  row("on_detach",
      session.on_detach() == pb::ON_DETACH_STOP ? "stop (when the last terminal detaches)"
                                                : "keep (runs on with no terminal attached)",
      own_or_global("session", "on_detach"));
  row("detached_limit", ::lazaret::config::FormatDuration(session.detached_limit_seconds()),
      own_or_global("session", "detached_limit"));
  row("clipboard_write",
      p.terminal().clipboard_write() ? "true (the sandbox may set your clipboard)"
                                     : "false (OSC 52 clipboard writes removed)",
      own_or_global("terminal", "clipboard_write"));
}

}  // namespace lazaret::cli::config
