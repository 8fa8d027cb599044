#include "services/sessiond/session/worker.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "lazaret/session/v1/session.pb.h"
#include "services/common/fs/fd.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/session/attach_hub.h"
#include "services/sessiond/session/attach_service.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/dry_run.h"
#include "services/sessiond/session/env.h"
#include "services/sessiond/session/live_session.h"
#include "services/sessiond/session/mounts.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/profile.h"
#include "services/sessiond/session/run_args.h"
#include "services/sessiond/session/session_dir.h"
#include "services/sessiond/session/signals.h"
#include "services/sessiond/session/start.h"
#include "services/sessiond/session/supervise.h"
#include "services/sessiond/session/teardown.h"
#include "services/sessiond/session/terminal.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

// One packet on the control socket (session.proto: at most 1 MiB).
constexpr size_t kMaxPacket = 1 << 20;
// After the session's exit: how long the attached terminals have to take
// their last messages. A stream session's client may still be reading the
// command's last output, which it must not lose.
constexpr absl::Duration kTtyExitGrace = absl::Seconds(2);
constexpr absl::Duration kStreamExitGrace = absl::Seconds(10);
// The pty's size is clamped to this (a client's claim).
constexpr uint32_t kMaxWindowSide = 4096;
// How long a spare waits for a request before it removes itself; the next
// started session prepares a new one.
constexpr absl::Duration kSpareIdle = absl::Minutes(30);

