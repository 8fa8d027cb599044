// `lazaret config check`, `lazaret config show` and `lazaret trust`. Runs in
// the user's terminal. The configuration is parsed only by lazaret-configd;
// this file asks it over configd.sock. `trust` writes the user's trust store
// itself, through the same lazaret_config code the service reads it with.
// A workspace file is agent-written: `trust` reads it once, has configd
// check exactly those bytes, prints them escaped, and records the digest of
// those bytes only after a confirmation on /dev/tty or a matching --sha256.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/commands.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "services/configd/diagnostics.h"
#include "services/configd/host_paths.h"
#include "services/configd/layer_files.h"
#include "services/configd/trust_store.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::config::v1;
namespace cpb = ::lazaret::common::v1;

constexpr int kExitNotRunning = 3;
constexpr char kConfigUsage[] =
    "usage: lazaret config check [--config FILE]\n"
    "       lazaret config show [--profile P] [--json] [--config FILE]\n";
constexpr char kTrustUsage[] =
    "usage: lazaret trust [--sha256 HASH] [FILE]   (default ./lazaret.toml)\n"
    "       lazaret trust --revoke [FILE]\n"
    "  Shows what FILE widens and its sha256, then asks on the terminal. Without a\n"
    "  terminal, pass the sha256 it showed: the content must still have it.\n";

std::string Cwd() {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return "";
  return buf;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return absl::StrCat(Cwd(), "/", path);
}

std::string ConfigSocket(const Context& ctx) { return SocketPath(ctx.runtime_dir, "configd"); }

std::unique_ptr<pb::ConfigService::Stub> Stub(const Context& ctx) {
  return pb::ConfigService::NewStub(DialUnix(ConfigSocket(ctx)));
}

