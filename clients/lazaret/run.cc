// `lazaret run`: one agent session. Runs in the user's terminal, as the
// user, and drives podman itself (it needs the TTY). Asks lazaret-configd
// for the resolved profile, plans the Git Shadow, then creates, in this
// order (FR-3): the network sidecar (runc), waits until its router answers
// grpc.health.v1 on the session's router socket, and only then the agent
// sandbox (runsc) in the sidecar's network namespace. Before anything
// exists the session is registered with the supervisor's session registry
// (fail closed: no supervisor, no session), which reaps it if this process
// dies by any means; before the sandbox starts, this process and the
// supervisor each hold the router (NetRouterService.Hold), so that if both
// die the router closes the namespace at once. When the command
// ends, or on SIGINT/SIGTERM/SIGHUP, it removes the sandbox, the sidecar,
// the env file, the router socket and the session directory, then imports
// the agent's commits (Git Shadow WriteBack; also every 2 s while it runs)
// and scans what the sandbox could write (workspace_scan.h: a snapshot of
// the git directories before the sandbox starts, a setuid/capability sweep
// every few ticks, and at the end the neutralising of planted repositories).
//
// Trust: the profile comes from lazaret-configd (already validated and
// canonicalised; host paths are still checked when they become mounts);
// the user's own environment supplies `env:VAR` values and $TERM. Nothing
// the sandbox writes is read here except through the Git Shadow's
// WriteBack and the workspace scan, which both distrust it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/git_shadow.h"
#include "clients/lazaret/git_shadow_fs.h"
#include "clients/lazaret/podman.h"
#include "clients/lazaret/run_plan.h"
#include "clients/lazaret/session.h"
#include "clients/lazaret/subprocess.h"
#include "clients/lazaret/terminfo.h"
#include "clients/lazaret/workspace_scan.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/configd/host_paths.h"
#include "services/configd/profile_check.h"
#include "services/common/router_hold.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::config::v1;
using Clock = std::chrono::steady_clock;

// How long the router may take to answer after `podman run -d` returned.
constexpr auto kRouterStartTimeout = std::chrono::seconds(20);
// The waiting loop's tick: Git Shadow WriteBack and a sidecar health check.
constexpr auto kTick = std::chrono::seconds(2);
// Consecutive failed sidecar health checks that end the session.
constexpr int kSidecarMaxFailures = 2;
// Consecutive ticks on which the supervisor did not know the session (it
// died or was restarted) that end it: a sandbox never runs without one.
constexpr int kRegistryMaxFailures = 2;
// Grace for the sandbox's processes when the session is torn down early.
constexpr int kSandboxStopGraceSeconds = 1;
// The setuid/setgid/capability sweep of the sandbox-writable trees runs every
// this many ticks (a walk of the whole tree; the end-of-session scan catches
// what the last interval left), and never takes more than 1/kSweepDuty of
// the time: a tree that takes 1 s to walk is swept every 20 s.
constexpr int kPrivilegeSweepTicks = 5;
constexpr int kSweepDuty = 20;

void Say(const std::string& line) { std::fprintf(stderr, "lazaret: %s\n", line.c_str()); }

// LAZARET_TRACE=1 prints how long each phase took (docs/operations.md).
void Trace(const char* phase) {
  static const bool on = [] {
    const char* v = std::getenv("LAZARET_TRACE");
    return v != nullptr && *v == '1';
  }();
  if (!on) return;
  static const auto start = Clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count() / 1000.0;
  std::fprintf(stderr, "lazaret: trace %8.1f ms  %s\n", ms, phase);
}

// The signals `lazaret run` takes synchronously (sigtimedwait). Blocked
// before any thread exists, so gRPC's threads inherit the mask and none of
// them can die of a Ctrl-C before the session is torn down.
sigset_t RunSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

// A termination signal that arrived (0 if none), without waiting.
int PendingTermination() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  timespec zero{0, 0};
  const int sig = sigtimedwait(&set, nullptr, &zero);
  return sig > 0 ? sig : 0;
}

std::optional<std::string> HostEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

absl::StatusOr<std::string> CanonicalCwd() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ErrnoStatus("getcwd", errno);
  char resolved[PATH_MAX];
  if (realpath(buf, resolved) == nullptr) return ErrnoStatus("realpath of the cwd", errno);
  return std::string(resolved);
}

