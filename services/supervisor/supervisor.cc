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
#include "services/common/capabilities.h"
#include "services/common/constants.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/service_environment.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/supervisor/api.h"
#include "services/supervisor/launcher.h"
#include "services/supervisor/lock_file.h"
#include "services/supervisor/registry.h"
#include "services/supervisor/rootless_launch.h"
#include "services/supervisor/service_table.h"
#include "services/supervisor/session_reaping.h"

extern char** environ;

namespace lazaret::supervisor {
namespace {

// SessionService.Reap: sessiond bounds one reap at 180 s itself.
constexpr std::chrono::seconds kReapCallTimeout{200};
// How long the launcher may take to end sessiond and exit at shutdown.
constexpr std::chrono::milliseconds kLauncherFinishTimeout{10000};

// The supervision loop. Returns when asked to stop: a termination signal,
// a Shutdown RPC (`wake_fd`), or a lost launcher.
void Supervise(int signal_fd, int wake_fd, int registry_wake_fd, ServiceTable& services,
               const LauncherClient& launcher, SessionRegistry& registry,
               SessionReaping& reaping) {
  services.StartAll();
  reaping.ReapLeftoverSessions();
  std::vector<pollfd> fds;
  std::vector<std::string> ids;
  while (true) {
    // Fixed slots first, then one pidfd per watched session owner.
    fds = {{signal_fd, POLLIN, 0},
           {wake_fd, POLLIN, 0},
           {registry_wake_fd, POLLIN, 0},
           {launcher.report_fd(), POLLIN, 0}};
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
    if (fds[3].revents != 0 && !services.ReadLauncherReport()) {
      LAZ_LOG_ERROR << "the launcher is gone, and lazaret-sessiond with it; without it no "
                       "session can run or be reaped, so the supervisor stops";
      return;
    }
    for (const OtherExit& e : services.Reap()) {
      if (e.pid == launcher.pid()) {
        LAZ_LOG_ERROR << "the launcher (pid " << e.pid << ") " << DescribeExit(e.wstatus)
                      << "; lazaret-sessiond ends with it, so the supervisor stops";
        return;
      }
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

}  // namespace

std::vector<ManagedService> DefaultServiceSet(const std::string& libexec_dir) {
  std::vector<ManagedService> set;
  for (const ServiceEntry* s : kServiceCatalog) {
    if (s == &kSupervisorService) continue;
    set.push_back({.name = std::string(s->name),
                   .binary = absl::StrCat(libexec_dir, "/", s->binary),
                   .capabilities = caps::Names(s->capabilities),
                   .via_launcher = s == &kSessiondService});
  }
  return set;
}

absl::Status Run(const Options& options) {
  const std::string runtime_dir =
      options.runtime_dir.empty() ? DefaultRuntimeDir() : options.runtime_dir;
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  LAZ_ASSIGN_OR_RETURN(const std::string self, SelfExe());
  const std::string libexec =
      options.libexec_dir.empty() ? self.substr(0, self.rfind('/')) : options.libexec_dir;
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
                       UnixListener::Bind(ServiceSocketPath(runtime_dir, kSupervisorService)));

  // The launcher, forked before the drop so it keeps what `lazaret up` had
  // (launcher.h). Without one, sessiond could not run: refuse to start.
  const std::vector<std::string> env = ServiceEnvironment(environ);
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<LauncherClient> launcher,
                       StartLauncher(self, runtime_dir, libexec, env));
  LAZ_LOG_INFO << "launcher started (pid " << launcher->pid() << ", starts "
               << kSessiondService.binary << ")";
  // Rootless, the mount helper runs below `podman unshare`, which must find
  // podman's namespace ready once no_new_privs is set (rootless_launch.h).
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> podman_unshare, MountHelperLauncher(env));
  for (ManagedService& s : services) {
    if (s.name == kMountHelperService.name) s.launcher = podman_unshare;
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

  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<ServiceTable> table,
                       ServiceTable::Create(runtime_dir, std::move(services), env, launcher.get()));
  SessionRegistry registry(runtime_dir, registry_wake);
  SessionReaping reaping(
      runtime_dir, &registry,
      SessiondReaper(ServiceSocketPath(runtime_dir, kSessiondService), kReapCallTimeout));
  SupervisorApi api(runtime_dir, table.get(), &registry, wake);
  LAZ_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcUnixServer> server,
      GrpcUnixServer::Start(std::move(listener), {&api}, PeerPolicy{.allowed_uid = geteuid()}));
  LAZ_LOG_INFO << "supervising " << runtime_dir;
  Supervise(sfd, wake, registry_wake, *table, *launcher, registry, reaping);
  // The sessions first (their workers end them, sessiond reaps what dies),
  // then the services, sessiond among them, then the launcher.
  reaping.StopSessions();
  table->StopAll(sfd);
  launcher->Finish(kLauncherFinishTimeout);
  server->Shutdown();
  close(sfd);
  close(wake);
  close(registry_wake);
  LAZ_LOG_INFO << "all services stopped";
  return absl::OkStatus();
}

}  // namespace lazaret::supervisor
