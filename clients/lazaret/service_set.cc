// `lazaret up`, `down` and `status`: start, stop and inspect the supervisor
// that runs the service set for this user.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/commands.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "services/common/service_environment.h"
#include "services/common/constants.h"

extern char** environ;

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::supervisor::v1;
using Clock = std::chrono::steady_clock;

constexpr auto kUpTimeout = std::chrono::seconds(30);
// The supervisor first lets live sessions end themselves (teardown and
// write-back in their own `lazaret run`), then stops the services.
constexpr auto kDownTimeout = std::chrono::seconds(90);

std::string SupervisorSocket(const Context& ctx) {
  return SocketPath(ctx.runtime_dir, kSupervisorSocketName);
}

absl::StatusOr<pb::GetStatusResponse> QueryStatus(const Context& ctx, int timeout_ms) {
  auto stub = pb::SupervisorService::NewStub(DialUnix(SupervisorSocket(ctx)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  pb::GetStatusResponse resp;
  grpc::Status s = stub->GetStatus(&cc, pb::GetStatusRequest(), &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

const char* StateName(pb::ServiceState s) {
  switch (s) {
    case pb::SERVICE_STATE_STARTING:
      return "starting";
    case pb::SERVICE_STATE_HEALTHY:
      return "healthy";
    case pb::SERVICE_STATE_UNHEALTHY:
      return "unhealthy";
    case pb::SERVICE_STATE_BACKOFF:
      return "restarting";
    case pb::SERVICE_STATE_STOPPED:
      return "stopped";
    default:
      return "unknown";
  }
}

void PrintStatusTable(const pb::GetStatusResponse& st) {
  std::printf("Lazaret is up: supervisor pid %d, runtime dir %s\n", st.supervisor_pid(),
              st.runtime_dir().c_str());
  std::printf("  %-14s %-11s %-8s %-9s %s\n", "SERVICE", "STATE", "PID", "RESTARTS",
              "CAPABILITIES");
  for (const auto& s : st.services()) {
    const std::string caps =
        s.capabilities().empty() ? "none" : absl::StrJoin(s.capabilities(), ",");
    std::printf("  %-14s %-11s %-8d %-9u %s\n", s.name().c_str(), StateName(s.state()), s.pid(),
                s.restarts(), caps.c_str());
  }
}

// True while some process holds the supervisor lock.
bool SupervisorLockHeld(const Context& ctx) {
  const std::string path = absl::StrCat(ctx.runtime_dir, "/", kSupervisorLockFile);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0;
  close(fd);
  return held;
}

std::string TailOfFile(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - max_lines);
  return absl::StrJoin(lines, "\n");
}

}  // namespace

int CmdUp(const Context& ctx, const std::vector<std::string>& args) {
  bool foreground = false;
  for (const auto& a : args) {
    if (a == "--foreground") {
      foreground = true;
    } else {
      std::fprintf(stderr, "lazaret up: unknown argument '%s'\nusage: lazaret up [--foreground]\n",
                   a.c_str());
      return 2;
    }
  }
  if (auto dir = EnsurePrivateDir(ctx.runtime_dir); !dir.ok()) {
    std::fprintf(stderr, "lazaret up: %s\n", std::string(dir.status().message()).c_str());
    return 1;
  }
  if (auto st = QueryStatus(ctx, 1000); st.ok()) {
    std::printf("Lazaret is already up; not starting a second service set.\n");
    PrintStatusTable(*st);
    return 0;
  }
  std::string binary = absl::StrCat(ctx.libexec_dir, "/lazaret-supervisord");
  if (access(binary.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "lazaret up: %s not found; build Lazaret (see README) or set "
                 "LAZARET_LIBEXEC_DIR\n",
                 binary.c_str());
    return 1;
  }
  std::string a1 = absl::StrCat("--runtime-dir=", ctx.runtime_dir);
  std::string a2 = absl::StrCat("--libexec-dir=", ctx.libexec_dir);
  char* argv[] = {binary.data(), a1.data(), a2.data(), nullptr};
  // Only the variables the services and the reaper need (service_environment.h),
  // never the whole environment of the shell that ran `lazaret up`.
  std::vector<std::string> env_storage = ServiceEnvironment(environ);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (foreground) {
    execve(binary.c_str(), argv, envp.data());
    std::perror("lazaret up: execv");
    return 1;
  }

  const std::string log_path = absl::StrCat(ctx.runtime_dir, "/", kSupervisorLogFile);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::fprintf(stderr, "lazaret up: starting %s: %s\n", binary.c_str(), strerror(rc));
    return 1;
  }

  const auto deadline = Clock::now() + kUpTimeout;
  absl::StatusOr<pb::GetStatusResponse> st = absl::UnavailableError("not yet");
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid, &wstatus, WNOHANG) == pid) {
      if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 3) {
        // Another `lazaret up` won the race; that set is the one that runs.
        std::printf("Lazaret is already up; not starting a second service set.\n");
        if (st = QueryStatus(ctx, 2000); st.ok()) PrintStatusTable(*st);
        return 0;
      }
      std::fprintf(stderr, "lazaret up: the supervisor exited during startup. Its log (%s):\n%s\n",
                   log_path.c_str(), TailOfFile(log_path, 20).c_str());
      return 1;
    }
    st = QueryStatus(ctx, 1000);
    if (st.ok() && st->all_healthy()) {
      PrintStatusTable(*st);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "lazaret up: not every service became healthy within %lld s.\n",
               static_cast<long long>(kUpTimeout.count()));
  if (st.ok()) PrintStatusTable(*st);
  std::fprintf(stderr, "Supervisor log (%s):\n%s\n", log_path.c_str(),
               TailOfFile(log_path, 20).c_str());
  return 1;
}

