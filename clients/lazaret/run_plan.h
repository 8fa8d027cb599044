// Planning a `lazaret run` session: the parse rule of its arguments, the
// sandbox environment, the mounts and the exact podman command lines of the
// network sidecar and the agent sandbox. Runs in the `lazaret` CLI on the
// host. Pure functions over already-resolved inputs (the profile from
// lazaret-configd, the Git Shadow plan, the terminfo entry), so every flag
// can be unit-tested; run.cc does the I/O. The argument vectors built here
// are the only place podman flags for a session are written.
#ifndef LAZARET_CLIENTS_LAZARET_RUN_PLAN_H_
#define LAZARET_CLIENTS_LAZARET_RUN_PLAN_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/mount_spec.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli {

// Exit codes of `lazaret run` itself. Everything else is the command's own
// exit code (126/127 come from lazaret-sandbox-init when the command cannot
// be executed or found; 128+N when it died of signal N).
inline constexpr int kRunFailed = 125;  // Lazaret or podman failed; the command did not run
// When `lazaret run` itself is stopped by SIGINT, SIGTERM or SIGHUP it tears
// the session down and exits with 128+signal (130, 143, 129).

// Resource limits of a session. The task limit is RLIMIT_NPROC of the
// sandbox's processes, which gVisor's kernel enforces itself, rootful and
// rootless, and which the agent (no CAP_SYS_RESOURCE or CAP_SYS_ADMIN) can
// lower but never raise. The cgroup limits below apply rootful only (a
// cgroup v1 host delegates no cgroup to a rootless user; docs/operations.md).
inline constexpr int kSandboxTaskLimit = 4096;
inline constexpr int kSandboxPidsLimit = 4096;
inline constexpr char kSandboxMemory[] = "8g";
inline constexpr int kSidecarPidsLimit = 64;
inline constexpr char kSidecarMemory[] = "64m";

// The capabilities of the agent's root inside gVisor, added to an empty set
// (--cap-drop=all): what apt, dpkg and chown need - changing owners (CHOWN),
// reading and writing files it does not own (DAC_OVERRIDE, FOWNER),
// keeping setgid bits on chown (FSETID), apt's switch to _apt and back
// (SETUID, SETGID) and signalling its own processes of another uid (KILL).
// Not: NET_RAW (raw sockets), NET_BIND_SERVICE, SYS_CHROOT, SETPCAP,
// SETFCAP (file capabilities would reach the host workspace), AUDIT_WRITE,
// MKNOD - podman's defaults that an agent does not need.
// docs/operations.md "The sandbox's privileges" restates this list.
inline constexpr const char* kSandboxCapabilities[] = {
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
};
// The sidecar's router changes routes in its own network namespace.
inline constexpr const char* kSidecarCapabilities[] = {"NET_ADMIN"};
// Pinned so no containers.conf changes them (docs/operations.md).
inline constexpr char kSandboxUmask[] = "0022";
inline constexpr char kShmSize[] = "64m";
// Fixed paths inside the sandbox that are not the Git Shadow's.
inline constexpr char kSandboxPersistDirName[] = "persist";  // <profile_dir>/persist/<escaped>

struct RunArgs {
  std::string explicit_config;       // --config FILE, made absolute
  std::string branch;                // --branch NAME
  bool worktree = false;             // --worktree
  bool dry_run = false;              // --dry-run
  bool help = false;                 // -h / --help
  std::string profile;               // empty: the default profile
  std::vector<std::string> command;  // empty: the image's shell
};

inline constexpr char kRunUsage[] =
    "usage: lazaret run [--config FILE] [--branch NAME] [--worktree] [--dry-run] [PROFILE] "
    "[--] [CMD...]\n"
    "  Options come first. The first other argument is the PROFILE (the default profile when\n"
    "  there is none); everything after it is the command. To run a command in the default\n"
    "  profile, put it after --:  lazaret run -- make test\n";

// The parse rule (docs/operations.md): options are recognised only before
// the first non-option argument or `--`. `--` ends the options and keeps the
// default profile: everything after it is the command. Otherwise the first
// non-option argument is the PROFILE, an optional `--` right after it is
// skipped, and the rest is the command. `cwd` makes --config absolute.
absl::StatusOr<RunArgs> ParseRunArgs(const std::vector<std::string>& args, const std::string& cwd);