void Deadline(grpc::ClientContext* cc) {
  cc->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

// True when the call failed because the service is not there.
bool NotRunning(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// NotRunning, after printing how to fix it.
bool ReportNotRunning(const Context& ctx, const grpc::Status& s) {
  if (!NotRunning(s)) return false;
  std::fprintf(stderr,
               "lazaret: the config service is not running (no answer on %s).\n"
               "Start Lazaret first; run: lazaret up\n",
               ConfigSocket(ctx).c_str());
  return true;
}

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

std::string Format(const pb::Diagnostic& d) {
  return config::FormatDiagnostic(config::Diagnostic{d.file(), d.key_path(), d.line(), d.column(),
                                                     d.message(), d.hint(), d.widening()});
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
  for (const pb::Diagnostic& d : ds) std::fprintf(out, "%s: %s\n", kind, Format(d).c_str());
}

struct ConfigArgs {
  std::string explicit_config;
  std::string profile;
  bool json = false;
};

// Parses the options of `config check|show`; `show` allows --profile and --json.
absl::StatusOr<ConfigArgs> ParseConfigArgs(const std::vector<std::string>& args, size_t from,
                                           bool show) {
  ConfigArgs out;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag, std::string* into) -> bool {
      const std::string eq = absl::StrCat(flag, "=");
      if (a == flag && i + 1 < args.size()) {
        *into = args[++i];
        return true;
      }
      if (absl::StartsWith(a, eq)) {
        *into = a.substr(eq.size());
        return true;
      }
      return false;
    };
    if (value("--config", &out.explicit_config)) continue;
    if (show && value("--profile", &out.profile)) continue;
    if (show && a == "--json") {
      out.json = true;
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown or incomplete argument '", a, "'"));
  }
  if (!out.explicit_config.empty()) out.explicit_config = Absolute(out.explicit_config);
  return out;
}

pb::ConfigSelector Selector(const ConfigArgs& a) {
  pb::ConfigSelector s;
  s.set_workspace_dir(Cwd());
  s.set_explicit_config(a.explicit_config);
  return s;
}

int ConfigCheck(const Context& ctx, const ConfigArgs& a) {
  auto stub = Stub(ctx);
  pb::ValidateRequest req;
  *req.mutable_selector() = Selector(a);
  pb::ValidateResponse resp;
  grpc::ClientContext cc;
  Deadline(&cc);
  grpc::Status s = stub->Validate(&cc, req, &resp);
  if (!s.ok()) {
    if (ReportNotRunning(ctx, s)) return kExitNotRunning;
    std::fprintf(stderr, "lazaret config check: %s\n", s.error_message().c_str());
    return 1;
  }
  PrintLayers(resp.layers());
  PrintDiagnostics("warning", resp.warnings(), stdout);
  if (!resp.ok()) {
    PrintDiagnostics("error", resp.errors(), stderr);
    std::fprintf(stderr, "The configuration is invalid (%d error%s).\n", resp.errors_size(),
                 resp.errors_size() == 1 ? "" : "s");
    return 1;
  }
  pb::ListProfilesRequest lreq;
  *lreq.mutable_selector() = Selector(a);
  pb::ListProfilesResponse lresp;
  grpc::ClientContext lcc;
  Deadline(&lcc);
  if (stub->ListProfiles(&lcc, lreq, &lresp).ok()) {
    std::printf("Profiles: %s (default: %s)\n", absl::StrJoin(lresp.profiles(), ", ").c_str(),
                lresp.default_profile().c_str());
  }
  std::printf("The configuration is valid.\n");
  return 0;
}

std::string AccessText(const pb::Volume& v) {
  std::string m = v.access() == pb::MOUNT_ACCESS_READ_WRITE ? "rw" : "ro";
  if (v.selinux() == pb::SELINUX_LABEL_SHARED) m += ",z";
  if (v.selinux() == pb::SELINUX_LABEL_PRIVATE) m += ",Z";
  return m;
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
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  for (const auto& c : p.network().allow()) allow.push_back(c.prefix());
  for (const auto& c : p.network().deny()) deny.push_back(c.prefix());
  row("network allow", absl::StrJoin(allow, " "), "");
  row("network deny", absl::StrJoin(deny, " "), "network.default_deny");
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
  row("escalation", p.escalation().enabled() ? "enabled" : "disabled", "escalation.enabled");
  row("socket_dir", p.escalation().socket_dir(), "escalation.socket_dir");
  if (p.escalation().auto_approve().empty()) row("auto_approve", "(none)", "");
  for (int i = 0; i < p.escalation().auto_approve_size(); ++i) {
    std::printf("  %-16s %s\n", i == 0 ? "auto_approve" : "",
                absl::StrJoin(p.escalation().auto_approve(i).argv(), " ").c_str());
  }
}

int ConfigShow(const Context& ctx, const ConfigArgs& a) {
  auto stub = Stub(ctx);
  pb::ResolveProfileRequest req;
  *req.mutable_selector() = Selector(a);
  req.set_profile(a.profile);
  pb::ResolveProfileResponse resp;
  grpc::ClientContext cc;
  Deadline(&cc);
  grpc::Status s = stub->ResolveProfile(&cc, req, &resp);
  if (!s.ok()) {
    if (ReportNotRunning(ctx, s)) return kExitNotRunning;
    std::fprintf(stderr, "lazaret config show: %s\n", s.error_message().c_str());
    return 1;
  }
  for (pb::EnvVar& e : *resp.mutable_profile()->mutable_env()) {
    if (e.has_literal()) e.clear_value();  // names and sources only
  }
  if (a.json) {
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    std::string out;
    if (!google::protobuf::util::MessageToJsonString(resp, &out, o).ok()) return 1;
    std::printf("%s\n", out.c_str());
    return 0;
  }
  PrintProfile(resp);
  PrintLayers(resp.layers());
  PrintDiagnostics("warning", resp.warnings(), stdout);
  return 0;
}

// Text from a file an agent can write, made safe to print on a terminal:
// control characters, DEL, backslash and every non-ASCII byte (bidi
// overrides, zero-width characters, C1 controls) are shown as \xNN, so
// nothing in it can move the cursor, recolour or hide part of a line.
std::string EscapeForTerminal(absl::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out.push_back(c);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    }
  }
  return out;
}

bool IsSha256Hex(absl::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Line `line` (1-based) of `text`, at most 200 bytes of it.
std::string SourceLine(absl::string_view text, uint32_t line) {
  if (line == 0) return "";
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (line > lines.size()) return "";
  absl::string_view l = lines[line - 1];
  if (l.size() > 200) return absl::StrCat(l.substr(0, 200), "...");
  return std::string(l);
}

// Asks on the controlling terminal (not stdin/stdout, which a script may
// have redirected) whether to trust the content with `digest`. Only "y" or
// "yes" is a yes.
absl::StatusOr<bool> ConfirmOnTerminal(const std::string& digest) {
  const int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return absl::FailedPreconditionError("cannot open /dev/tty to ask");
  const std::string prompt =
      absl::StrCat("Trust exactly this content (sha256 ", digest.substr(0, 16), "...)? [y/N] ");
  (void)!write(fd, prompt.data(), prompt.size());
  std::string answer;
  char c = 0;
  while (answer.size() < 16) {
    const ssize_t r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || c == '\n' || c == '\r') break;
    answer.push_back(c);
  }
  close(fd);
  answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(answer));
  return answer == "y" || answer == "yes";
}

}  // namespace

