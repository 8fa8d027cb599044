// `lazaret run [OPTIONS] [PROFILE] [--] [CMD...]`: one agent session in a
// gVisor sandbox on the current directory (docs/operations.md,
// docs/architecture.md). Runs in the user's terminal, as the user, as a
// thin client: --help and usage errors are answered here, then
// lazaret-sessiond starts the session (a worker process of its own plans,
// starts, supervises and tears it down) and this terminal attaches to it
// (attach/attach_client.h) until its command exits - or until the
// developer detaches, when the session keeps running.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/attach/attach_client.h"
#include "clients/lazaret/attach/sessiond_client.h"
#include "clients/lazaret/commands.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session/run_args.h"

extern char** environ;

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::session::v1;

constexpr int kRunFailed = session::kRunFailed;

absl::StatusOr<std::string> CanonicalCwd() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ErrnoStatus("getcwd", errno);
  char resolved[PATH_MAX];
  if (realpath(buf, resolved) == nullptr) return ErrnoStatus("realpath of the cwd", errno);
  return std::string(resolved);
}

// The arguments as typed, except that --config FILE names the file by its
// canonical path: what configd resolves now is what lazaret-netpolicyd
// resolves again from the session record. A file that cannot be resolved
// is left as given for configd to report. Walks the options as
// ParseRunArgs does (they end at `--` or the first other argument).
std::vector<std::string> WithCanonicalConfig(std::vector<std::string> args,
                                             const std::string& cwd) {
  auto canonical = [&cwd](const std::string& file) {
    const std::string path = file[0] == '/' ? file : absl::StrCat(cwd, "/", file);
    char resolved[PATH_MAX];
    return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : file;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') break;
    if (a == "--config" && i + 1 < args.size() && !args[i + 1].empty()) {
      args[i + 1] = canonical(args[i + 1]);
      ++i;
    } else if (absl::StartsWith(a, "--config=") && a.size() > 9) {
      args[i] = absl::StrCat("--config=", canonical(a.substr(9)));
    } else if (a == "--branch" || a == "--approver" || a == "-p" || a == "--publish") {
      ++i;  // its value
    }
  }
  return args;
}

// Every variable of this process's environment: the session takes from it
// only what it may (env:VAR of the profile, TERM, NO_COLOR, the host CA
// variables; services/sessiond/session/env.h).
void CopyEnvironment(pb::StartRequest* req) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    (*req->mutable_env())[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
}

// What Start ended with.
struct StartOutcome {
  int exit_code = 0;  // when there is nothing to attach to
  bool attach = false;
  pb::Started started;
};

// Start, its progress on stderr, the plan on stdout; a SIGINT, SIGTERM or
// SIGHUP meanwhile cancels it (sessiond then stops what it had started)
// and exits 128+signal, as the runner always did.
StartOutcome StartSession(const Context& ctx, const pb::StartRequest& req) {
  StartOutcome outcome;
  int done[2];
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, s);
  const int sigfd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0 || pipe2(done, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "lazaret run: %s\n", std::strerror(errno));
    outcome.exit_code = kRunFailed;
    return outcome;
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  bool answered = false;
  absl::Status status;
  std::thread starter([&] {
    status = client.Start(req, [&](const pb::StartEvent& e) {
      switch (e.event_case()) {
        case pb::StartEvent::kNotice:
          std::fprintf(stderr, "%s\n", e.notice().c_str());
          break;
        case pb::StartEvent::kStarted:
          answered = true;
          outcome.attach = true;
          outcome.started = e.started();
          break;
        case pb::StartEvent::kPlan:
          answered = true;
          std::fputs(e.plan().c_str(), stdout);
          std::fflush(stdout);
          outcome.exit_code = 0;
          break;
        case pb::StartEvent::kFailed:
          answered = true;
          std::fprintf(stderr, "lazaret run: %s\n", e.failed().message().c_str());
          outcome.exit_code = e.failed().exit_code() != 0 ? e.failed().exit_code() : kRunFailed;
          break;
        case pb::StartEvent::EVENT_NOT_SET:
          break;
      }
    });
    close(done[1]);
  });
  int stop_signal = 0;
  while (true) {
    pollfd fds[2] = {{sigfd, POLLIN, 0}, {done[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    signalfd_siginfo si{};
    while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
      if (stop_signal != 0) continue;
      stop_signal = static_cast<int>(si.ssi_signo);
      client.Cancel();
    }
  }
  starter.join();
  close(done[0]);
  close(sigfd);
  if (stop_signal != 0) {
    // Interrupted: sessiond stops what it had started; a session that
    // started meanwhile is stopped here. 128+signal, as ever.
    if (outcome.attach) (void)client.Stop(outcome.started.session_id(), /*wait=*/true);
    outcome.attach = false;
    outcome.exit_code = 128 + stop_signal;
    return outcome;
  }
  if (!answered) {
    std::string why = status.ok() ? "lazaret-sessiond ended the start without an answer (its log: "
                                    "lazaret status)"
                                  : std::string(status.message());
    // Without sessiond nothing starts; without the supervisor too, that
    // is the first thing to say (no sandbox runs without a supervisor that
    // would reap it).
    const std::string supervisor = ServiceSocketPath(ctx.runtime_dir, kSupervisorService);
    if (absl::IsUnavailable(status) && !CheckHealth(supervisor, 1000).ok()) {
      why = absl::StrCat("refusing to start: the supervisor does not answer on ", supervisor,
                         ", nor lazaret-sessiond on ", attach::SessiondSocket(ctx.runtime_dir),
                         ". Start Lazaret; run: lazaret up");
    }
    std::fprintf(stderr, "lazaret run: %s\n", why.c_str());
    outcome.exit_code = kRunFailed;
  }
  return outcome;
}

}  // namespace

int CmdRun(const Context& ctx, const std::vector<std::string>& args) {
  // Before any thread exists (gRPC creates some on the first call).
  attach::BlockAttachSignals();

  absl::StatusOr<std::string> cwd = CanonicalCwd();
  if (!cwd.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n", std::string(cwd.status().message()).c_str());
    return kRunFailed;
  }
  absl::StatusOr<session::RunArgs> parsed = session::ParseRunArgs(args, *cwd);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n%s", std::string(parsed.status().message()).c_str(),
                 session::kRunUsage);
    return kRunFailed;
  }
  if (parsed->help) {
    std::printf("%s", session::kRunUsage);
    return 0;
  }
  pb::StartRequest req;
  req.set_workspace_dir(*cwd);
  for (const std::string& a : WithCanonicalConfig(args, *cwd)) req.add_args(a);
  CopyEnvironment(&req);
  const bool tty = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
  if (tty) {
    // A terminal that does not tell its size (0x0: a bare pty, some serial
    // lines) gets the size a terminal starts with.
    winsize ws{};
    if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) {
      if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) ws = winsize{};
    }
    req.mutable_terminal()->set_rows(ws.ws_row != 0 && ws.ws_col != 0 ? ws.ws_row : 24);
    req.mutable_terminal()->set_cols(ws.ws_row != 0 && ws.ws_col != 0 ? ws.ws_col : 80);
  }
  StartOutcome started = StartSession(ctx, req);
  if (!started.attach) return started.exit_code;

  attach::AttachOptions o;
  o.program = "lazaret run";
  o.session_id = started.started.session_id();
  o.attach_socket = started.started.attach_socket();
  o.runtime_dir = ctx.runtime_dir;
  o.tty_session = tty;
  o.take_input = true;
  o.replay = false;
  o.inline_approver = parsed->approver != "remote";
  return attach::RunAttached(o);
}

}  // namespace lazaret::cli
