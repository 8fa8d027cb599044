#include "clients/lazaret/help/help.h"

#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/lazaret/escalation/audit_command.h"
#include "clients/lazaret/held/command.h"
#include "clients/lazaret/net/args.h"
#include "clients/lazaret/net/port_args.h"
#include "clients/lazaret/persist/state_args.h"
#include "services/sessiond/session/run_args.h"

namespace lazaret::cli::help {

const char kUpUsage[] = "usage: lazaret up [--foreground]\n";
const char kDownUsage[] = "usage: lazaret down\n";
const char kStatusUsage[] = "usage: lazaret status [--json]\n";
const char kStatusHelp[] =
    "usage: lazaret status [--json]\n\n"
    "The health, pid and capabilities of each service; --json prints\n"
    "lazaret.supervisor.v1.GetStatusResponse with proto field names.\n";

const char kConfigUsage[] =
    "usage: lazaret config check [--config FILE]\n"
    "       lazaret config show [--profile P] [--json] [--config FILE]\n";
const char kTrustUsage[] =
    "usage: lazaret trust [--sha256 HASH] [FILE]   (default ./lazaret.toml)\n"
    "       lazaret trust --revoke [FILE]\n"
    "  Shows what FILE widens and its sha256, then asks on the terminal. Without a\n"
    "  terminal, pass the sha256 it showed: the content must still have it.\n";

const char kAttachUsage[] =
    "usage: lazaret attach [--watch] [SESSION]\n"
    "  SESSION is an id or a unique prefix from lazaret ps; without it, the only session.\n"
    "  --watch attaches without taking the input (Ctrl-\\ i takes it later).\n"
    "  Ctrl-\\ d detaches; the session keeps running.\n";

const char kPsUsage[] = "usage: lazaret ps [--json]\n";
const char kPsHelp[] =
    "usage: lazaret ps [--json]\n"
    "\n"
    "The sessions of this runtime directory: those lazaret-sessiond runs, and the\n"
    "orphaned ones a killed worker left (lazaret clean reaps them).\n"
    "\n"
    "  --json  one JSON object {\"sessions\": [...], \"spares\": [...]} on stdout,\n"
    "          each session with id, state, profile, workspace, started,\n"
    "          started_unix, attached, detached_since, detached_since_unix,\n"
    "          stop_at, stop_at_unix, tty, worker_pid, command and attach_socket\n"
    "          (docs/operations.md); each spare sidecar kept for the next\n"
    "          lazaret run with id, workspace and ready (docs/architecture.md)\n";
const char kStopUsage[] =
    "usage: lazaret stop SESSION   (the id, or a unique prefix, from lazaret ps)\n";
const char kCleanUsage[] = "usage: lazaret clean [--session ID]\n";

const char kApproveUsage[] = "usage: lazaret approve [--session ID]\n";
const char kApproveHelp[] =
    "usage: lazaret approve [--session ID]\n"
    "\n"
    "Shows the host commands sandboxes ask for and decides them: a approve\n"
    "(type the code it shows, then Enter), d deny (with a reason), e edit the\n"
    "command, Q abort the session, o the output of the last approved one,\n"
    "? every key, q quit. Names a sandbox asks for (egress = \"ask\") are\n"
    "network requests: o allow once, s for the session, p for the profile\n"
    "(shows the change to your configuration file first), each with the\n"
    "code; d deny. Requests are named by the broker's id (q12). Text\n"
    "from the sandbox is shown with its hidden characters escaped and marked;\n"
    "keys are ignored for a moment when a request comes under the cursor.\n"
    "\n"
    "  --session ID   only this session's requests (default: every session)\n"
    "\n"
    "environment: NO_COLOR (set: marks in reverse video only)\n";

const char kImageUsage[] =
    "usage: lazaret image build [sandbox|sidecar|all] [--mirror URL] [--force]\n"
    "       lazaret image tag sandbox|sidecar [--mirror URL]\n";

const char kDoctorUsage[] = "usage: lazaret doctor [--json]\n";
const char kDoctorHelp[] =
    "usage: lazaret doctor [--json]\n"
    "\n"
    "Checks this host for Lazaret and says how to fix each problem; changes\n"
    "nothing. Exit 1 when a check fails (warnings do not fail).\n"
    "\n"
    "  --json  one JSON object on stdout once every check has run: ok, user,\n"
    "          rootless, failures, warnings and checks, each check with name,\n"
    "          status (ok, warn, fail), detail and fix (docs/operations.md)\n";

const std::vector<CommandHelp>& Commands() {
  static const std::vector<CommandHelp>* const commands = new std::vector<CommandHelp>{
      {"up",
       {{"up [--foreground]", "start the Lazaret service set (once per user)"}},
       kUpUsage,
       {}},
      {"down", {{"down", "stop the service set; nothing is left running"}}, kDownUsage, {}},
      {"status",
       {{"status [--json]", "show each service's health, pid and capabilities"}},
       kStatusHelp,
       {}},
      {"config",
       {{"config check|show [options]", "validate the configuration, or show a resolved profile"}},
       kConfigUsage,
       {"check", "show"}},
      {"trust",
       {{"trust [--sha256 HASH | --revoke] [FILE]",
         "let this exact workspace lazaret.toml widen your configuration"}},
       kTrustUsage,
       {}},
      {"run",
       {{"run [OPTIONS] [PROFILE] [--] [CMD...]",
         "run CMD (default: a shell) in a gVisor sandbox on this directory"}},
       session::kRunUsage,
       {}},
      {"attach",
       {{"attach [--watch] [SESSION]",
         "attach this terminal to a running session (Ctrl-\\ d detaches)"}},
       kAttachUsage,
       {}},
      {"ps", {{"ps [--json]", "list this user's sessions, attached or detached"}}, kPsHelp, {}},
      {"stop",
       {{"stop SESSION", "end a session cleanly (write-back, scan, teardown)"}},
       kStopUsage,
       {}},
      {"clean",
       {{"clean [--session ID]",
         "reap what killed sessions left (containers, session dirs, overlays; commits written "
         "back)"}},
       kCleanUsage,
       {}},
      {"state",
       {{"state show [PROFILE] [--json] [--config FILE]",
         "show a profile's persistent directories: size, what changed, who mounts them"},
        {"state reset PROFILE [DIR] [--yes] [--config FILE]",
         "drop what sessions changed in a profile's persistent directories (all, or DIR)"}},
       persist::kStateUsage,
       {"show", "reset"}},
      {"held",
       {{"held [list|diff] [PATH...]",
         "show what sessions changed in files host programs act on, held out of the folder"},
        {"held apply|drop PATH...|--all",
         "write a held change into the folder, or forget it, per file"}},
       held::kHeldUsage,
       {"list", "diff", "apply", "drop"}},
      {"net",
       {{"net show|test|log|reload|allow|deny",
         "see, test and change a live session's egress policy (lazaret net --help)"}},
       net::kNetHelp,
       {"show", "test", "log", "reload", "allow", "deny"}},
      {"port",
       {{"port SESSION add [ADDR:]HOSTPORT[:SANDBOXPORT] | rm HOSTPORT | ls",
         "forward a host loopback port into a live session's sandbox (lazaret port --help)"}},
       net::kPortHelp,
       {}},
      {"audit",
       {{"audit [--session ID] [--json]",
         "show every host command a sandbox asked for and how it was decided"}},
       escalation::kAuditHelp,
       {}},
      {"approve",
       {{"approve [--session ID]", "decide the host commands sandboxes ask for, in this terminal"}},
       kApproveHelp,
       {}},
      {"image",
       {{"image build [sandbox|sidecar|all] [--force]",
         "build Lazaret's local images (no registry needed)"}},
       kImageUsage,
       {"build", "tag"}},
      {"doctor",
       {{"doctor [--json]", "check this host and say how to fix each problem"}},
       kDoctorHelp,
       {}},
  };
  return *commands;
}

const CommandHelp* Find(const std::string& name) {
  for (const CommandHelp& c : Commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const std::vector<EnvVar>& Environment() {
  static const std::vector<EnvVar>* const vars = new std::vector<EnvVar>{
      {"LAZARET_RUNTIME_DIR", "runtime directory (default $XDG_RUNTIME_DIR/lazaret)"},
  };
  return *vars;
}

std::string TopLevelUsage() {
  std::string out = "usage: lazaret <command> [args]\n\ncommands:\n";
  for (const CommandHelp& c : Commands()) {
    for (const UsageLine& l : c.lines)
      absl::StrAppendFormat(&out, "  %-34s %s\n", l.synopsis, l.summary);
  }
  out += "\nenvironment:\n";
  for (const EnvVar& v : Environment())
    absl::StrAppendFormat(&out, "  %-20s %s\n", v.name, v.meaning);
  return out;
}

void PrintTopLevelUsage(std::FILE* out) { std::fputs(TopLevelUsage().c_str(), out); }

std::vector<std::string> OptionsOf(const CommandHelp& command) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string text = command.text;
  for (const UsageLine& l : command.lines) absl::StrAppend(&text, "\n", l.synopsis);
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    // "--word" at the start of a word; "--" alone (the end of options) is
    // not an option.
    if (text.compare(i, 2, "--") != 0 ||
        (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '-'))) {
      continue;
    }
    size_t end = i + 2;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                 (text[end] == '-' && end > i + 2))) {
      ++end;
    }
    while (end > i + 2 && text[end - 1] == '-') --end;
    if (end == i + 2) continue;
    std::string option = text.substr(i, end - i);
    if (seen.insert(option).second) out.push_back(option);
    i = end - 1;
  }
  return out;
}

}  // namespace lazaret::cli::help