int CmdConfig(const Context& ctx, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "check" && args[0] != "show")) {
    std::fprintf(stderr, "%s", kConfigUsage);
    return 2;
  }
  const bool show = args[0] == "show";
  absl::StatusOr<ConfigArgs> a = ParseConfigArgs(args, 1, show);
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret config %s: %s\n%s", args[0].c_str(),
                 std::string(a.status().message()).c_str(), kConfigUsage);
    return 2;
  }
  return show ? ConfigShow(ctx, *a) : ConfigCheck(ctx, *a);
}

int CmdTrust(const Context& ctx, const std::vector<std::string>& args) {
  bool revoke = false;
  std::string expected_sha256;
  std::string file = config::kWorkspaceFileName;
  int files = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--revoke") {
      revoke = true;
    } else if (a == "--sha256" && i + 1 < args.size()) {
      expected_sha256 = absl::AsciiStrToLower(args[++i]);
    } else if (absl::StartsWith(a, "--sha256=")) {
      expected_sha256 = absl::AsciiStrToLower(a.substr(9));
    } else if (!a.empty() && a[0] != '-' && files++ == 0) {
      file = a;
    } else {
      std::fprintf(stderr, "lazaret trust: unexpected argument '%s'\n%s",
                   EscapeForTerminal(a).c_str(), kTrustUsage);
      return 2;
    }
  }
  if (!expected_sha256.empty() && !IsSha256Hex(expected_sha256)) {
    std::fprintf(stderr, "lazaret trust: --sha256 takes the 64 hex digits `lazaret trust` shows\n");
    return 2;
  }
  const std::string abs = Absolute(file);
  if (abs.substr(abs.rfind('/') + 1) != config::kWorkspaceFileName) {
    std::fprintf(stderr,
                 "lazaret trust: %s is not a workspace lazaret.toml. Only a workspace's "
                 "lazaret.toml needs trust; your own config.toml and --config files are always "
                 "yours.\n",
                 EscapeForTerminal(abs).c_str());
    return 2;
  }
  absl::StatusOr<config::HostContext> host = config::HostContextFromEnvironment(ctx.runtime_dir);
  absl::StatusOr<std::string> canon = config::CanonicalWorkspaceFile(abs);
  if (!host.ok() || !canon.ok()) {
    std::fprintf(
        stderr, "lazaret trust: %s\n",
        EscapeForTerminal((!host.ok() ? host.status() : canon.status()).message()).c_str());
    return 1;
  }
  const std::string shown_path = EscapeForTerminal(*canon);
  config::TrustStore store(host->TrustStoreFile());

  if (revoke) {
    absl::Status st = store.Revoke(*canon);
    if (absl::IsNotFound(st)) {
      std::printf("%s was not trusted; nothing to revoke.\n", shown_path.c_str());
      return 0;
    }
    if (!st.ok()) {
      std::fprintf(stderr, "lazaret trust --revoke: %s\n", EscapeForTerminal(st.message()).c_str());
      return 1;
    }
    std::printf("Revoked trust in %s: it may again only narrow your configuration.\n",
                shown_path.c_str());
    return 0;
  }

  // The file is read once (one fd, fstat, bounded read). These bytes are
  // what is checked, shown and - only they - recorded.
  absl::StatusOr<std::string> text = config::ReadConfigFile(*canon, /*follow_symlinks=*/false);
  if (!text.ok()) {
    std::fprintf(stderr, "lazaret trust: %s %s\n", shown_path.c_str(),
                 EscapeForTerminal(text.status().message()).c_str());
    return 1;
  }
  const std::string digest = config::Sha256Hex(*text);

  // What these bytes widen, as lazaret-configd sees them (it parses; this
  // process does not), against the user's own layers.
  auto stub = Stub(ctx);
  pb::ValidateRequest req;
  req.mutable_selector()->set_workspace_dir(canon->substr(0, canon->rfind('/')));
  req.set_workspace_file_content(*text);
  pb::ValidateResponse resp;
  grpc::ClientContext cc;
  Deadline(&cc);
  grpc::Status s = stub->Validate(&cc, req, &resp);
  if (!s.ok()) {
    if (ReportNotRunning(ctx, s)) {
      std::fprintf(stderr,
                   "lazaret trust needs it to show what the file widens; nothing was trusted.\n");
      return kExitNotRunning;
    }
    std::fprintf(stderr, "lazaret trust: could not check the file: %s\n",
                 EscapeForTerminal(s.error_message()).c_str());
    return 1;
  }
  for (const pb::LayerInfo& l : resp.layers()) {
    if (l.layer() == cpb::CONFIG_LAYER_WORKSPACE && l.sha256() != digest) {
      std::fprintf(stderr,
                   "lazaret trust: the service checked other content than was read; "
                   "nothing was trusted.\n");
      return 1;
    }
  }
  std::vector<const pb::Diagnostic*> grants;
  bool other_errors = false;
  for (const pb::Diagnostic& d : resp.errors()) {
    if (d.widening()) {
      grants.push_back(&d);
    } else {
      other_errors = true;
      std::fprintf(stderr, "error: %s\n", EscapeForTerminal(Format(d)).c_str());
    }
  }
  if (other_errors) {
    std::fprintf(stderr,
                 "lazaret trust: not trusting a configuration with errors; fix them "
                 "first (lazaret config check).\n");
    return 1;
  }
  std::printf("%s\n  sha256 %s\n", shown_path.c_str(), digest.c_str());
  if (grants.empty()) {
    std::printf("This content only narrows your configuration; it needs no trust.\n");
    return 0;
  }
  std::printf("Trusting exactly this content lets it widen your configuration:\n");
  for (const pb::Diagnostic* d : grants) {
    std::printf("  line %u: %s\n", d->line(),
                EscapeForTerminal(SourceLine(*text, d->line())).c_str());
    std::printf("      %s: %s\n", EscapeForTerminal(d->key_path()).c_str(),
                EscapeForTerminal(d->message()).c_str());
  }
  std::fflush(stdout);

  if (!expected_sha256.empty()) {
    if (expected_sha256 != digest) {
      std::fprintf(stderr,
                   "lazaret trust: refusing: the file's content has sha256 %s, not the %s you "
                   "passed. It is not what you reviewed; review it again. Nothing was trusted.\n",
                   digest.c_str(), expected_sha256.c_str());
      return 1;
    }
  } else if (isatty(STDIN_FILENO) == 1) {
    absl::StatusOr<bool> yes = ConfirmOnTerminal(digest);
    if (!yes.ok()) {
      std::fprintf(stderr, "lazaret trust: %s; nothing was trusted.\n",
                   std::string(yes.status().message()).c_str());
      return 1;
    }
    if (!*yes) {
      std::printf("Not trusted.\n");
      return 1;
    }
  } else {
    std::fprintf(stderr,
                 "lazaret trust: standard input is not a terminal, so nobody can confirm; "
                 "nothing was trusted. After reviewing what the file widens, run:\n"
                 "  lazaret trust --sha256 %s %s\n",
                 digest.c_str(), shown_path.c_str());
    return 1;
  }

  // The digest recorded is that of the bytes shown. If the file no longer
  // holds them, it was changed after it was shown: say so, record nothing.
  absl::StatusOr<std::string> now = config::ReadConfigFile(*canon, /*follow_symlinks=*/false);
  if (!now.ok() || config::Sha256Hex(*now) != digest) {
    std::fprintf(stderr,
                 "lazaret trust: %s changed after it was shown; nothing was trusted. Review it "
                 "again and rerun lazaret trust.\n",
                 shown_path.c_str());
    return 1;
  }
  if (absl::Status st = store.Trust(*canon, digest); !st.ok()) {
    std::fprintf(stderr, "lazaret trust: %s\n", EscapeForTerminal(st.message()).c_str());
    return 1;
  }
  std::printf(
      "Trusted %s\n  sha256 %s\nAny change to the file, even one byte, withdraws this "
      "trust. Undo with: lazaret trust --revoke %s\n",
      shown_path.c_str(), digest.c_str(), shown_path.c_str());
  return 0;
}

}  // namespace lazaret::cli
