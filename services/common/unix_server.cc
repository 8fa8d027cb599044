#include "services/common/unix_server.h"

#include <fcntl.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

namespace lazaret {
namespace {

absl::StatusOr<sockaddr_un> MakeAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path '", path, "' is longer than ", sizeof(addr.sun_path) - 1,
                     " bytes; choose a shorter runtime directory (LAZARET_RUNTIME_DIR)"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// True when some process accepts connections on the socket at `addr`.
bool SomeoneListens(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool live = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return live;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Bind(const std::string& path) {
  LAZ_ASSIGN_OR_RETURN(sockaddr_un addr, MakeAddress(path));
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          path,
          " exists and is not a socket; refusing to replace it (remove it yourself if it "
          "is yours)"));
    }
    if (SomeoneListens(addr)) {
      return absl::AlreadyExistsError(absl::StrCat("another process is already serving on ", path));
    }
    if (unlink(path.c_str()) != 0) {
      return ErrnoStatus(absl::StrCat("removing stale socket ", path), errno);
    }
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  const mode_t old_mask = umask(0177);
  const int rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  umask(old_mask);
  if (rc != 0) {
    close(fd);
    return ErrnoStatus(absl::StrCat("binding ", path), bind_errno);
  }
  if (listen(fd, 128) != 0) {
    const int e = errno;
    close(fd);
    unlink(path.c_str());
    return ErrnoStatus(absl::StrCat("listening on ", path), e);
  }
  if (lstat(path.c_str(), &st) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("inspecting ", path), e);
  }
  return std::unique_ptr<UnixListener>(new UnixListener(fd, path, st.st_ino));
}

UnixListener::~UnixListener() {
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino_) {
    unlink(path_.c_str());
  }
  close(fd_);
}

absl::StatusOr<std::unique_ptr<GrpcUnixServer>> GrpcUnixServer::Start(
    std::unique_ptr<UnixListener> listener, const std::vector<grpc::Service*>& services,
    PeerPolicy peers, int max_receive_message_bytes) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  for (grpc::Service* s : services) builder.RegisterService(s);
  builder.SetMaxReceiveMessageSize(max_receive_message_bytes);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return absl::InternalError("gRPC server failed to start");
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return ErrnoStatus("eventfd", errno);
  auto out = std::unique_ptr<GrpcUnixServer>(
      new GrpcUnixServer(std::move(listener), std::move(server), peers, wake));
  out->accept_thread_ = std::thread([raw = out.get()] { raw->AcceptLoop(); });
  return out;
}

GrpcUnixServer::GrpcUnixServer(std::unique_ptr<UnixListener> listener,
                               std::unique_ptr<grpc::Server> server, PeerPolicy peers, int wake_fd)
    : listener_(std::move(listener)),
      server_(std::move(server)),
      peers_(peers),
      wake_fd_(wake_fd) {}

GrpcUnixServer::~GrpcUnixServer() {
  Shutdown();
  close(wake_fd_);
}

void GrpcUnixServer::AcceptLoop() {
  pollfd fds[2] = {{listener_->fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (!stopped_.load()) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LAZ_LOG_ERROR << "poll on " << listener_->path() << ": " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int conn = accept4(listener_->fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      const int e = errno;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        // The pending connection stays queued and poll() would report it
        // again at once: without a pause this loop spins a core until a
        // descriptor frees up. Wait (stoppable) and retry; log once per run.
        if (!out_of_resources_) {
          LAZ_LOG_WARNING << "accept on " << listener_->path() << ": " << std::strerror(e)
                          << "; retrying every " << kAcceptBackoffMs << " ms";
        }
        out_of_resources_ = true;
        pollfd wake{wake_fd_, POLLIN, 0};
        if (poll(&wake, 1, kAcceptBackoffMs) > 0) return;
      }
      continue;
    }
    out_of_resources_ = false;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        cred.uid != peers_.allowed_uid) {
      ++refused_;
      LAZ_LOG_WARNING << "refused connection on " << listener_->path() << " from uid " << cred.uid
                      << " pid " << cred.pid << " (only uid " << peers_.allowed_uid
                      << " may connect)";
      close(conn);
      continue;
    }
    // gRPC takes ownership of the descriptor.
    grpc::AddInsecureChannelFromFd(server_.get(), conn);
  }
}

void GrpcUnixServer::Shutdown() {
  if (stopped_.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  listener_.reset();
}

absl::StatusOr<PeerProcess> PeerOfCall(const grpc::ServerContextBase& context) {
  // GrpcUnixServer hands each accepted descriptor to gRPC, which names the
  // peer "fd:<n>"; the descriptor stays open while a call on it runs.
  const std::string peer = context.peer();
  int fd = -1;
  if (peer.rfind("fd:", 0) != 0 || !absl::SimpleAtoi(peer.substr(3), &fd) || fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot tell which process made this call (peer '", peer, "')"));
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return ErrnoStatus("SO_PEERCRED of the caller", errno);
  }
  // SO_PEERPIDFD (Linux 6.5): a pidfd of the very process that connected,
  // taken by the kernel from the socket itself - no pid number in between
  // that could have been reused.
  int pidfd = -1;
  len = sizeof(pidfd);
  if (getsockopt(fd, SOL_SOCKET, kSoPeerPidfd, &pidfd, &len) != 0) {
    const int e = errno;
    if (e == ESRCH) return absl::FailedPreconditionError("the calling process has exited");
    return ErrnoStatus("SO_PEERPIDFD of the caller (needs Linux 6.5 or later)", e);
  }
  return PeerProcess{.uid = cred.uid, .pid = cred.pid, .pidfd = pidfd};
}

std::shared_ptr<grpc::Channel> DialUnix(const std::string& socket_path) {
  grpc::ChannelArguments args;
  // Local sockets: fail fast instead of gRPC's long reconnect backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(absl::StrCat("unix:", socket_path),
                                   grpc::InsecureChannelCredentials(), args);
}

absl::Status CheckHealth(const std::string& socket_path, int timeout_ms) {
  auto stub = grpc::health::v1::Health::NewStub(DialUnix(socket_path));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  if (resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(absl::StrCat(socket_path, " reports not serving"));
  }
  return absl::OkStatus();
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::Status ExplainServiceCall(const std::string& service, const std::string& socket,
                                const char* rpc, const grpc::Status& s,
                                std::chrono::seconds timeout) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(absl::StrCat(service, " does not answer on ", socket, " (",
                                                 s.error_message(),
                                                 "). Start Lazaret: lazaret up"));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(
          absl::StrCat(service, " did not answer ", rpc, " within ", timeout.count(),
                       " s (its log: lazaret status, then the supervisor's log)"));
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::UnimplementedError(absl::StrCat(
          service, " on ", socket, " does not implement ", rpc,
          " (a service set older than this lazaret? restart it: lazaret down; lazaret up)"));
    default:
      return absl::Status(FromGrpcStatus(s).code(),
                          absl::StrCat(service, " refused ", rpc, ": ", s.error_message()));
  }
}

}  // namespace lazaret
