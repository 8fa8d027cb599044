// Shell-quoting for messages: a command Lazaret runs, shown so that the
// user can copy and paste it. Runs in the `lazaret` CLI; nothing quoted
// here is ever run through a shell by Lazaret.
#ifndef LAZARET_SERVICES_SPAWN_COMMAND_LINE_H_
#define LAZARET_SERVICES_SPAWN_COMMAND_LINE_H_

#include <string>
#include <vector>

namespace lazaret::cli {

// One argument quoted for a POSIX shell, only when it needs quoting.
std::string ShellQuote(const std::string& arg);
// argv as one copy-pasteable shell line.
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_SPAWN_COMMAND_LINE_H_