bool IsRealDirectory(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p with mode 0700 for directories Lazaret owns (persistent dirs).
absl::Status MakeOwnedDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", prefix), errno);
    }
  }
  if (!IsRealDirectory(path)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

std::string StateDir(const pb::ResolvedProfile& profile) {
  return absl::StrCat(profile.profile_dir(), "/git");
}

// A pidfd for the process listening on the router socket - the sidecar's
// PID 1, lazaret-netrouter - found through SO_PEERCRED (the kernel reports
// the listener's pid translated into our pid namespace), checked by name,
// then pinned by the pidfd so a later signal can never reach another
// process. -1 when any step fails; the teardown then relies on podman alone.
int OpenRouterPidfd(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return -1;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ucred cred{};
  socklen_t len = sizeof(cred);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0;
  close(fd);
  if (!ok) return -1;
  // (glibc 2.36's <sys/pidfd.h> is not usable from C++: no extern "C".)
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, cred.pid, 0));
  if (pidfd < 0) return -1;
  char comm[64] = {};
  const std::string comm_path = absl::StrCat("/proc/", cred.pid, "/comm");
  const int cfd = open(comm_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (cfd >= 0) {
    (void)!read(cfd, comm, sizeof(comm) - 1);
    close(cfd);
  }
  // comm is truncated to 15 characters: "lazaret-netrout".
  if (std::strncmp(comm, "lazaret-netrout", 15) != 0) {
    close(pidfd);
    return -1;
  }
  return pidfd;
}

bool PidfdExited(int pidfd, int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}

// What the Git Shadow imported or refused over the whole session, printed
// once at the end so the interactive terminal is not written over. The
// write-back runs every tick and an agent can make it fail or refuse the
// same thing every time, so each distinct line is kept once, and at most
// kMaxLines of them (then one line saying how many more there were).
class WriteBackLog {
 public:
  static constexpr size_t kMaxLines = 100;

  void Add(const absl::StatusOr<WriteBackReport>& r) {
    if (!r.ok()) {
      Line(absl::StrCat("git write-back failed: ", r.status().message()));
      return;
    }
    for (const auto& s : r->imported) Line(absl::StrCat("imported ", s));
    for (const auto& s : r->conflicts) Line(absl::StrCat("conflict: ", s));
    for (const auto& s : r->rejected) Line(absl::StrCat("not imported: ", s));
    for (const auto& s : r->removed) Line(absl::StrCat("removed from write-back: ", s));
    if (!r->import_status.ok()) {
      Line(absl::StrCat("git import failed: ", r->import_status.message()));
    }
  }
  void Print() const {
    for (const auto& l : lines_) Say(absl::StrCat("git shadow: ", l));
    if (dropped_ != 0) {
      Say(absl::StrCat("git shadow: ", dropped_, " further distinct messages not shown"));
    }
  }

 private:
  void Line(std::string line) {
    if (seen_.count(line) != 0) return;
    if (lines_.size() >= kMaxLines) {
      ++dropped_;
      if (seen_.size() < 4 * kMaxLines) seen_.insert(std::move(line));
      return;
    }
    seen_.insert(line);
    lines_.push_back(std::move(line));
  }

  std::vector<std::string> lines_;
  std::set<std::string> seen_;
  size_t dropped_ = 0;
};

// One session, from plan to teardown.
class Runner {
 public:
  Runner(const Context& ctx, RunArgs args, std::string cwd)
      : ctx_(ctx), args_(std::move(args)), cwd_(std::move(cwd)) {}

  int Run();

 private:
  absl::StatusOr<pb::ResolvedProfile> ResolveProfile();
  absl::Status RecheckProfileHostPaths(const std::string& workspace) const;
  absl::Status Plan();
  void PrintDryRun() const;
  absl::Status SeedPersistentDirs();
  absl::Status StartSidecar();
  absl::Status WaitForRouter();
  int Supervise(pid_t sandbox_pid);
  void ApplyEgressPolicy();
  void Teardown(bool keep_session_dir = false);
  void WriteBackNow(bool final_attempt);
  absl::Status SnapshotWorkspace();
  void SweepPrivilegeBits();
  void ScanWorkspaceAtEnd();
  int Fail(const absl::Status& s);

  const Context& ctx_;
  RunArgs args_;
  std::string cwd_;

  pb::ResolvedProfile profile_;
  std::vector<EnvSetting> env_;
  std::optional<GitShadowPlan> git_;
  std::vector<BindMount> persistent_;
  std::string id_;
  std::string session_path_;
  SidecarSpec sidecar_;
  SandboxSpec sandbox_;
  std::vector<std::string> sidecar_argv_;
  std::vector<std::string> sandbox_argv_;

  std::unique_ptr<SessionDir> dir_;
  std::unique_ptr<SessionRegistration> registration_;
  std::unique_ptr<RouterHold> hold_;
  bool supervisor_lost_ = false;
  bool sidecar_created_ = false;
  WriteBackLog write_back_log_;
  int stop_signal_ = 0;
  bool sidecar_lost_ = false;
  int router_pidfd_ = -1;
  // The workspace scan (workspace_scan.h): the git directories there when
  // the sandbox started, and what the periodic sweeps stripped and (rootful)
  // handed back to the workspace's owner.
  std::optional<GitDirSnapshot> scan_snapshot_;
  std::vector<std::string> stripped_;
  std::map<std::string, uint64_t> handed_back_;
  int ticks_ = 0;
  Clock::time_point next_sweep_{};
  bool sweep_error_reported_ = false;
};