absl::StatusOr<sv1::StartRequest> ReadStartRequest(int fd) {
  std::string buf(kMaxPacket + 1, '\0');
  ssize_t n;
  do {
    n = recv(fd, buf.data(), buf.size(), MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus("reading the StartRequest from lazaret-sessiond", errno);
  if (n == 0) return absl::FailedPreconditionError("lazaret-sessiond sent no StartRequest");
  if (static_cast<size_t>(n) > kMaxPacket) {
    return absl::InvalidArgumentError("the StartRequest is larger than 1 MiB");
  }
  sv1::StartRequest req;
  if (!req.ParseFromArray(buf.data(), static_cast<int>(n))) {
    return absl::InvalidArgumentError("the StartRequest from lazaret-sessiond does not parse");
  }
  return req;
}

// The worker's side of the control socket: reports to lazaret-sessiond,
// one packet each, from any thread. Once sessiond is gone, reports are
// dropped (its death signal stops the session meanwhile).
class Control {
 public:
  explicit Control(int fd) : fd_(fd) {}

  void Send(const sv1::WorkerReport& report) {
    std::string bytes;
    if (!report.SerializeToString(&bytes) || bytes.size() > kMaxPacket) return;
    absl::MutexLock lock(&mu_);
    if (gone_) return;
    ssize_t n;
    do {
      n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) gone_ = true;
  }

  void Event(sv1::StartEvent event) {
    sv1::WorkerReport r;
    *r.mutable_event() = std::move(event);
    Send(r);
  }

  void Notice(const std::string& line) {
    sv1::StartEvent e;
    e.set_notice(line);
    Event(std::move(e));
  }

  void Failed(int exit_code, const std::string& message) {
    sv1::StartEvent e;
    e.mutable_failed()->set_exit_code(exit_code);
    e.mutable_failed()->set_message(message);
    Event(std::move(e));
  }

 private:
  const int fd_;
  absl::Mutex mu_;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;
};

// What the worker knows of its session for SessionService.List, and the
// hub's events: a stop from a terminal, attendance that changed.
class Worker : public AttachHub::Events {
 public:
  Worker(Control* control, LiveSession* session) : control_(control), s_(session) {}

  // Fixed once the session is planned, before any attach thread exists.
  void Describe(const sv1::StartRequest& req, const std::vector<std::string>& command) {
    info_.set_id(s_->plan.id);
    info_.set_profile(s_->profile.name());
    info_.set_workspace(req.workspace_dir());
    info_.set_started_unix(time(nullptr));
    info_.set_tty(s_->plan.sandbox.tty);
    info_.set_worker_pid(getpid());
    for (const std::string& c : command) info_.add_command(c);
    unattended_ = UnattendedPolicyOf(s_->profile.session(), !s_->plan.sandbox.tty);
  }
  void SetAttachSocket(const std::string& path) { info_.set_attach_socket(path); }

  void SetState(sv1::SessionState state) {
    state_ = state;
    Report();
  }

  void StopRequested(const std::string& reason) override { s_->stops.Request(reason); }

  void AttendanceChanged() override {
    Report();
    // The supervision loop recomputes when an unattended session stops.
    WakeSupervision();
  }

  void Report() {
    sv1::WorkerReport r;
    sv1::SessionInfo* info = r.mutable_info();
    *info = info_;
    info->set_state(state_.load());
    AttachHub* hub = hub_.load();
    if (hub != nullptr) {
      const Attendance a = hub->attendance();
      info->set_attached(a.attached);
      if (a.attached == 0) info->set_detached_since_unix(absl::ToUnixSeconds(a.detached_since));
      const absl::Time stop_at = UnattendedStopAt(unattended_, a);
      if (stop_at != absl::InfiniteFuture()) info->set_stop_at_unix(absl::ToUnixSeconds(stop_at));
    }
    control_->Send(r);
  }

  void SetHub(AttachHub* hub) { hub_ = hub; }

 private:
  Control* const control_;
  LiveSession* const s_;
  sv1::SessionInfo info_;  // the fixed part, written before any attach thread
  UnattendedPolicy unattended_;
  std::atomic<sv1::SessionState> state_{sv1::SESSION_STATE_STARTING};
  std::atomic<AttachHub*> hub_{nullptr};
};

// The caller's environment, as StartRequest.env gave it.
HostEnvLookup CallerEnv(const sv1::StartRequest& req) {
  auto env = std::make_shared<std::map<std::string, std::string>>(req.env().begin(),
                                                                  req.env().end());
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env->find(name);
    if (it == env->end()) return std::nullopt;
    return it->second;
  };
}

uint32_t Side(uint32_t v, uint32_t fallback) {
  if (v == 0) return fallback;
  return v > kMaxWindowSide ? kMaxWindowSide : v;
}

// The profile, then everything on the host the plan is made of, then the
// plan. Planning the Git Shadow may create the agent branch and the state
// directories, also for --dry-run.
// An adopted spare keeps its session id (s->adopted).
absl::Status Plan(const WorkerOptions& o, const RunArgs& args, const sv1::StartRequest& req,
                  LiveSession* s) {
  Trace("start");
  LAZ_ASSIGN_OR_RETURN(s->profile, ResolveProfile(o.runtime_dir, s->workspace_dir,
                                                  args.explicit_config, args.profile));
  LAZ_RETURN_IF_ERROR(
      RecheckProfileHostPaths(s->profile, o.runtime_dir, s->workspace_dir, args.explicit_config));
  Trace("profile resolved");
  PlanInputs in;
  // Environment first: an unset env:VAR refuses before anything exists.
  LAZ_ASSIGN_OR_RETURN(in.profile_env, ResolveProfileEnv(s->profile, s->caller_env));
  // Then the secrets' values (a dry run shows placeholders and never runs
  // a secret's command).
  if (s->profile.secrets_size() > 0) {
    if (args.dry_run) {
      s->secrets = std::make_unique<SessionSecrets>();
      for (const auto& spec : s->profile.secrets()) {
        ResolvedSecret& r = s->secrets->secrets().emplace_back();
        r.spec = spec;
        r.placeholder = NewPlaceholder();
      }
    } else {
      LAZ_ASSIGN_OR_RETURN(s->secrets, ResolveSecrets(s->profile, s->caller_environment));
      Trace("secrets resolved");
    }
    in.placeholder_env = PlaceholderEnv(*s->secrets);
  }

  // Never a weaker runtime, never the host.
  absl::StatusOr<std::string> runsc = FindRunsc();
  if (!runsc.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start: ", runsc.status().message(),
        ". Lazaret runs agents only under gVisor and never falls back to runc or to the host."));
  }
  LAZ_ASSIGN_OR_RETURN(in.runc_path, FindRunc());
  in.runsc_path = *std::move(runsc);
  in.sandbox_init_host = absl::StrCat(o.libexec_dir, "/lazaret-sandbox-init");
  if (access(in.sandbox_init_host.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        in.sandbox_init_host,
        " is missing; build Lazaret (ninja lazaret-sandbox-init) or set LAZARET_LIBEXEC_DIR"));
  }
  if (s->profile.escalation().enabled()) {
    in.escalate_client_host = absl::StrCat(o.libexec_dir, "/lazaret-escalate");
    if (access(in.escalate_client_host.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          in.escalate_client_host,
          " is missing; build Lazaret (ninja lazaret-escalate) or set LAZARET_LIBEXEC_DIR, or set "
          "[escalation] enabled = false to run without host escalation"));
    }
  }
  in.terminal = CallerTerminal(req.has_terminal(), s->caller_env);

  // The Git Shadow (gitshadow/plan.h).
  gitshadow::GitShadowRequest greq;
  greq.workspace_dir = s->workspace_dir;
  greq.profile = s->profile.name();
  greq.state_dir = GitStateDir(s->profile);
  greq.branch = args.branch;
  greq.worktree_mode = args.worktree;
  LAZ_ASSIGN_OR_RETURN(gitshadow::GitShadowPlan git, gitshadow::PlanGitShadow(greq));
  Trace("git shadow planned");
  for (const auto& n : git.notices) Say(n);

  in.session_id = s->adopted ? s->plan.id : NewSessionId();
  in.escalation_certs_dir = escalation::ExpectedCertsDir(geteuid(), in.session_id);
  in.runtime_dir = o.runtime_dir;
  in.workspace_dir = s->workspace_dir;
  in.rootless = Rootless();
  in.command = args.command;
  LAZ_ASSIGN_OR_RETURN(s->plan, PlanSession(in, s->profile, git));
  s->writes.set_git(std::move(git));
  return absl::OkStatus();
}

