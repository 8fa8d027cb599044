// The one source of the `lazaret` CLI's help: the top-level usage, every
// subcommand's `--help` and usage text, and what completion offers after
// each command. The CLI prints from here; lazaret-help-gen renders the man
// pages and the bash, zsh and fish completions from the same table at build
// time, so none of them can drift from `--help`. Runs in the CLI (and in the
// build); pure data and formatting, no input.
//
// Texts a command's own library owns because its parser uses them (run,
// net, port, held, state, audit) are referenced here, not copied.
#ifndef LAZARET_CLIENTS_LAZARET_HELP_HELP_H_
#define LAZARET_CLIENTS_LAZARET_HELP_HELP_H_

#include <cstdio>
#include <string>
#include <vector>

namespace lazaret::cli::help {

// One line of the top-level usage: "  <synopsis>   <summary>".
struct UsageLine {
  const char* synopsis;  // "up [--foreground]"
  const char* summary;   // one line
};

// A subcommand as help, man page and completion know it.
struct CommandHelp {
  const char* name;                // "run"
  std::vector<UsageLine> lines;    // its lines in the top-level usage
  const char* text;                // what `lazaret NAME --help` prints
                                   // (the usage text where there is none)
  std::vector<const char*> verbs;  // words completion offers right after NAME
};

// An environment variable the CLI reads, for the usage and the man page.
struct EnvVar {
  const char* name;
  const char* meaning;
};

// Every subcommand, in the order the top-level usage lists them.
const std::vector<CommandHelp>& Commands();
// nullptr when `name` is no subcommand.
const CommandHelp* Find(const std::string& name);
const std::vector<EnvVar>& Environment();

// The top-level usage (`lazaret --help`).
std::string TopLevelUsage();
void PrintTopLevelUsage(std::FILE* out);

// The long options ("--json") a command's text names, in order of first
// appearance, each once; what completion offers after NAME.
std::vector<std::string> OptionsOf(const CommandHelp& command);

// The usage and help texts of the commands whose front-end is in
// clients/lazaret/*_cmd.cc.
extern const char kUpUsage[];
extern const char kDownUsage[];
extern const char kStatusUsage[];
extern const char kStatusHelp[];
extern const char kConfigUsage[];
extern const char kTrustUsage[];
extern const char kAttachUsage[];
extern const char kPsUsage[];
extern const char kPsHelp[];
extern const char kStopUsage[];
extern const char kCleanUsage[];
extern const char kApproveUsage[];
extern const char kApproveHelp[];
extern const char kImageUsage[];
extern const char kDoctorUsage[];
extern const char kDoctorHelp[];

}  // namespace lazaret::cli::help

#endif  // LAZARET_CLIENTS_LAZARET_HELP_HELP_H_