int Runner::Fail(const absl::Status& s) {
  std::fprintf(stderr, "lazaret run: %s\n", std::string(s.message()).c_str());
  Teardown();
  return kRunFailed;
}

absl::StatusOr<pb::ResolvedProfile> Runner::ResolveProfile() {
  const std::string socket = SocketPath(ctx_.runtime_dir, "configd");
  auto stub = pb::ConfigService::NewStub(DialUnix(socket));
  pb::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir(cwd_);
  req.mutable_selector()->set_explicit_config(args_.explicit_config);
  req.set_profile(args_.profile);
  pb::ResolveProfileResponse resp;
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status s = stub->ResolveProfile(&cc, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::UnavailableError(
          absl::StrCat("Lazaret is not running (no answer from the config service on ", socket,
                       "). Start it first; run: lazaret up"));
    }
    return absl::Status(FromGrpcStatus(s).code(),
                        absl::StrCat("resolving the profile: ", s.error_message()));
  }
  for (const pb::Diagnostic& d : resp.warnings()) {
    Say(absl::StrCat("warning: ", d.file(), d.line() > 0 ? absl::StrCat(":", d.line()) : "", ": ",
                     d.key_path(), ": ", d.message()));
  }
  return resp.profile();
}

// Defence in depth: lazaret-configd parses agent-written files, so every
// host path it returned is checked again here with the same rules
// (profile_check.h) before anything is created from it or mounted.
absl::Status Runner::RecheckProfileHostPaths(const std::string& workspace) const {
  LAZ_ASSIGN_OR_RETURN(config::HostContext host,
                       config::HostContextFromEnvironment(ctx_.runtime_dir));
  return config::CheckResolvedProfileHostPaths(profile_, host, workspace, args_.explicit_config);
}

absl::Status Runner::Plan() {
  Trace("start");
  LAZ_ASSIGN_OR_RETURN(profile_, ResolveProfile());
  LAZ_RETURN_IF_ERROR(RecheckProfileHostPaths(cwd_));
  Trace("profile resolved");
  // Environment first: an unset env:VAR refuses before anything exists.
  LAZ_ASSIGN_OR_RETURN(env_, ResolveProfileEnv(profile_, HostEnv));

  // Never a weaker runtime, never the host.
  absl::StatusOr<std::string> runsc = FindRunsc();
  if (!runsc.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start: ", runsc.status().message(),
        ". Lazaret runs agents only under gVisor and never falls back to runc or to the host."));
  }
  absl::StatusOr<std::string> runc = FindRunc();
  if (!runc.ok()) return runc.status();
  const std::string init = absl::StrCat(ctx_.libexec_dir, "/lazaret-sandbox-init");
  if (access(init.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        init,
        " is missing; build Lazaret (ninja lazaret-sandbox-init) or set LAZARET_LIBEXEC_DIR"));
  }

  // Terminal: the same TERM inside, and its compiled entry from the host.
  const bool tty = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
  std::vector<EnvSetting> terminal_env;
  std::optional<TerminfoEntry> terminfo;
  if (tty) {
    const std::string term = HostEnv("TERM").value_or("");
    if (IsValidTermName(term)) {
      terminal_env.push_back({"TERM", term, false});
      terminfo = FindTerminfo(term, TerminfoSearchFromEnvironment());
      if (terminfo.has_value()) {
        terminal_env.push_back({"TERMINFO", kSandboxTerminfoDir, false});
      } else {
        Say(absl::StrCat("no terminfo entry for TERM=", term,
                         " on this host; programs in the sandbox use the image's, if any"));
      }
    }
  }

  // The Git Shadow (git_shadow.h). Planning may create the agent branch
  // and the state directories, also for --dry-run.
  GitShadowRequest greq;
  greq.workspace_dir = cwd_;
  greq.profile = profile_.name();
  greq.state_dir = StateDir(profile_);
  greq.branch = args_.branch;
  greq.worktree_mode = args_.worktree;
  LAZ_ASSIGN_OR_RETURN(GitShadowPlan git, PlanGitShadow(greq));
  Trace("git shadow planned");
  for (const auto& n : git.notices) Say(n);
  const std::string workspace = git.workspace_host_dir.empty() ? cwd_ : git.workspace_host_dir;

  // Mounts, in the order of SPEC 4.1's table.
  std::vector<Mount> mounts;
  mounts.push_back(BindMount{workspace, kSandboxWorkspace, /*read_only=*/false,
                             /*selinux_shared=*/true});
  for (const Mount& m : git.mounts) mounts.push_back(m);
  // IDE settings are masked only where they exist: a tmpfs target that does
  // not exist would be created as a directory in the host workspace.
  for (const char* ide : {".vscode", ".idea"}) {
    if (IsRealDirectory(absl::StrCat(workspace, "/", ide))) {
      mounts.push_back(TmpfsMount{absl::StrCat(kSandboxWorkspace, "/", ide), "0755"});
    }
  }
  for (BindMount& v : ProfileVolumes(profile_)) mounts.push_back(std::move(v));
  LAZ_ASSIGN_OR_RETURN(persistent_,
                       PlanPersistentDirs(profile_.profile_dir(), profile_.persistent_dirs()));
  for (const BindMount& p : persistent_) mounts.push_back(p);
  if (terminfo.has_value()) {
    mounts.push_back(BindMount{terminfo->host_path, terminfo->container_path, true, false});
  }

  // Env file order: terminal, profile, Git Shadow (later lines win).
  std::vector<EnvSetting> env = terminal_env;
  env.insert(env.end(), env_.begin(), env_.end());
  env.insert(env.end(), git.env.begin(), git.env.end());
  env_ = std::move(env);
  LAZ_RETURN_IF_ERROR(EnvFileText(env_).status());

  id_ = NewSessionId();
  session_path_ = SessionPath(ctx_.runtime_dir, id_);
  if (const std::string sock = absl::StrCat(session_path_, "/router/router.sock");
      sock.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the router socket path ", sock, " is longer than a Unix socket path may be (",
        sizeof(sockaddr_un::sun_path) - 1, " bytes); use a shorter LAZARET_RUNTIME_DIR"));
  }
  sidecar_ = SidecarSpec{
      id_,           profile_.name(), ctx_.runtime_dir, absl::StrCat(session_path_, "/router"),
      kSidecarImage, Rootless(),     *runc};
  sidecar_argv_ = SidecarArgv(sidecar_);
  sandbox_.session_id = id_;
  sandbox_.profile = profile_.name();
  sandbox_.runtime_dir = ctx_.runtime_dir;
  sandbox_.image = profile_.image();
  sandbox_.runsc_path = *runsc;
  sandbox_.rootless = Rootless();
  sandbox_.tty = tty;
  sandbox_.env_file = absl::StrCat(session_path_, "/env");
  sandbox_.mounts = std::move(mounts);
  sandbox_.sandbox_init_host = init;
  sandbox_.init_args = git.init_args;
  sandbox_.command = args_.command;
  LAZ_ASSIGN_OR_RETURN(sandbox_argv_, SandboxArgv(sandbox_));
  git_ = std::move(git);
  return absl::OkStatus();
}

