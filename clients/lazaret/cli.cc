#include "clients/lazaret/cli.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/help/help.h"
#include "services/common/runtime_dir.h"
#include "services/vocab/escape.h"

namespace lazaret::cli {
namespace {

// The command each name runs; what it prints as help is help::Commands().
constexpr std::pair<const char*, Command> kCommands[] = {
    {"up", CmdUp},       {"down", CmdDown},     {"status", CmdStatus}, {"config", CmdConfig},
    {"trust", CmdTrust}, {"run", CmdRun},       {"attach", CmdAttach}, {"ps", CmdPs},
    {"stop", CmdStop},   {"clean", CmdClean},   {"state", CmdState},   {"held", CmdHeld},
    {"net", CmdNet},     {"port", CmdPort},     {"audit", CmdAudit},   {"approve", CmdApprove},
    {"image", CmdImage}, {"doctor", CmdDoctor},
};

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
    help::PrintTopLevelUsage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    help::PrintTopLevelUsage(stdout);
    return 0;
  }
  Context ctx;
  ctx.runtime_dir = DefaultRuntimeDir();
  ctx.libexec_dir = FindLibexecDir();
  ctx.stdout_is_tty = isatty(STDOUT_FILENO) == 1;
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (name == c.first) return c.second(ctx, args);
  }
  std::fprintf(stderr, "lazaret: unknown command '%s'\n\n", argv[1]);
  help::PrintTopLevelUsage(stderr);
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
