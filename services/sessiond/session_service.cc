#include "services/sessiond/session_service.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/common/log.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/sessiond/spare.h"
#include "services/spawn/spawn.h"

namespace lazaret::sessiond {
namespace {

namespace pb = ::lazaret::session::v1;

constexpr size_t kMaxArgs = 4096;
constexpr size_t kMaxEnvEntries = 1024;
constexpr size_t kMaxEnvNameBytes = 256;
constexpr uint32_t kMaxTerminalSide = 65535;  // struct winsize holds unsigned short
// Lazaret's exit code for its own failures (`lazaret run`'s kRunFailed).
constexpr int kLazaretFailed = 125;
// How often a waiting handler looks whether its caller went away.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(200);
// What a reap child may print before the rest is dropped.
constexpr size_t kMaxReapOutputBytes = 256 << 10;

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

bool IsEnvName(const std::string& name) {
  if (name.empty() || name.size() > kMaxEnvNameBytes) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool EndsStart(const pb::StartEvent& e) {
  return e.has_started() || e.has_failed() || e.event_case() == pb::StartEvent::kPlan;
}

pb::StartEvent FailedEvent(int exit_code, std::string message) {
  pb::StartEvent e;
  e.mutable_failed()->set_exit_code(exit_code);
  e.mutable_failed()->set_message(std::move(message));
  return e;
}

std::string DescribeExit(int wait_status) {
  if (wait_status < 0) return "ended";
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

// Kills the reap child's whole group (it leads one) and waits for it.
void KillGroupAndReap(pid_t pid) {
  kill(-pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

struct ReapRun {
  int exit_code = -1;  // -1: killed at the deadline or on cancellation
  bool cancelled = false;
  std::vector<std::string> lines;
};

// Runs `program --reap-session=ID --runtime-dir=DIR` in its own process
// group, so that a reap stuck in podman or git cannot hold this handler
// past `deadline`: then the group is killed.
absl::StatusOr<ReapRun> RunReapChild(const std::string& program, const std::string& runtime_dir,
                                     const std::string& id, absl::Time deadline,
                                     const grpc::ServerContext& context) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe for the reap", errno);
  cli::ChildSpec spec;
  spec.program = program;
  spec.argv = {program, absl::StrCat("--reap-session=", id),
               absl::StrCat("--runtime-dir=", runtime_dir)};
  spec.stdin_fd = cli::ChildStdio::DevNull();
  spec.stdout_fd = cli::ChildStdio::Fd(out[1]);
  spec.group = cli::ChildGroup::kOwnGroup;
  // This handler's thread waits for it; should sessiond die meanwhile, the
  // next reap does it again.
  spec.die_with_parent = true;
  absl::StatusOr<cli::PreparedChild> prepared = cli::PreparedChild::Create(std::move(spec));
  absl::StatusOr<pid_t> pid =
      prepared.ok() ? cli::Spawn(*prepared) : absl::StatusOr<pid_t>(prepared.status());
  close(out[1]);
  if (!pid.ok()) {
    close(out[0]);
    return pid.status();
  }
  ReapRun run;
  std::string text;
  bool eof = false;
  for (;;) {
    if (context.IsCancelled()) {
      run.cancelled = true;
      break;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) break;
    if (eof) {
      int st = 0;
      const pid_t r = waitpid(*pid, &st, WNOHANG);
      if (r == *pid) {
        run.exit_code = cli::ExitCodeOf(st);
        close(out[0]);
        for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
          run.lines.emplace_back(line);
        }
        return run;
      }
      absl::SleepFor(absl::Milliseconds(20));
      continue;
    }
    pollfd p{out[0], POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min(absl::ToInt64Milliseconds(deadline - now) + 1,
                                                  absl::ToInt64Milliseconds(kCancelPoll)));
    if (poll(&p, 1, wait_ms) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof(buf));
    if (n > 0) {
      if (text.size() < kMaxReapOutputBytes) text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      eof = true;
    }
  }
  close(out[0]);
  KillGroupAndReap(*pid);
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    run.lines.emplace_back(line);
  }
  return run;
}

}  // namespace

absl::Status CheckStartRequest(const pb::StartRequest& r) {
  if (r.spare()) {
    return absl::InvalidArgumentError(
        "spare is set only by lazaret-sessiond for its own workers; leave it unset");
  }
  if (r.ByteSizeLong() > kMaxStartRequestBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the start request has ", r.ByteSizeLong(), " bytes; at most ",
                     kMaxStartRequestBytes, " are accepted (fewer arguments or environment)"));
  }
  const std::string& ws = r.workspace_dir();
  if (ws.empty() || ws[0] != '/' || ws.size() >= PATH_MAX || HasNul(ws)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workspace_dir '", ws, "' is not an absolute path; pass the canonical current directory"));
  }
  char resolved[PATH_MAX];
  if (realpath(ws.c_str(), resolved) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("workspace_dir ", ws, " cannot be resolved: ", strerror(errno)));
  }
  if (ws != resolved) {
    return absl::InvalidArgumentError(absl::StrCat("workspace_dir ", ws,
                                                   " is not canonical (it resolves to ", resolved,
                                                   "); pass the canonical current directory"));
  }
  struct stat st {};
  if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("workspace_dir ", ws, " is not a directory"));
  }
  if (static_cast<size_t>(r.args_size()) > kMaxArgs) {
    return absl::InvalidArgumentError(
        absl::StrCat("the start request has ", r.args_size(), " arguments; at most ", kMaxArgs));
  }
  for (const std::string& a : r.args()) {
    if (HasNul(a)) return absl::InvalidArgumentError("an argument contains a NUL byte");
  }
  if (r.env_size() > static_cast<int>(kMaxEnvEntries)) {
    return absl::InvalidArgumentError(absl::StrCat("the start request has ", r.env_size(),
                                                   " environment variables; at most ",
                                                   kMaxEnvEntries));
  }
  for (const auto& [name, value] : r.env()) {
    if (!IsEnvName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", absl::CEscape(name.substr(0, 64)), "' is not a variable name"));
    }
    if (HasNul(value)) {
      return absl::InvalidArgumentError(absl::StrCat("the value of ", name, " contains a NUL"));
    }
  }
  if (r.has_terminal()) {
    const auto& t = r.terminal();
    if (t.rows() == 0 || t.cols() == 0 || t.rows() > kMaxTerminalSide ||
        t.cols() > kMaxTerminalSide) {
      return absl::InvalidArgumentError(absl::StrCat("terminal size ", t.cols(), "x", t.rows(),
                                                     " is out of range (1 to ", kMaxTerminalSide,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

SessionServiceImpl::SessionServiceImpl(std::shared_ptr<WorkerTable> workers,
                                       std::string runtime_dir, std::string program,
                                       absl::Duration reap_timeout, bool spare_sidecars)
    : workers_(std::move(workers)),
      runtime_dir_(std::move(runtime_dir)),
      program_(std::move(program)),
      reap_timeout_(reap_timeout),
      spare_sidecars_(spare_sidecars) {}

grpc::Status SessionServiceImpl::Start(grpc::ServerContext* context,
                                       const pb::StartRequest* request,
                                       grpc::ServerWriter<pb::StartEvent>* writer) {
  if (absl::Status s = CheckStartRequest(*request); !s.ok()) return ToGrpcStatus(s);
  const std::string bytes = request->SerializeAsString();
  // A spare prepared for requests like this one takes it; otherwise, and
  // when the spare declines it, a new worker.
  const std::optional<std::string> spare_key = spare_sidecars_ ? SpareKey(*request) : std::nullopt;
  std::optional<WorkerKey> adopted;
  if (spare_key.has_value()) {
    adopted = workers_->AdoptSpare(*spare_key, bytes);
    if (!adopted.has_value()) workers_->EndSparesExcept(*spare_key);
  }
  absl::StatusOr<WorkerKey> key =
      adopted.has_value() ? absl::StatusOr<WorkerKey>(*adopted) : workers_->Launch(bytes);
  if (!key.ok()) {
    writer->Write(FailedEvent(kLazaretFailed,
                              absl::StrCat("lazaret-sessiond could not start a session worker: ",
                                           key.status().message())));
    return grpc::Status::OK;
  }
  // The caller is gone before its session started: nobody will attach, so
  // the worker ends what it began (the same clean end as a stop).
  auto abandon = [&](const char* why) {
    (void)workers_->Signal(*key, SIGTERM);
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        absl::StrCat(why, "; the session's start was stopped"));
  };
  for (;;) {
    WorkerTable::StartProgress p = workers_->TakeStartEvents(*key, absl::Now() + kCancelPoll);
    for (const pb::StartEvent& e : p.events) {
      if (!writer->Write(e)) return abandon("the caller went away");
      if (!EndsStart(e)) continue;
      // The session runs: a spare for the next one like it, prepared once
      // this one has ended.
      if (e.has_started() && spare_key.has_value()) {
        workers_->PrepareSpareAfterExit(*key, SpareRequest(*request).SerializeAsString(),
                                        *spare_key);
      }
      return grpc::Status::OK;
    }
    if (p.declined && adopted.has_value()) {
      adopted.reset();
      key = workers_->Launch(bytes);
      if (!key.ok()) {
        writer->Write(FailedEvent(kLazaretFailed,
                                  absl::StrCat("lazaret-sessiond could not start a session worker: ",
                                               key.status().message())));
        return grpc::Status::OK;
      }
      continue;
    }
    if (p.exited) {
      const int code = p.wait_status >= 0 && WIFEXITED(p.wait_status) && WEXITSTATUS(p.wait_status)
                           ? WEXITSTATUS(p.wait_status)
                           : kLazaretFailed;
      writer->Write(FailedEvent(
          code, absl::StrCat("the session worker ", DescribeExit(p.wait_status),
                             " before the session started (its output is in the service "
                             "set's log, supervisor.log in the runtime directory)")));
      return grpc::Status::OK;
    }
    if (context->IsCancelled()) return abandon("the caller cancelled");
  }
}

grpc::Status SessionServiceImpl::List(grpc::ServerContext*, const pb::ListRequest*,
                                      pb::ListResponse* response) {
  std::vector<pb::SessionInfo> sessions = workers_->List();
  std::sort(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.started_unix(), a.id()) < std::make_pair(b.started_unix(), b.id());
  });
  for (pb::SessionInfo& s : sessions) *response->add_sessions() = std::move(s);
  if (std::optional<pb::SpareInfo> spare = workers_->Spare(); spare.has_value()) {
    *response->add_spares() = *std::move(spare);
  }
  return grpc::Status::OK;
}

grpc::Status SessionServiceImpl::Stop(grpc::ServerContext* context, const pb::StopRequest* request,
                                      pb::StopResponse*) {
  const std::string& id = request->session_id();
  if (!IsValidSessionId(id)) {
    return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
        "'", absl::CEscape(id.substr(0, 64)), "' is not a session id (`lazaret ps` lists them)")));
  }
  std::optional<WorkerKey> key = workers_->FindLive(id);
  if (!key.has_value()) {
    return ToGrpcStatus(absl::NotFoundError(
        absl::StrCat("no running session ", id, " of this user; `lazaret ps` lists them")));
  }
  if (absl::Status s = workers_->Signal(*key, SIGTERM); !s.ok() && !absl::IsNotFound(s)) {
    return ToGrpcStatus(s);
  }
  LAZ_LOG_INFO << "stopping session " << id;
  if (!request->wait()) return grpc::Status::OK;
  while (!workers_->WaitExited(*key, absl::Now() + kCancelPoll)) {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          absl::StrCat("stopped waiting; session ", id, " is still ending"));
    }
  }
  return grpc::Status::OK;
}