void Runner::PrintDryRun() const {
  std::vector<std::string> names;
  for (const auto& e : env_) names.push_back(e.name);
  std::printf("# lazaret run --dry-run: nothing is started. Session %s, profile %s%s.\n",
              id_.c_str(), profile_.name().c_str(), sandbox_.rootless ? ", rootless" : ", rootful");
  std::printf("# session directory %s (0700); env file %s (0600) with: %s (values not shown)\n",
              session_path_.c_str(), sandbox_.env_file.c_str(),
              names.empty() ? "(empty)" : absl::StrJoin(names, " ").c_str());
  for (const BindMount& p : persistent_) {
    std::printf("# persistent %s: %s%s\n", p.container.c_str(), p.host.c_str(),
                IsRealDirectory(p.host) ? "" : " (first use: seeded from the image)");
  }
  std::printf("# every podman below runs with CONTAINERS_CONF=%s (Lazaret's own; no other "
              "containers.conf is read)\n",
              ContainersConfPath(ctx_.runtime_dir).c_str());
  std::printf("%s\n", CommandLine(sidecar_argv_).c_str());
  std::printf("# wait until the router answers grpc.health.v1 on %s/router/router.sock\n",
              session_path_.c_str());
  std::printf("# egress policy: not applied yet (netpolicyd will push it here)\n");
  std::printf("%s\n", CommandLine(sandbox_argv_).c_str());
  std::printf("# when the command ends, or on SIGINT/SIGTERM/SIGHUP:\n");
  std::printf("#   (on a signal first: %s)\n",
              CommandLine(RemoveArgv(SandboxName(id_), kSandboxStopGraceSeconds, false)).c_str());
  std::printf("%s\n", CommandLine(RemoveArgv(SidecarName(id_), 0, true)).c_str());
}

