#include "services/sessiond/gitshadow/git.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/spawn/subprocess.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli::gitshadow {
namespace {

// The caller's environment minus GIT_*, LC_ALL and LANGUAGE, plus the C
// locale and no terminal prompt.
std::vector<std::string> GitEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    if (absl::StartsWith(entry, "GIT_") || absl::StartsWith(entry, "LC_ALL=") ||
        absl::StartsWith(entry, "LANGUAGE=")) {
      continue;
    }
    env.emplace_back(entry);
  }
  env.emplace_back("LC_ALL=C");
  env.emplace_back("GIT_TERMINAL_PROMPT=0");
  return env;
}

}  // namespace

std::vector<std::string> GitSafetyOptions() {
  return {"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"};
}

absl::StatusOr<GitResult> RunGitRaw(const std::string& cwd, const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout,
                                    const std::string* stdin_data) {
  if (timeout.count() <= 0) {
    return absl::InvalidArgumentError("host git must run with a deadline");
  }
  std::vector<std::string> argv = {"git"};
  for (auto& o : GitSafetyOptions()) argv.push_back(o);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::vector<std::string> env = GitEnvironment();
  SpawnOptions options;
  options.cwd = cwd;
  options.env = &env;
  options.timeout = timeout;
  options.stdin_data = stdin_data;
  absl::StatusOr<Captured> run = RunCaptured(argv, options);
  if (absl::IsDeadlineExceeded(run.status())) {
    return absl::DeadlineExceededError(absl::StrCat("git ", args.empty() ? "" : args.back(),
                                                    " (in ", cwd, ") ", run.status().message(),
                                                    " and was killed"));
  }
  LAZ_ASSIGN_OR_RETURN(Captured c, std::move(run));
  GitResult result;
  result.exit_code = c.exit_code;
  result.out = std::move(c.out);
  result.err = std::move(c.err);
  return result;
}

absl::StatusOr<std::string> RunGit(const std::string& cwd, const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout) {
  LAZ_ASSIGN_OR_RETURN(GitResult r, RunGitRaw(cwd, args, timeout));
  if (r.exit_code != 0) {
    std::string err(absl::StripTrailingAsciiWhitespace(r.err));
    return absl::FailedPreconditionError(absl::StrCat("git ", absl::StrJoin(args, " "), " (in ",
                                                      cwd, ") failed with exit code ", r.exit_code,
                                                      ": ", err));
  }
  return std::move(r.out);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out = absl::StrSplit(text, '\n');
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

}  // namespace lazaret::cli::gitshadow
