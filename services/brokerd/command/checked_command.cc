#include "services/brokerd/command/checked_command.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"
#include "services/vocab/shell_words.h"

namespace lazaret::brokerd::command {
namespace {

absl::Status CheckArgv(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("the command is empty");
  size_t total = 0;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("argv[", i, "] contains a NUL byte"));
    }
    total += argv[i].size() + 1;
  }
  if (total > kMaxArgvBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the command is ", total, " bytes, more than ", kMaxArgvBytes));
  }
  return absl::OkStatus();
}

// Opens the host directory for `sandbox_cwd` (see Check).
absl::StatusOr<fs::DirFd> OpenCwd(absl::string_view host_workspace, absl::string_view sandbox_cwd,
                                  std::string* host_cwd) {
  if (sandbox_cwd.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("cwd contains a NUL byte");
  }
  for (absl::string_view part : absl::StrSplit(sandbox_cwd, '/')) {
    if (part == "..") return absl::InvalidArgumentError("cwd must not contain '..'");
  }
  std::string cwd(sandbox_cwd.empty() ? kSandboxWorkspace : sandbox_cwd);
  if (!vocab::IsCleanAbsolutePath(cwd) || !vocab::IsAtOrUnder(cwd, kSandboxWorkspace)) {
    return absl::InvalidArgumentError("cwd must be /workspace or below it");
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::DirFd::OpenTrusted(std::string(host_workspace)));
  *host_cwd = std::string(host_workspace);
  const absl::string_view rel = absl::string_view(cwd).substr(sizeof(kSandboxWorkspace) - 1);
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    absl::StatusOr<fs::DirFd> child = dir.OpenChild(std::string(part));
    if (!child.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cwd ", cwd, " is not a directory of the workspace (no symlink may be followed): ",
          child.status().message()));
    }
    dir = std::move(*child);
    absl::StrAppend(host_cwd, "/", part);
  }
  return dir;
}

}  // namespace

absl::StatusOr<CheckedCommand> CheckedCommand::Check(std::vector<std::string> argv,
                                                     absl::string_view host_workspace,
                                                     absl::string_view sandbox_cwd) {
  return CheckWithPath(std::move(argv), host_workspace, sandbox_cwd, kBrokerPath);
}

absl::StatusOr<CheckedCommand> CheckedCommand::CheckWithPath(std::vector<std::string> argv,
                                                             absl::string_view host_workspace,
                                                             absl::string_view sandbox_cwd,
                                                             absl::string_view search_path) {
  LAZ_RETURN_IF_ERROR(CheckArgv(argv));
  LAZ_ASSIGN_OR_RETURN(ResolvedBinary binary, ResolveCommandName(argv[0], search_path));
  std::string host_cwd;
  LAZ_ASSIGN_OR_RETURN(fs::DirFd cwd, OpenCwd(host_workspace, sandbox_cwd, &host_cwd));
  return CheckedCommand(std::move(argv), std::move(binary), std::move(host_cwd), std::move(cwd));
}

absl::StatusOr<std::vector<std::string>> SplitRequestCommand(absl::string_view command) {
  if (command.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("the command contains a NUL byte");
  }
  absl::StatusOr<std::vector<std::string>> words = vocab::SplitShellWords(command);
  if (!words.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the command does not split into words: ", words.status().message()));
  }
  if (words->empty()) return absl::InvalidArgumentError("the command is empty");
  return words;
}

}  // namespace lazaret::brokerd::command