// A persistent directory's first use, like a podman named volume: the
// image's content at that path is copied into the new host directory
// (through a temporary container that is created, never started), so that
// persisting /root or /usr/local does not hide what the image has there.
// Later runs bind the directory as it is; image updates below that path are
// not merged in (the fuse-overlayfs persistence that does is later work).
absl::Status Runner::SeedPersistentDirs() {
  std::vector<const BindMount*> fresh;
  for (const BindMount& p : persistent_) {
    if (!IsRealDirectory(p.host)) fresh.push_back(&p);
  }
  if (fresh.empty()) return absl::OkStatus();
  const std::string seed = absl::StrCat("lazaret-", id_, "-seed");
  std::vector<std::string> create = {"podman", "create", "--pull=never",
                                     absl::StrCat("--name=", seed)};
  for (const auto& l : {absl::StrCat("--label=", kLabelSession, "=", id_),
                        absl::StrCat("--label=", kLabelProfile, "=", profile_.name()),
                        absl::StrCat("--label=", kLabelRole, "=seed"),
                        absl::StrCat("--label=", kLabelRuntimeDir, "=", ctx_.runtime_dir)}) {
    create.push_back(l);
  }
  create.push_back(sandbox_.image);
  LAZ_ASSIGN_OR_RETURN(Captured c, RunCaptured(create, std::chrono::seconds(120)));
  if (c.exit_code != 0) {
    if (absl::StrContains(c.err, "image not known")) {
      return absl::FailedPreconditionError(MissingImageHint(sandbox_.image));
    }
    return absl::InternalError(absl::StrCat("creating ", seed, ": ", c.err));
  }
  absl::Status status;
  for (const BindMount* p : fresh) {
    const std::string tmp = absl::StrCat(p->host, ".seeding");
    (void)RemoveSessionTree(tmp);  // a seed an earlier run did not finish
    status = MakeOwnedDirs(tmp);
    if (!status.ok()) break;
    Say(absl::StrCat("persistent directory ", p->container,
                     ": first use, copying the image's "
                     "content into ",
                     p->host));
    absl::StatusOr<Captured> cp =
        RunCaptured({"podman", "cp", absl::StrCat(seed, ":", p->container, "/."), tmp},
                    std::chrono::minutes(10));
    if (!cp.ok() || (cp->exit_code != 0 && !absl::StrContains(cp->err, "could not be found"))) {
      status = absl::InternalError(absl::StrCat(
          "copying ", p->container,
          " out of the image: ", cp.ok() ? cp->err : std::string(cp.status().message())));
      break;
    }
    if (rename(tmp.c_str(), p->host.c_str()) != 0) {
      status = ErrnoStatus(absl::StrCat("renaming ", tmp), errno);
      break;
    }
  }
  if (absl::Status s = RemoveContainer(seed, 0); !s.ok()) status.Update(s);
  return status;
}

absl::Status Runner::StartSidecar() {
  sidecar_created_ = true;  // from here on, teardown removes it (by name)
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured(sidecar_argv_, std::chrono::seconds(120)));
  if (r.exit_code == 0) return absl::OkStatus();
  const std::string err(absl::StripTrailingAsciiWhitespace(r.err));
  if (absl::StrContains(err, "image not known") || absl::StrContains(err, "no such image")) {
    return absl::FailedPreconditionError(MissingImageHint(kSidecarImage));
  }
  return absl::InternalError(
      absl::StrCat("starting the network sidecar failed (podman exit ", r.exit_code, "): ", err));
}