// Whether the spare in `s` can serve the request planned into it: the
// same workspace and --config, the sidecar it would start exactly the one
// it holds (so the same profile name, escalation, egress proxy, runc and
// mode), the supervisor still knowing it and its router still answering.
// The reason when not.
std::optional<std::string> SpareMismatch(LiveSession* s, const std::vector<std::string>& held_argv) {
  if (s->plan.sidecar_argv != held_argv) {
    return "the profile's sidecar is not the one prepared (the configuration changed)";
  }
  if (s->plan.sandbox.escalation.has_value() != s->escalation_endpoint.has_value()) {
    return "the profile's escalation is not the one prepared";
  }
  if (s->escalation_endpoint.has_value()) {
    if (absl::Status st = UseEscalationEndpoint(*s->escalation_endpoint, &s->plan); !st.ok()) {
      return absl::StrCat("the prepared escalation endpoint does not fit: ", st.message());
    }
  }
  if (absl::Status st = CheckSpare(s); !st.ok()) {
    return absl::StrCat("the prepared sidecar cannot serve: ", st.message());
  }
  return std::nullopt;
}

// The session from the parsed request to its end. Returns once the
// session is torn down and every attached terminal had its exit. `s` is
// empty, or a spare this request adopts (s->adopted).
void RunWorker(const WorkerOptions& o, const sv1::StartRequest& req, Control* control,
               LiveSession& s) {
  absl::StatusOr<RunArgs> args = ParseRunArgs({req.args().begin(), req.args().end()},
                                              req.workspace_dir());
  if (!args.ok()) {
    control->Failed(kRunFailed, absl::StrCat(args.status().message(), "\n", kRunUsage));
    return;
  }
  if (args->help) {
    sv1::StartEvent e;
    e.set_plan(kRunUsage);
    control->Event(std::move(e));
    return;
  }
  if (req.workspace_dir().empty() || req.workspace_dir()[0] != '/') {
    control->Failed(kRunFailed, "the workspace directory must be an absolute path");
    return;
  }
  // --config FILE by its canonical path: what configd resolves now is what
  // lazaret-netpolicyd resolves again from the session record. A file that
  // cannot be resolved is left as given for configd to report.
  if (char resolved[PATH_MAX];
      !args->explicit_config.empty() && realpath(args->explicit_config.c_str(), resolved)) {
    args->explicit_config = resolved;
  }
  // Every podman this session starts reads only Lazaret's containers.conf.
  // setenv before any thread exists (a spare did so before it). Without
  // the runtime directory Lazaret is not up, which the profile request
  // below reports.
  if (struct stat st{}; !s.adopted && stat(o.runtime_dir.c_str(), &st) == 0) {
    if (absl::Status s = InstallContainersConf(o.runtime_dir).status(); !s.ok()) {
      control->Failed(kRunFailed, std::string(s.message()));
      return;
    }
  }
  // What a spare was prepared for: sessiond hands it only requests of the
  // same workspace and --config (SpareKey); checked again here.
  const std::vector<std::string> held_argv = s.plan.sidecar_argv;
  auto decline = [&](const std::string& why) {
    sv1::WorkerReport r;
    r.set_spare_declined(why);
    s.writes.ReleaseRepository();
    control->Send(r);
    ReleaseSession(&s);
  };
  if (s.adopted &&
      (s.workspace_dir != req.workspace_dir() || s.explicit_config != args->explicit_config)) {
    return decline("another workspace or --config than the one prepared");
  }

  s.runtime_dir = o.runtime_dir;
  s.workspace_dir = req.workspace_dir();
  s.explicit_config = args->explicit_config;
  s.approver = args->approver;
  s.ports = args->ports;
  s.caller_env = CallerEnv(req);
  s.caller_environment.insert(req.env().begin(), req.env().end());
  if (req.has_terminal()) {
    s.rows = Side(req.terminal().rows(), 24);
    s.cols = Side(req.terminal().cols(), 80);
  }
  Worker worker(control, &s);
  s.hub_events = &worker;
  auto fail = [&](const absl::Status& status) {
    ReleaseSession(&s);
    control->Failed(kRunFailed, std::string(status.message()));
  };

  if (absl::Status st = Plan(o, *args, req, &s); !st.ok()) return fail(st);
  if (s.adopted) {
    if (std::optional<std::string> why = SpareMismatch(&s, held_argv); why.has_value()) {
      return decline(*why);
    }
  }
  if (args->dry_run) {
    sv1::StartEvent e;
    e.set_plan(DryRunText(s.plan, o.runtime_dir, IsRealDirectory));
    control->Event(std::move(e));
    return;
  }
  worker.Describe(req, args->command);
  worker.Report();
  absl::StatusOr<pid_t> pid = StartSession(&s);
  if (!pid.ok()) {
    if (s.stop_signal != 0) {
      ReleaseSession(&s);
      control->Failed(128 + s.stop_signal, std::string(pid.status().message()));
      return;
    }
    return fail(pid.status());
  }
  worker.SetHub(s.hub.get());

  // The attach socket, in the session directory (0700): the teardown's
  // removal of the directory and the reap of a dead session take it along.
  const std::string socket = absl::StrCat(s.dir->path(), "/", kAttachSocketName);
  AttachServiceImpl service(s.hub.get());
  absl::StatusOr<std::unique_ptr<GrpcUnixServer>> server = ServeAttach(socket, &service);
  if (!server.ok()) {
    s.stop_signal = SIGTERM;
    s.stop_reason = "because its attach socket could not be served";
    const int code = EndSession(&s, *pid, 128 + SIGTERM);
    (void)code;
    ReleaseSession(&s);
    control->Failed(kRunFailed, absl::StrCat("the session's attach socket ", socket,
                                             " could not be served: ",
                                             server.status().message()));
    return;
  }
  // The same protocol framed on a plain socket, for terminals
  // (attach_frames.h).
  absl::StatusOr<std::unique_ptr<FramedListener>> frames = ServeAttachFrames(
      absl::StrCat(s.dir->path(), "/", kAttachFramesSocketName), s.hub.get());
  if (!frames.ok()) {
    (*server)->Shutdown();
    s.stop_signal = SIGTERM;
    s.stop_reason = "because its attach socket could not be served";
    const int code = EndSession(&s, *pid, 128 + SIGTERM);
    (void)code;
    ReleaseSession(&s);
    control->Failed(kRunFailed, absl::StrCat("the session's framed attach socket could not be "
                                             "served: ",
                                             frames.status().message()));
    return;
  }
  worker.SetAttachSocket(socket);

  // Started: from here on Lazaret's lines go to the attached terminals.
  AttachHub* hub = s.hub.get();
  SetNoticeSink([hub](const std::string& line) { hub->Notice(line); });
  sv1::StartEvent started;
  started.mutable_started()->set_session_id(s.plan.id);
  started.mutable_started()->set_attach_socket(socket);
  control->Event(std::move(started));
  worker.SetState(sv1::SESSION_STATE_RUNNING);

  int code = Supervise(&s, *pid);
  Trace("sandbox exited");
  worker.SetState(sv1::SESSION_STATE_STOPPING);
  code = EndSession(&s, *pid, code);

  // The exit first: what follows is not what the user waits for. `lazaret
  // ps` shows the session stopping until its containers and directory are
  // gone.
  hub->Exit(code, EndReason(s));
  ReleaseSession(&s);
  Trace("containers and session directory removed");
  (void)hub->WaitAllDetached(hub->mode() == AttachHub::Mode::kStream ? kStreamExitGrace
                                                                     : kTtyExitGrace);
  SetNoticeSink(nullptr);
  frames->reset();
  (*server)->Shutdown();
}