int CmdDown(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret down: unexpected argument '%s'\nusage: lazaret down\n",
                 args[0].c_str());
    return 2;
  }
  grpc::Status s;
  {
    // The channel closes at the end of this scope, so the supervisor's
    // server is not left waiting on our idle connection while it stops.
    auto stub = pb::SupervisorService::NewStub(DialUnix(SupervisorSocket(ctx)));
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    pb::ShutdownResponse resp;
    s = stub->Shutdown(&cc, pb::ShutdownRequest(), &resp);
  }
  if (!s.ok()) {
    if (!SupervisorLockHeld(ctx)) {
      std::printf("Lazaret is not running.\n");
      return 0;
    }
    std::fprintf(stderr,
                 "lazaret down: the supervisor holds its lock but does not answer on %s "
                 "(%s); see %s/%s\n",
                 SupervisorSocket(ctx).c_str(), s.error_message().c_str(), ctx.runtime_dir.c_str(),
                 kSupervisorLogFile);
    return 1;
  }
  const auto deadline = Clock::now() + kDownTimeout;
  while (SupervisorLockHeld(ctx)) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "lazaret down: the supervisor is still stopping after %lld s\n",
                   static_cast<long long>(kDownTimeout.count()));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("Lazaret is down.\n");
  return 0;
}

int CmdStatus(const Context& ctx, const std::vector<std::string>& args) {
  bool json = false;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "lazaret status: unknown argument '%s'\nusage: lazaret status [--json]\n",
                   a.c_str());
      return 2;
    }
  }
  absl::StatusOr<pb::GetStatusResponse> st = QueryStatus(ctx, 2000);
  if (!st.ok()) {
    if (json) {
      std::printf("{\"running\":false}\n");
    } else {
      std::printf("Lazaret is not running (no supervisor on %s). Start it with: lazaret up\n",
                  SupervisorSocket(ctx).c_str());
    }
    return 3;
  }
  if (json) {
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    std::string out;
    if (!google::protobuf::util::MessageToJsonString(*st, &out, o).ok()) return 1;
    std::printf("%s\n", out.c_str());
  } else {
    PrintStatusTable(*st);
  }
  return st->all_healthy() ? 0 : 1;
}

}  // namespace lazaret::cli
