// A host command that passed every check and may be run. Runs in
// lazaret-brokerd (no capabilities). The argv and the working directory
// come from the agent (or from a human's edit of them) and are trusted for
// nothing; the host workspace path comes from the resolved configuration.
//
// Check, then act: RunningCommand::Start (executor.h) takes only a
// CheckedCommand, and the only way to get one is Check(), so an argv that
// names a path, or a cwd outside the workspace, cannot reach execve().
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_CHECKED_COMMAND_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_CHECKED_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/brokerd/command/resolve.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::command {

// The most argv bytes a command may have (each element plus its NUL).
inline constexpr size_t kMaxArgvBytes = 64 * 1024;

// Where the workspace is mounted in the sandbox.
inline constexpr char kSandboxWorkspace[] = "/workspace";

class CheckedCommand {
 public:
  // argv: not empty, no NUL in any element, at most kMaxArgvBytes, argv[0]
  // a bare command name found on kBrokerPath (ResolveCommandName).
  // sandbox_cwd: "" or "/workspace" runs in `host_workspace`; a clean
  // absolute path below /workspace runs in the matching directory below
  // it, opened one component at a time from the workspace's descriptor
  // without following symlinks (a symlink, "..", or a missing directory is
  // refused); anything else is refused. `host_workspace` is trusted (the
  // resolved configuration's canonical path).
  static absl::StatusOr<CheckedCommand> Check(std::vector<std::string> argv,
                                              absl::string_view host_workspace,
                                              absl::string_view sandbox_cwd);
  // As Check, with `search_path` instead of kBrokerPath (tests).
  static absl::StatusOr<CheckedCommand> CheckWithPath(std::vector<std::string> argv,
                                                      absl::string_view host_workspace,
                                                      absl::string_view sandbox_cwd,
                                                      absl::string_view search_path);

  CheckedCommand(CheckedCommand&&) noexcept = default;
  CheckedCommand& operator=(CheckedCommand&&) noexcept = default;

  const std::vector<std::string>& argv() const { return argv_; }
  // What argv[0] resolved to when checked; execve runs binary().path with
  // argv()[0] unchanged. The PATH directories are the host's (root-owned),
  // out of the sandbox's reach, so the file cannot be swapped by it between
  // the check and the exec; Judge compares binary() with the file an entry
  // named at session start.
  const ResolvedBinary& binary() const { return binary_; }
  // The host path of the working directory, for display and the audit.
  const std::string& host_cwd() const { return host_cwd_; }
  // The working directory as opened when checked; the child fchdir()s to it,
  // so a rename after the check does not move the command elsewhere.
  int cwd_fd() const { return cwd_.get(); }

 private:
  CheckedCommand(std::vector<std::string> argv, ResolvedBinary binary, std::string host_cwd,
                 fs::DirFd cwd)
      : argv_(std::move(argv)),
        binary_(std::move(binary)),
        host_cwd_(std::move(host_cwd)),
        cwd_(std::move(cwd)) {}

  std::vector<std::string> argv_;
  ResolvedBinary binary_;
  std::string host_cwd_;
  fs::DirFd cwd_;
};

// A request's command text split into argv by POSIX shell words, with no
// expansion of any kind (lazaret::vocab::SplitShellWords): "echo hi; touch
// x" is the five words echo, hi;, touch, x - nothing runs a shell. Refuses
// a NUL, text that does not split (an unterminated quote), and an empty
// result. For requests and for a human's edit of one.
absl::StatusOr<std::vector<std::string>> SplitRequestCommand(absl::string_view command);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_CHECKED_COMMAND_H_
