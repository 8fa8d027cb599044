// Fixed paths inside the sandbox, shared by the Git Shadow's plan, the
// runner (the session's plan, with the host escalation mounts) and
// lazaret-sandbox-init's command line. Constants only, used by
// the `lazaret` CLI on the host.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_SANDBOX_PATHS_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_SANDBOX_PATHS_H_

namespace lazaret::cli::gitshadow {

// The workspace (read-write): the developer's working tree, or the agent
// worktree in worktree mode.
inline constexpr char kSandboxWorkspace[] = "/workspace";
// The host's git common directory, read-only.
inline constexpr char kSandboxGitShadow[] = "/run/lazaret/git";
// A read-write directory of Lazaret's state for this repository, holding
// the copy of the host index the init program copies into the git directory,
// and the packed-refs file the git directory's packed-refs links to.
inline constexpr char kSandboxGitSession[] = "/run/lazaret/git-session";
inline constexpr char kSandboxGitIndex[] = "/run/lazaret/git-session/index";
inline constexpr char kSandboxGitPackedRefs[] = "/run/lazaret/git-session/packed-refs";
// Where the git directory is built when the host workspace is a linked
// worktree (its .git is a file, so no tmpfs can be mounted on it): a
// read-only file "gitdir: /run/lazaret/git-dir" is bound over /workspace/.git.
inline constexpr char kSandboxLinkedGitDir[] = "/run/lazaret/git-dir";
// Where the runner binds lazaret-sandbox-init (read-only) and runs it as the
// container's entrypoint: `<kSandboxInitPath> <plan.init_args> -- CMD...`.
inline constexpr char kSandboxInitPath[] = "/run/lazaret/bin/lazaret-sandbox-init";

// Host escalation (docs/escalation.md), only when the profile enables it,
// both read-only: the session's certificate directory (ca.pem, client.pem,
// client.key, on a host memory filesystem) and the lazaret-escalate client.
// No socket of the host's: the client reaches the broker through the relay
// in the network sidecar, on the loopback they share
// (services/wire/relay_endpoint.h).
inline constexpr char kSandboxCertsDir[] = "/run/lazaret/certs";
inline constexpr char kSandboxEscalateClient[] = "/run/lazaret/escalate";
// The environment variable naming the client, so that agents can find it.
inline constexpr char kEscalateEnvName[] = "LAZARET_ESCALATE";

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_SANDBOX_PATHS_H_