absl::Status Runner::WaitForRouter() {
  const std::string socket = dir_->router_socket();
  const auto deadline = Clock::now() + kRouterStartTimeout;
  absl::Status last = absl::UnavailableError("the router socket does not exist yet");
  while (Clock::now() < deadline) {
    if (int sig = PendingTermination(); sig != 0) {
      stop_signal_ = sig;
      return absl::CancelledError(absl::StrCat("interrupted by ", strsignal(sig)));
    }
    if (access(socket.c_str(), F_OK) == 0) {
      last = CheckHealth(socket, 500);
      if (last.ok()) return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string logs;
  if (auto r =
          RunCaptured({"podman", "logs", "--tail=20", SidecarName(id_)}, std::chrono::seconds(20));
      r.ok()) {
    logs = absl::StrCat(r->out, r->err);
  }
  return absl::DeadlineExceededError(absl::StrCat("the network sidecar's router did not answer on ",
                                                  socket, " within ", kRouterStartTimeout.count(),
                                                  " s (", last.message(), "). Its log:\n", logs));
}

void Runner::ApplyEgressPolicy() {
  // This is where lazaret-netpolicyd will turn profile_.network() into the
  // session's route table and push it into the router over router.sock
  // (ApplyRoutes, then read back) - before the sandbox exists, so its first
  // packet is already governed. Until then, say so on every run.
  Say("egress policy enforcement is not applied yet: the sandbox has the sidecar's unrestricted "
      "outbound network (the profile's allow/deny lists are not enforced)");
}

// The trees the sandbox can write (the workspace and the profile's rw
// volumes), with the git directories in them, recorded before the sandbox
// starts: in memory for the end of this session and in the session
// directory for `lazaret clean` if this process dies.
absl::Status Runner::SnapshotWorkspace() {
  const std::string workspace =
      git_.has_value() && !git_->workspace_host_dir.empty() ? git_->workspace_host_dir : cwd_;
  // Rootful, the agent's files belong to host root (no uid mapping works
  // with podman 4.3's storage here; docs/operations.md): the sweeps give
  // them to the owner of the tree they are in. Rootless, podman's mapping
  // already made them the developer's.
  const bool hand_back = !sandbox_.rootless;
  std::vector<ScanRoot> roots;
  roots.push_back({workspace, git_.has_value() && git_->has_repo, hand_back});
  for (const BindMount& v : ProfileVolumes(profile_)) {
    if (!v.read_only) roots.push_back({v.host, false, hand_back});
  }
  LAZ_ASSIGN_OR_RETURN(
      GitDirSnapshot snap,
      TakeGitDirSnapshot(id_, std::move(roots), !profile_.keep_planted_repositories()));
  if (!snap.complete) {
    Say("warning: the workspace could not be walked completely before the session (a limit was "
        "reached); every git directory found at the end that cannot be proven unchanged will be "
        "treated as planted");
  }
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(dir_->path()));
  LAZ_RETURN_IF_ERROR(WriteFileAt(dir, kSnapshotFileName, SerializeSnapshot(snap), 0600));
  scan_snapshot_ = std::move(snap);
  return absl::OkStatus();
}

void Runner::SweepPrivilegeBits() {
  if (!scan_snapshot_.has_value() || Clock::now() < next_sweep_) return;
  const auto start = Clock::now();
  absl::Status s = StripPrivilegeBits(scan_snapshot_->roots, scan_snapshot_->since, ScanLimits{},
                                      &stripped_, &handed_back_);
  next_sweep_ = Clock::now() + (Clock::now() - start) * kSweepDuty;
  if (!s.ok() && !sweep_error_reported_) {
    Say(absl::StrCat("workspace sweep: ", s.message()));
    sweep_error_reported_ = true;
  }
}

// At session end (the sandbox is gone): what the session wrote handed back
// to the workspace owner (rootful), setuid/setgid bits and file
// capabilities stripped, git directories the session planted or changed
// neutralised (moved aside under a quarantine name; docs/git-shadow.md),
// and the files editors and shells act on listed.
void Runner::ScanWorkspaceAtEnd() {
  if (!scan_snapshot_.has_value()) return;
  absl::StatusOr<ScanReport> report = ScanAtSessionEnd(*scan_snapshot_);
  if (!report.ok()) {
    Say(absl::StrCat(
        "WARNING: the end-of-session workspace scan failed: ", report.status().message(),
        ". Do not run git in the workspace before checking it for planted "
        "repositories"));
    return;
  }
  report->stripped.insert(report->stripped.begin(), stripped_.begin(), stripped_.end());
  for (const auto& [owner, n] : handed_back_) report->handed_back[owner] += n;
  for (const std::string& line : ReportLines(*report)) Say(absl::StrCat("workspace: ", line));
}

void Runner::WriteBackNow(bool final_attempt) {
  if (!git_.has_value() || !git_->has_repo) return;
  WriteBackOptions options;
  options.final_attempt = final_attempt;
  write_back_log_.Add(WriteBack(git_->write_back, options));
}

int Runner::Supervise(pid_t sandbox_pid) {
  const sigset_t set = RunSignals();
  auto next_tick = Clock::now() + kTick;
  int sidecar_failures = 0;
  int registry_failures = 0;
  while (true) {
    int status = 0;
    const pid_t w = waitpid(sandbox_pid, &status, WNOHANG);
    if (w == sandbox_pid) return ExitCodeOf(status);
    const auto now = Clock::now();
    if (now >= next_tick) {
      {
        // A stop request never waits on host git (the final write-back
        // after teardown is not interruptible).
        InterruptibleBySignals interruptible;
        WriteBackNow(/*final_attempt=*/false);
      }
      if (++ticks_ % kPrivilegeSweepTicks == 0) SweepPrivilegeBits();
      if (router_pidfd_ >= 0 && PidfdExited(router_pidfd_, 0)) {
        sidecar_lost_ = true;
        return kRunFailed;
      }
      if (CheckHealth(dir_->router_socket(), 1000).ok()) {
        sidecar_failures = 0;
      } else if (++sidecar_failures >= kSidecarMaxFailures) {
        sidecar_lost_ = true;
        return kRunFailed;
      }
      if (registration_->Check().ok()) {
        registry_failures = 0;
      } else if (++registry_failures >= kRegistryMaxFailures) {
        supervisor_lost_ = true;
        return kRunFailed;
      }
      next_tick = Clock::now() + kTick;
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(next_tick - now);
    timespec ts{static_cast<time_t>(left.count() / 1000000000),
                static_cast<long>(left.count() % 1000000000)};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      stop_signal_ = sig;
      return 128 + sig;
    }
  }
}

void Runner::Teardown(bool keep_session_dir) {
  // Our hold ends first: should the sandbox still run, its network is
  // closed before podman gets to it.
  hold_.reset();
  if (router_pidfd_ >= 0) {
    // podman notices a killed container only at its next poll (~100 ms);
    // stopping the router ourselves and removing a container that has
    // already exited is what keeps the teardown short. Precondition: the
    // sandbox has exited or been removed (it uses the sidecar's netns).
    if (syscall(SYS_pidfd_send_signal, router_pidfd_, SIGKILL, nullptr, 0) == 0) {
      (void)PidfdExited(router_pidfd_, 2000);
    }
    close(router_pidfd_);
    router_pidfd_ = -1;
  }
  if (sidecar_created_) {
    // The sidecar with everything that depends on it - the sandbox, if it
    // is still there - in one call: podman removes the dependents first, so
    // the sandbox never outlives its sidecar.
    if (absl::Status s = RemoveWithDependents(SidecarName(id_), 0); !s.ok()) {
      Say(std::string(s.message()));
    }
    sidecar_created_ = false;
  }
  if (dir_ != nullptr && !keep_session_dir) {
    if (absl::Status s = dir_->Remove(); !s.ok()) Say(std::string(s.message()));
    dir_.reset();
  }
  // Only once nothing of the session is left: until then, if this process
  // dies, the supervisor's reaper finishes the job (session.json tells it
  // where to write the agent's commits back).
  if (dir_ == nullptr && registration_ != nullptr) {
    (void)registration_->Unregister();
    registration_.reset();
  }
}

int Runner::Run() {
  if (absl::Status s = Plan(); !s.ok()) return Fail(s);
  if (args_.dry_run) {
    PrintDryRun();
    return 0;
  }
  if (int sig = PendingTermination(); sig != 0) return 128 + sig;

  SessionRecord record;
  record.id = id_;
  record.profile = profile_.name();
  record.workspace = cwd_;
  record.git_state_dir = StateDir(profile_);
  record.pid = getpid();
  record.started_unix = time(nullptr);
  absl::StatusOr<std::unique_ptr<SessionDir>> dir = SessionDir::Create(ctx_.runtime_dir, record);
  if (!dir.ok()) return Fail(dir.status());
  dir_ = *std::move(dir);
  // Fail closed: nothing starts unless the supervisor watches this process.
  absl::StatusOr<std::unique_ptr<SessionRegistration>> registration =
      SessionRegistration::Register(ctx_.runtime_dir, record);
  if (!registration.ok()) return Fail(registration.status());
  registration_ = *std::move(registration);
  Trace("session registered");
  absl::StatusOr<std::string> env_text = EnvFileText(env_);
  if (!env_text.ok()) return Fail(env_text.status());
  if (absl::Status s = dir_->WriteEnvFile(*env_text); !s.ok()) return Fail(s);
  // CmdRun installed Lazaret's containers.conf before any thread existed;
  // no podman call of a session runs without it (podman.h).
  if (const char* c = std::getenv("CONTAINERS_CONF");
      c == nullptr || c != ContainersConfPath(ctx_.runtime_dir)) {
    return Fail(absl::InternalError("Lazaret's containers.conf is not installed"));
  }
  if (absl::Status s = SeedPersistentDirs(); !s.ok()) return Fail(s);

  // 1. The network sidecar, and its router answering.
  Trace("session directory ready");
  if (absl::Status s = StartSidecar(); !s.ok()) return Fail(s);
  Trace("sidecar started");
  if (absl::Status s = WaitForRouter(); !s.ok()) {
    if (stop_signal_ != 0) {
      Teardown();
      return 128 + stop_signal_;
    }
    return Fail(s);
  }
  Trace("router healthy");
  router_pidfd_ = OpenRouterPidfd(dir_->router_socket());
  // Both holds before the sandbox exists: ours, then the supervisor's.
  {
    absl::StatusOr<std::unique_ptr<RouterHold>> hold =
        RouterHold::Open(dir_->router_socket(), "cli", std::chrono::seconds(5));
    if (!hold.ok()) return Fail(hold.status());
    hold_ = *std::move(hold);
  }
  if (absl::Status s = registration_->AttachRouter(); !s.ok()) return Fail(s);
  Trace("router held");
  // 2. The egress policy (not yet: netpolicyd's call goes here).
  ApplyEgressPolicy();
  if (int sig = PendingTermination(); sig != 0) {
    Teardown();
    return 128 + sig;
  }

  // 3. Only now the agent sandbox. Its volume sources are re-checked here,
  // as late as possible (configd resolved them symlink-free).
  for (const BindMount& v : ProfileVolumes(profile_)) {
    if (absl::Status s = CheckNoSymlinkComponents(v.host); !s.ok()) return Fail(s);
  }
  // Against the directory the developer named, as configd checked it (in
  // --worktree mode the mounted workspace is Lazaret's own worktree under
  // the profile directory).
  if (absl::Status s = RecheckProfileHostPaths(cwd_); !s.ok()) return Fail(s);
  if (absl::Status s = SnapshotWorkspace(); !s.ok()) {
    return Fail(absl::Status(s.code(), absl::StrCat("recording the workspace's git directories "
                                                    "before the session: ",
                                                    s.message())));
  }
  Trace("workspace snapshot taken");
  termios saved{};
  const bool restore_tty = sandbox_.tty && tcgetattr(STDIN_FILENO, &saved) == 0;
  absl::StatusOr<pid_t> pid = SpawnAttached(sandbox_argv_);
  if (!pid.ok()) return Fail(pid.status());
  int code = Supervise(*pid);
  Trace("sandbox exited");

  // 4. Teardown: the sandbox (its podman client exits with it), the
  // sidecar, the session directory; then the agent's commits.
  if (stop_signal_ != 0 || sidecar_lost_ || supervisor_lost_) {
    (void)RemoveContainer(SandboxName(id_), kSandboxStopGraceSeconds);
    int status = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    while (waitpid(*pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(*pid, SIGKILL);
        waitpid(*pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (restore_tty) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
  // Whether the command ran at all: podman's own failures (125), and a
  // runtime that cannot start a container (126, 127), leave the sandbox
  // "created" or not there at all; the command's own 125-127 come from a
  // container that started.
  bool never_started = false;
  if (stop_signal_ == 0 && !sidecar_lost_ && !supervisor_lost_ && code >= 125 && code <= 127) {
    absl::StatusOr<Captured> state =
        RunCaptured({"podman", "inspect", "--format", "{{.State.Status}}", SandboxName(id_)},
                    std::chrono::seconds(30));
    never_started = state.ok() &&
                    (state->exit_code != 0 || absl::StripAsciiWhitespace(state->out) == "created");
  }
  // The session directory (and with it the registry's claim on this
  // session) goes last: if this process dies before then, the supervisor's
  // reaper finds it and does the write-back and the workspace scan itself.
  Teardown(/*keep_session_dir=*/true);
  Trace("sidecar removed");
  WriteBackNow(/*final_attempt=*/true);
  write_back_log_.Print();
  Trace("written back");
  ScanWorkspaceAtEnd();
  Trace("workspace scanned");
  Teardown();

  if (supervisor_lost_) {
    Say("the supervisor (lazaret up) is gone or no longer knows this session; the session was "
        "ended (a sandbox never runs without a supervisor that would reap it)");
  } else if (sidecar_lost_) {
    Say("the network sidecar stopped answering; the session was ended (a sandbox never outlives "
        "its network sidecar)");
  } else if (stop_signal_ != 0) {
    Say(absl::StrCat("session ", id_, " stopped by ", strsignal(stop_signal_)));
  } else if (never_started) {
    if (!ImageExists(sandbox_.image)) {
      Say(MissingImageHint(sandbox_.image));
    } else {
      Say(absl::StrCat("the sandbox never started (podman exit ", code,
                       "; its error is above): the command did not run. Lazaret runs agents only "
                       "under gVisor (",
                       sandbox_.runsc_path, ") and never falls back to runc or to the host."));
    }
    code = kRunFailed;
  }
  return code;
}

}  // namespace

int CmdRun(const Context& ctx, const std::vector<std::string>& args) {
  // Before any thread exists (gRPC creates some on the first call).
  const sigset_t set = RunSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  absl::StatusOr<std::string> cwd = CanonicalCwd();
  if (!cwd.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n", std::string(cwd.status().message()).c_str());
    return kRunFailed;
  }
  absl::StatusOr<RunArgs> parsed = ParseRunArgs(args, *cwd);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n%s", std::string(parsed.status().message()).c_str(),
                 kRunUsage);
    return kRunFailed;
  }
  if (parsed->help) {
    std::printf("%s", kRunUsage);
    return 0;
  }
  // Every podman this session starts reads only Lazaret's containers.conf.
  // setenv before any thread exists. Without the runtime directory Lazaret
  // is not up, which the profile request below reports.
  if (struct stat st {}; stat(ctx.runtime_dir.c_str(), &st) == 0) {
    if (absl::Status s = InstallContainersConf(ctx.runtime_dir).status(); !s.ok()) {
      std::fprintf(stderr, "lazaret run: %s\n", std::string(s.message()).c_str());
      return kRunFailed;
    }
  }
  Runner runner(ctx, *std::move(parsed), *std::move(cwd));
  return runner.Run();
}

}  // namespace lazaret::cli
