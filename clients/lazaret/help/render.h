// Renders the CLI's help table (help.h) as roff man pages and as bash, zsh
// and fish completion scripts. Runs at build time in lazaret-help-gen (and
// in tests); its input is the table compiled into it, yet every text is
// escaped for the language it lands in, so no help text can become a roff
// request or shell code.
#ifndef LAZARET_CLIENTS_LAZARET_HELP_RENDER_H_
#define LAZARET_CLIENTS_LAZARET_HELP_RENDER_H_

#include <string>

#include "absl/status/statusor.h"
#include "clients/lazaret/help/help.h"

namespace lazaret::cli::help {

// One line of text for roff: '\' as \e, '-' as \- (a minus, so options
// can be searched and copied), and a leading '.' or '\'' made literal with
// \& so it is never read as a request.
std::string RoffEscape(const std::string& line);

// lazaret(1): every command with its summary, the environment, and the
// pages of the subcommands.
std::string RenderMainPage(const std::string& version);
// lazaret-NAME(1): the synopsis lines, their summaries, and the command's
// --help text as it prints.
std::string RenderCommandPage(const CommandHelp& command, const std::string& version);
// "lazaret-NAME.1".
std::string PageFileName(const CommandHelp& command);

// The completion scripts. They fail when a command, verb or option is not
// a plain word ([A-Za-z0-9_-]), the only words they may name unquoted.
absl::StatusOr<std::string> RenderBashCompletion();
absl::StatusOr<std::string> RenderZshCompletion();
absl::StatusOr<std::string> RenderFishCompletion();

}  // namespace lazaret::cli::help

#endif  // LAZARET_CLIENTS_LAZARET_HELP_RENDER_H_
