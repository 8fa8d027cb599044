#include "services/supervisor/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "helper/mount/mounthelper.h"
#include "services/brokerd/brokerd.h"
#include "services/common/capabilities.h"
#include "services/common/constants.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_environment.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/configd/configd.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/supervisor/api.h"
#include "services/supervisor/lock_file.h"
#include "services/supervisor/reaper.h"
#include "services/supervisor/registry.h"
#include "services/supervisor/rootless_launch.h"
#include "services/supervisor/service_table.h"
#include "services/supervisor/session_reaping.h"

extern char** environ;

namespace lazaret::supervisor {
namespace {

template <size_t N>
std::vector<std::string> CapNames(const std::array<cap_value_t, N>& caps) {
  return caps::Names(absl::MakeConstSpan(caps.data(), caps.size()));
}

// The supervision loop. Returns when asked to stop: a termination signal,
// a Shutdown RPC (`wake_fd`), or a lost reaper.
void Supervise(int signal_fd, int wake_fd, int registry_wake_fd, ServiceTable& services,
               SessionRegistry& registry, SessionReaping& reaping) {
  services.StartAll();
  reaping.ReapLeftoverSessions();
  std::vector<pollfd> fds;
  std::vector<std::string> ids;
  while (true) {
    // Fixed slots first, then one pidfd per watched session owner.
    fds = {{signal_fd, POLLIN, 0},
           {wake_fd, POLLIN, 0},
           {registry_wake_fd, POLLIN, 0},
           {reaping.result_fd(), POLLIN, 0}};
    ids.clear();
    for (const auto& [id, pidfd] : registry.WatchedPidfds()) {
      fds.push_back({pidfd, POLLIN, 0});
      ids.push_back(id);
    }
    if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "poll: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      signalfd_siginfo si{};
      if (read(signal_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD) {
        LAZ_LOG_INFO << "received " << strsignal(si.ssi_signo) << ", shutting down";
        return;
      }
    }
    if (fds[2].revents != 0) {
      uint64_t n;
      (void)!read(registry_wake_fd, &n, sizeof(n));
    }
    for (size_t i = 4; i < fds.size(); ++i) {
      // The owner is gone, however it ended: reap now.
      if (fds[i].revents != 0) reaping.OwnerGone(ids[i - 4]);
    }
    if (fds[3].revents != 0 && !reaping.ReadResult()) {
      LAZ_LOG_ERROR << "the reaper is gone; without it no session can be reaped, so the "
                       "supervisor stops (live sessions end themselves)";
      return;
    }
    for (const OtherExit& e : services.Reap()) {
      if (e.pid == reaping.reaper_pid()) reaping.ReaperExited(e.wstatus);
    }
    if (reaping.reaper_lost()) {
      LAZ_LOG_ERROR << "the reaper exited; the supervisor stops (live sessions end themselves)";
      return;
    }
    services.Tick();
  }
}

absl::StatusOr<std::string> SelfExe() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ErrnoStatus("readlink /proc/self/exe", errno);
  return std::string(self, n);
}

// The `lazaret` CLI the reaper runs: beside the services (a build tree) or
// in the bin directory of the installation prefix.
absl::StatusOr<std::string> FindCli(const std::string& libexec) {
  for (const std::string& c :
       {absl::StrCat(libexec, "/lazaret"), absl::StrCat(libexec, "/../../bin/lazaret")}) {
    char resolved[4096];
    if (realpath(c.c_str(), resolved) != nullptr && access(resolved, X_OK) == 0) {
      return std::string(resolved);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "the lazaret CLI is neither in ", libexec, " nor in ", libexec,
      "/../../bin; the supervisor needs it to reap sessions. Install Lazaret completely"));
}

}  // namespace

std::vector<ManagedService> DefaultServiceSet(const std::string& libexec_dir) {
  auto bin = [&](const char* name) { return absl::StrCat(libexec_dir, "/lazaret-", name); };
  return {
      {"configd", bin("configd"), CapNames(configd::kCapabilities)},
      {"netpolicyd", bin("netpolicyd"), CapNames(netpolicyd::kCapabilities)},
      {"brokerd", bin("brokerd"), CapNames(brokerd::kCapabilities)},
      {"mount-helper", bin("mount-helper"), CapNames(mounthelper::kCapabilities)},
  };
}

absl::Status Run(const Options& options) {
  const std::string runtime_dir =
      options.runtime_dir.empty() ? DefaultRuntimeDir() : options.runtime_dir;
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  std::string libexec = options.libexec_dir;
  if (libexec.empty()) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return ErrnoStatus("readlink /proc/self/exe", errno);
    std::string exe(self, n);
    libexec = exe.substr(0, exe.rfind('/'));
  }
  std::vector<ManagedService> services = DefaultServiceSet(libexec);
  for (const auto& s : services) {
    if (access(s.binary.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("service binary ", s.binary,
                                              " is missing or not executable; build or install "
                                              "Lazaret completely"));
    }
  }

  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<LockFile> lock,
                       LockFile::Acquire(absl::StrCat(runtime_dir, "/", kSupervisorLockFile)));
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener,
                       UnixListener::Bind(SocketPath(runtime_dir, kSupervisorSocketName)));

  // The reaper, forked before the drop so it keeps what `lazaret up` had
  // (reaper.h). Without one, no session could be reaped: refuse to start.
  const std::vector<std::string> env = ServiceEnvironment(environ);
  LAZ_ASSIGN_OR_RETURN(std::string cli, FindCli(libexec));
  LAZ_ASSIGN_OR_RETURN(std::string self, SelfExe());
  LAZ_ASSIGN_OR_RETURN(ReaperProcess reaper, StartReaper(self, cli, runtime_dir, env));
  LAZ_LOG_INFO << "reaper started (pid " << reaper.pid << ", runs " << cli
               << " clean --session ID)";
  // Rootless, the mount helper runs below `podman unshare`, which must find
  // podman's namespace ready once no_new_privs is set (rootless_launch.h).
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> launcher, MountHelperLauncher(env));
  for (ManagedService& s : services) {
    if (s.name == "mount-helper") s.launcher = launcher;
  }

  caps::Declaration declaration{
      .required = {kCapabilities.begin(), kCapabilities.end()},
      .delegated = {kDelegatedCapabilities.begin(), kDelegatedCapabilities.end()}};
  LAZ_ASSIGN_OR_RETURN(caps::Report report, caps::DropToDeclared(declaration));
  LAZ_LOG_INFO << "capabilities held (delegation only): {"
               << absl::StrJoin(caps::Names(report.held), ",") << "}";

  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return ErrnoStatus("signalfd", errno);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return ErrnoStatus("eventfd", errno);
  int registry_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (registry_wake < 0) return ErrnoStatus("eventfd", errno);

  SessionRegistry registry(runtime_dir, registry_wake);
  ServiceTable table(runtime_dir, std::move(services), env);
  SessionReaping reaping(runtime_dir, &registry, reaper);
  SupervisorApi api(runtime_dir, &table, &registry, wake);
  LAZ_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcUnixServer> server,
      GrpcUnixServer::Start(std::move(listener), {&api}, PeerPolicy{.allowed_uid = geteuid()}));
  LAZ_LOG_INFO << "supervising " << runtime_dir;
  Supervise(sfd, wake, registry_wake, table, registry, reaping);
  reaping.StopSessions();
  table.StopAll(sfd);
  server->Shutdown();
  close(sfd);
  close(wake);
  close(registry_wake);
  LAZ_LOG_INFO << "all services stopped";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
