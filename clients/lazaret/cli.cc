#include "clients/lazaret/cli.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/commands.h"
#include "services/common/runtime_dir.h"
#include "services/vocab/escape.h"

namespace lazaret::cli {
namespace {

constexpr CommandInfo kCommands[] = {
    {"up", "up [--foreground]", "start the Lazaret service set (once per user)", CmdUp},
    {"down", "down", "stop the service set; nothing is left running", CmdDown},
    {"status", "status [--json]", "show each service's health, pid and capabilities", CmdStatus},
    {"config", "config check|show [options]",
     "validate the configuration, or show a resolved profile", CmdConfig},
    {"trust", "trust [--sha256 HASH | --revoke] [FILE]",
     "let this exact workspace lazaret.toml widen your configuration", CmdTrust},
    {"run", "run [OPTIONS] [PROFILE] [--] [CMD...]",
     "run CMD (default: a shell) in a gVisor sandbox on this directory", CmdRun},
    {"attach", "attach [--watch] [SESSION]",
     "attach this terminal to a running session (Ctrl-\\ d detaches)", CmdAttach},
    {"ps", "ps [--json]", "list this user's sessions, attached or detached", CmdPs},
    {"stop", "stop SESSION", "end a session cleanly (write-back, scan, teardown)", CmdStop},
    {"clean", "clean [--session ID]",
     "reap what killed sessions left (containers, session dirs, overlays; commits written back)",
     CmdClean},
    {"state", "state show [PROFILE] [--json] [--config FILE]",
     "show a profile's persistent directories: size, what changed, who mounts them", CmdState},
    {"state", "state reset PROFILE [DIR] [--yes] [--config FILE]",
     "drop what sessions changed in a profile's persistent directories (all, or DIR)", CmdState},
    {"held", "held [list|diff] [PATH...]",
     "show what sessions changed in files host programs act on, held out of the folder", CmdHeld},
    {"held", "held apply|drop PATH...|--all",
     "write a held change into the folder, or forget it, per file", CmdHeld},
    {"net", "net show|test|log|reload|allow|deny",
     "see, test and change a live session's egress policy (lazaret net --help)", CmdNet},
    {"port", "port SESSION add [ADDR:]HOSTPORT[:SANDBOXPORT] | rm HOSTPORT | ls",
     "forward a host loopback port into a live session's sandbox (lazaret port --help)", CmdPort},
    {"audit", "audit [--session ID] [--json]",
     "show every host command a sandbox asked for and how it was decided", CmdAudit},
    {"approve", "approve [--session ID]",
     "decide the host commands sandboxes ask for, in this terminal", CmdApprove},
    {"image", "image build [sandbox|sidecar|all] [--force]",
     "build Lazaret's local images (no registry needed)", CmdImage},
    {"doctor", "doctor [--json]", "check this host and say how to fix each problem", CmdDoctor},
};

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: lazaret <command> [args]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-34s %s\n", c.synopsis, c.summary);
  std::fprintf(out,
               "\nenvironment:\n"
               "  LAZARET_RUNTIME_DIR  runtime directory (default $XDG_RUNTIME_DIR/lazaret)\n");
}

}  // namespace

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string exe(buf, n);
  return exe.substr(0, exe.rfind('/'));
}

std::string FindLibexecDir() {
  if (const char* v = std::getenv("LAZARET_LIBEXEC_DIR"); v != nullptr && *v == '/') return v;
  const std::string self = SelfDir();
  if (access(absl::StrCat(self, "/lazaret-supervisord").c_str(), X_OK) == 0) return self;
  return absl::StrCat(self, "/../libexec/lazaret");
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    PrintUsage(stdout);
    return 0;
  }
  Context ctx;
  ctx.runtime_dir = DefaultRuntimeDir();
  ctx.libexec_dir = FindLibexecDir();
  ctx.stdout_is_tty = isatty(STDOUT_FILENO) == 1;
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (name == c.name) return c.run(ctx, args);
  }
  std::fprintf(stderr, "lazaret: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return 2;
}

std::optional<int> ParseJsonFlag(const char* command, const std::vector<std::string>& args,
                                 const char* help, const char* usage, bool* json) {
  *json = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(help, stdout);
      return 0;
    }
    if (a != "--json") {
      std::fprintf(stderr, "lazaret %s: unexpected argument '%s'\n%s", command,
                   vocab::EscapeForTerminal(a).c_str(), usage);
      return 2;
    }
    *json = true;
  }
  return std::nullopt;
}

}  // namespace lazaret::cli