// The worker's process environment from the request, before any thread
// exists. `sudo lazaret run` in a developer's repository: host git, run as
// root for this session, trusts the repository of SUDO_UID and no other,
// as it did when `lazaret run` itself ran git; only a uid is taken.
// LAZARET_RUNSC=/path/to/runsc on `lazaret run` picks this session's
// runsc, as it did when `lazaret run` started podman itself: an absolute
// path to an executable (FindRunsc), and a runtime that fails ends the
// start; there is never a fallback to runc or the host. A spare is
// prepared with both as its request had them, and serves only requests
// with the same values (spare.h).
void ApplyWorkerEnvironment(const sv1::StartRequest& req) {
  if (auto sudo = req.env().find("SUDO_UID"); sudo != req.env().end()) {
    if (!sudo->second.empty() && sudo->second.size() <= 10 &&
        sudo->second.find_first_not_of("0123456789") == std::string::npos) {
      setenv("SUDO_UID", sudo->second.c_str(), 1);
    } else {
      unsetenv("SUDO_UID");
    }
  } else {
    unsetenv("SUDO_UID");
  }
  if (auto runsc = req.env().find("LAZARET_RUNSC"); runsc != req.env().end()) {
    setenv("LAZARET_RUNSC", runsc->second.c_str(), 1);
  }
}

