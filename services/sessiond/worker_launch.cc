#include "services/sessiond/worker_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

namespace lazaret::sessiond {
namespace {

// Room for one largest packet in flight; the kernel clamps it to its
// limit (net.core.wmem_max), which bounds the request sessiond accepts.
constexpr int kSocketBufferBytes = static_cast<int>(kMaxControlPacketBytes);

void CloseIfOpen(int fd) {
  if (fd >= 0) close(fd);
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::vector<std::string> WorkerArgv(const WorkerCommand& command) {
  return {command.program, "--session-worker", absl::StrCat("--runtime-dir=", command.runtime_dir),
          absl::StrCat("--libexec-dir=", command.libexec_dir)};
}

absl::StatusOr<LaunchedWorker> LaunchWorker(const WorkerCommand& command,
                                            const std::string& request) {
  if (request.size() > kMaxControlPacketBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the start request has ", request.size(),
                                                   " bytes, more than the control socket's ",
                                                   kMaxControlPacketBytes));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return ErrnoStatus("socketpair for a session worker", errno);
  }
  for (int fd : sv) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  }
  cli::ChildSpec spec;
  spec.program = command.program;
  spec.argv = WorkerArgv(command);
  spec.stdin_fd = cli::ChildStdio::DevNull();
  spec.extra_fds = {{kWorkerControlFd, sv[1]}};
  // Its own session: no terminal of sessiond's reaches it, and the pty it
  // creates becomes its sandbox's controlling terminal.
  spec.group = cli::ChildGroup::kOwnSession;
  spec.die_with_parent = true;
  spec.death_signal = SIGTERM;
  absl::StatusOr<cli::PreparedChild> prepared = cli::PreparedChild::Create(std::move(spec));
  if (!prepared.ok()) {
    close(sv[0]);
    close(sv[1]);
    return prepared.status();
  }
  absl::StatusOr<pid_t> pid = cli::Spawn(*prepared);
  close(sv[1]);
  if (!pid.ok()) {
    close(sv[0]);
    return pid.status();
  }
  LaunchedWorker w;
  w.pid = *pid;
  w.control_fd = sv[0];
  // Only this process reaps the worker, so its pid cannot be reused before
  // the pidfd refers to it.
  w.pidfd = static_cast<int>(syscall(SYS_pidfd_open, w.pid, 0));
  if (w.pidfd < 0) {
    const int err = errno;
    KillAndReap(w.pid);
    close(w.control_fd);
    return ErrnoStatus("pidfd_open of the session worker", err);
  }
  if (absl::Status s = SendPacket(w.control_fd, request); !s.ok()) {
    KillAndReap(w.pid);
    CloseIfOpen(w.pidfd);
    close(w.control_fd);
    return absl::InternalError(
        absl::StrCat("could not hand the session worker its start request: ", s.message()));
  }
  const int flags = fcntl(w.control_fd, F_GETFL);
  if (flags < 0 || fcntl(w.control_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int err = errno;
    KillAndReap(w.pid);
    close(w.pidfd);
    close(w.control_fd);
    return ErrnoStatus("making the worker's control socket non-blocking", err);
  }
  return w;
}

absl::StatusOr<std::optional<session::v1::WorkerReport>> ReadReport(int fd) {
  // One buffer per reading thread: a packet may be up to 1 MiB.
  thread_local std::string buf(kMaxControlPacketBytes + 1, '\0');
  ssize_t n;
  do {
    n = recv(fd, buf.data(), buf.size(), MSG_TRUNC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    if (errno == ECONNRESET) return absl::OutOfRangeError("the session worker's socket closed");
    return ErrnoStatus("reading the session worker's report", errno);
  }
  if (n == 0) return absl::OutOfRangeError("the session worker's socket closed");
  if (static_cast<size_t>(n) > kMaxControlPacketBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a session worker report of ", n, " bytes exceeds the limit of ", kMaxControlPacketBytes));
  }
  session::v1::WorkerReport report;
  if (!report.ParseFromArray(buf.data(), static_cast<int>(n))) {
    return absl::InvalidArgumentError("a session worker report does not parse as a WorkerReport");
  }
  return report;
}

absl::Status SendPacket(int fd, const std::string& bytes) {
  if (bytes.size() > kMaxControlPacketBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a packet of ", bytes.size(),
                                                   " bytes exceeds the control socket's limit of ",
                                                   kMaxControlPacketBytes));
  }
  ssize_t n;
  do {
    n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus("sending on the session worker's control socket", errno);
  if (static_cast<size_t>(n) != bytes.size()) {
    return absl::InternalError("a control packet was sent only in part");
  }
  return absl::OkStatus();
}

}  // namespace lazaret::sessiond
