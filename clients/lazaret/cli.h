// The `lazaret` command-line client. Runs as the user in their terminal and
// talks to the services over their sockets in the runtime directory.
#ifndef LAZARET_CLIENTS_LAZARET_CLI_H_
#define LAZARET_CLIENTS_LAZARET_CLI_H_

#include <optional>
#include <string>
#include <vector>

namespace lazaret::cli {

// Process-wide settings every command sees.
struct Context {
  std::string runtime_dir;  // private runtime directory (sockets, lock, log)
  std::string libexec_dir;  // where lazaret-* service binaries live
  bool stdout_is_tty = false;
};

// A subcommand: receives the arguments after its name and returns the exit
// code. Usage errors return 2 after printing what is wrong and the usage.
using Command = int (*)(const Context&, const std::vector<std::string>&);

int Main(int argc, char** argv);

// The arguments of a command whose only option is --json (and --help, -h):
// sets *json and returns nullopt to go on, or the exit code to end with: 0
// after printing `help`, 2 after saying which argument is wrong (escaped)
// and `usage`.
std::optional<int> ParseJsonFlag(const char* command, const std::vector<std::string>& args,
                                 const char* help, const char* usage, bool* json);

// Directory of the running executable, for finding sibling binaries.
std::string SelfDir();

// Where the service binaries are: $LAZARET_LIBEXEC_DIR, the executable's own
// directory (build tree), or ../libexec/lazaret relative to it (installed).
std::string FindLibexecDir();

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_CLI_H_