grpc::Status SessionServiceImpl::Reap(grpc::ServerContext* context, const pb::ReapRequest* request,
                                      pb::ReapResponse* response) {
  const std::string& id = request->session_id();
  if (!IsValidSessionId(id)) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("'", absl::CEscape(id.substr(0, 64)), "' is not a session id")));
  }
  if (std::optional<WorkerKey> key = workers_->FindLive(id); key.has_value()) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("session ", id, " is running; end it with `lazaret stop ", id, "`")));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!reaping_.insert(id).second) {
      return ToGrpcStatus(
          absl::AbortedError(absl::StrCat("session ", id, " is being reaped already")));
    }
  }
  absl::StatusOr<ReapRun> run =
      RunReapChild(program_, runtime_dir_, id, absl::Now() + reap_timeout_, *context);
  {
    absl::MutexLock lock(&mu_);
    reaping_.erase(id);
  }
  if (!run.ok()) return ToGrpcStatus(run.status());
  for (std::string& line : run->lines) response->add_notices(std::move(line));
  const std::string said = absl::StrJoin(response->notices(), "\n");
  const std::string again = absl::StrCat("`lazaret clean --session ", id, "` tries again");
  if (run->cancelled) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        absl::StrCat("the reap of session ", id, " was cut short; ", again));
  }
  switch (run->exit_code) {
    case kReapExitReaped:
      LAZ_LOG_INFO << "reaped session " << id;
      return grpc::Status::OK;
    case kReapExitNothingLeft:
      return ToGrpcStatus(absl::NotFoundError(
          absl::StrCat("session ", id, " left nothing to reap (no directory, no container)")));
    case kReapExitOwnerAlive:
      return ToGrpcStatus(absl::FailedPreconditionError(
          absl::StrCat("session ", id, " belongs to a live process (its directory lock is held)")));
    case kReapExitLeftSomething:
      return ToGrpcStatus(absl::InternalError(absl::StrCat(
          "the reap of session ", id, " left something behind; ", again, ":\n", said)));
    case -1:
      return ToGrpcStatus(absl::DeadlineExceededError(
          absl::StrCat("the reap of session ", id, " took longer than ",
                       absl::FormatDuration(reap_timeout_), " and was killed; ", again)));
    default:
      return ToGrpcStatus(absl::InternalError(
          absl::StrCat("the reap of session ", id, " failed (exit ", run->exit_code, "): ", said)));
  }
}

}  // namespace lazaret::sessiond