// Reads a variable of lazaret's own environment; nullopt when unset.
using HostEnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The profile's env, in order: literals as given, `env:VAR` pulls from
// `lookup`. An unset or empty VAR is an error naming the profile key and the
// variable (fail closed: never an empty secret). Every value is marked
// secret (redacted everywhere); names and values are checked to fit an env
// file line.
absl::StatusOr<std::vector<EnvSetting>> ResolveProfileEnv(
    const lazaret::config::v1::ResolvedProfile& profile, const HostEnvLookup& lookup);

// Checks a name/value pair can be written as one `NAME=VALUE` line.
absl::Status CheckEnvSetting(const EnvSetting& e);

// The env file podman reads with --env-file: one NAME=VALUE per line. Later
// lines win, so callers order them: Lazaret's terminal settings, the
// profile's env, then the Git Shadow's (which a profile cannot override).
absl::StatusOr<std::string> EnvFileText(const std::vector<EnvSetting>& env);

// "/root/.cache" -> "root%2F.cache": one directory name per container path,
// injective, never "." or "..".
std::string EscapePersistentPath(const std::string& container_path);

// persistent_dirs, for now: a host directory <profile_dir>/persist/<escaped>
// bound read-write at each path (starts empty; the fuse-overlayfs
// persistence that keeps image content comes later). Paths whose image
// content an empty bind would hide (/, /usr, /etc, /var, /bin, /sbin, /lib*,
// /boot) or that belong to Lazaret or the kernel (/workspace, /run/lazaret,
// /proc, /sys, /dev) are refused with the reason.
absl::StatusOr<std::vector<BindMount>> PlanPersistentDirs(
    const std::string& profile_dir, const google::protobuf::RepeatedPtrField<std::string>& dirs);

// The profile's volumes as bind mounts (host paths are canonical from
// configd).
std::vector<BindMount> ProfileVolumes(const lazaret::config::v1::ResolvedProfile& profile);

// The profile's volume host paths are canonical when lazaret-configd
// resolves them; this re-checks, right before the sandbox is created, that
// no component of `path` has since become a symlink (or vanished), so a
// directory swapped for a link to ~/.ssh in between is refused. A window
// of milliseconds until podman mounts remains (docs/operations.md).
absl::Status CheckNoSymlinkComponents(const std::string& path);

// The podman arguments for one mount. Refuses paths podman's -v syntax
// cannot carry (':' anywhere, ',' in a tmpfs destination) and relative
// paths.
absl::StatusOr<std::vector<std::string>> MountArgs(const Mount& mount);

struct SidecarSpec {
  std::string session_id;
  std::string profile;
  std::string runtime_dir;
  std::string router_host_dir;  // <session>/router
  std::string image;            // kSidecarImage
  bool rootless = false;
  std::string runc_path;  // absolute (FindRunc): no runtime looked up by name
};

// podman run --detach ... for the network sidecar (runc, NET_ADMIN only,
// read-only, FROM scratch image, slirp4netns). Every isolation setting a
// containers.conf could change is pinned here as well (PinnedIsolationArgs).
std::vector<std::string> SidecarArgv(const SidecarSpec& spec);

struct SandboxSpec {
  std::string session_id;
  std::string profile;
  std::string runtime_dir;
  std::string image;
  std::string runsc_path;
  bool rootless = false;
  bool tty = false;
  std::string env_file;
  std::vector<Mount> mounts;           // in order
  std::string sandbox_init_host;       // host path of lazaret-sandbox-init
  std::vector<std::string> init_args;  // before "--"
  std::vector<std::string> command;    // after "--"; empty: the shell
};

// The flags both containers share that pin what a containers.conf could
// otherwise set: namespaces (ipc, pid, uts, cgroup private; the user
// namespace is podman's own: --userns=host), no init, no host environment
// or proxy, the umask, /dev/shm size, cgroups enabled (rootful),
// no-new-privileges, never a pull. Capabilities and read-only are per
// container; keys the command line cannot set are in Lazaret's
// containers.conf (podman.h ContainersConfText).
std::vector<std::string> PinnedIsolationArgs(bool rootless);

// podman --runtime-flag=... run --rm ... for the agent sandbox (runsc).
absl::StatusOr<std::vector<std::string>> SandboxArgv(const SandboxSpec& spec);

// The gVisor flags, deliberately: hostinet (network=host) because gVisor's
// netstack cannot start on this kernel and the sandbox lives in the
// sidecar's network namespace anyway; ignore-cgroups when rootless (runsc
// cannot create cgroups there). No host-uds (no host Unix sockets until the
// escalation socket needs one), no net-raw.
std::vector<std::string> RunscGlobalFlags(bool rootless);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_RUN_PLAN_H_