// Waits for the request that adopts the spare: the next packet on the
// control socket. nullopt when a termination signal came, the spare
// waited kSpareIdle, or sessiond closed the socket.
std::optional<sv1::StartRequest> AwaitAdoption(int control_fd) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  // Readable while one of them is pending (they stay blocked and pending:
  // PendingTermination takes them).
  fs::UniqueFd signals(signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.valid()) return std::nullopt;
  pollfd fds[2] = {{control_fd, POLLIN, 0}, {signals.get(), POLLIN, 0}};
  const absl::Time deadline = absl::Now() + kSpareIdle;
  for (;;) {
    if (PendingTermination() != 0) return std::nullopt;
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) return std::nullopt;
    const int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (n < 0 && errno != EINTR) return std::nullopt;
    if (n > 0 && fds[0].revents != 0) break;
  }
  if (PendingTermination() != 0) return std::nullopt;
  absl::StatusOr<sv1::StartRequest> req = ReadStartRequest(control_fd);
  if (!req.ok()) return std::nullopt;
  return *std::move(req);
}

// A spare (StartRequest.spare; docs/architecture.md "Spare sidecar"):
// plans from the profile `req` names what decides the sidecar, prepares
// it (PrepareSpare), reports spare_ready and waits for the request that
// adopts it, which it returns with `s` holding the spare. nullopt when it
// ended instead; what it had is removed by then. Its lines go to the
// service set's log: no caller waits on it.
std::optional<sv1::StartRequest> RunSpare(const WorkerOptions& o, const sv1::StartRequest& req,
                                          Control* control, LiveSession& s) {
  SetNoticeSink([](const std::string& line) {
    std::fprintf(stderr, "lazaret-sessiond spare: %s\n", line.c_str());
  });
  auto fail = [&](const absl::Status& st) -> std::optional<sv1::StartRequest> {
    std::fprintf(stderr, "lazaret-sessiond: no spare sidecar for %s: %s\n",
                 req.workspace_dir().c_str(), std::string(st.message()).c_str());
    ReleaseSession(&s);
    SetNoticeSink(nullptr);
    return std::nullopt;
  };
  absl::StatusOr<RunArgs> args = ParseRunArgs({req.args().begin(), req.args().end()},
                                              req.workspace_dir());
  if (!args.ok()) return fail(args.status());
  if (struct stat st{}; stat(o.runtime_dir.c_str(), &st) != 0) {
    return fail(absl::FailedPreconditionError("the runtime directory is gone"));
  }
  if (absl::Status st = InstallContainersConf(o.runtime_dir).status(); !st.ok()) return fail(st);
  s.runtime_dir = o.runtime_dir;
  s.workspace_dir = req.workspace_dir();
  s.explicit_config = args->explicit_config;
  {
    absl::StatusOr<lazaret::config::v1::ResolvedProfile> profile =
        ResolveProfile(o.runtime_dir, s.workspace_dir, args->explicit_config, args->profile);
    if (!profile.ok()) return fail(profile.status());
    s.profile = *std::move(profile);
  }
  PlanInputs in;
  {
    absl::StatusOr<std::string> runc = FindRunc();
    if (!runc.ok()) return fail(runc.status());
    in.runc_path = *std::move(runc);
  }
  in.session_id = NewSessionId();
  in.escalation_certs_dir = escalation::ExpectedCertsDir(geteuid(), in.session_id);
  in.escalate_client_host = absl::StrCat(o.libexec_dir, "/lazaret-escalate");
  in.runtime_dir = o.runtime_dir;
  in.workspace_dir = s.workspace_dir;
  in.rootless = Rootless();
  {
    absl::StatusOr<SessionPlan> plan = PlanSpare(in, s.profile);
    if (!plan.ok()) return fail(plan.status());
    s.plan = *std::move(plan);
  }
  if (absl::Status st = PrepareSpare(&s); !st.ok()) return fail(st);
  sv1::WorkerReport ready;
  ready.set_spare_ready(s.plan.id);
  control->Send(ready);
  std::optional<sv1::StartRequest> adopting = AwaitAdoption(o.control_fd);
  if (!adopting.has_value()) {
    ReleaseSession(&s);
    SetNoticeSink(nullptr);
    return std::nullopt;
  }
  s.adopted = true;
  return adopting;
}

}  // namespace

int RunSessionWorker(const WorkerOptions& options) {
  // Before any thread exists: the signals the session takes synchronously
  // (gRPC's threads inherit the mask), and a control socket or attach
  // stream that breaks is an error return, not a death.
  BlockSessionSignals();
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<sv1::StartRequest> req = ReadStartRequest(options.control_fd);
  if (!req.ok()) {
    std::fprintf(stderr, "lazaret-sessiond --session-worker: %s\n",
                 std::string(req.status().message()).c_str());
    return 2;
  }
  Control control(options.control_fd);
  {
    auto trace = req->env().find("LAZARET_TRACE");
    SetTraceEnabled(trace != req->env().end() && trace->second == "1");
  }
  ApplyWorkerEnvironment(*req);
  LiveSession s;
  if (req->spare()) {
    std::optional<sv1::StartRequest> adopting = RunSpare(options, *req, &control, s);
    if (!adopting.has_value()) return 0;
    *req = *std::move(adopting);
    auto trace = req->env().find("LAZARET_TRACE");
    SetTraceEnabled(trace != req->env().end() && trace->second == "1");
  }
  // Until the session runs, Lazaret's lines go to the Start caller.
  SetNoticeSink([&control](const std::string& line) { control.Notice(line); });
  RunWorker(options, *req, &control, s);
  // Whatever a return before the start left of an adopted spare.
  ReleaseSession(&s);
  SetNoticeSink(nullptr);
  return 0;
}

}  // namespace lazaret::cli::session
