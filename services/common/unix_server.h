// gRPC over a Unix socket with a per-connection SO_PEERCRED check. Runs in
// every service. gRPC never sees the listening socket: this class accepts
// each connection itself, checks the peer's uid against the owner's, and only
// then hands the descriptor to gRPC. A refused peer never reaches a handler.
#ifndef LAZARET_SERVICES_COMMON_UNIX_SERVER_H_
#define LAZARET_SERVICES_COMMON_UNIX_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret {

// A bound, listening Unix socket. Binding happens before capabilities are
// dropped; the socket is created with mode 0600.
class UnixListener {
 public:
  // Refuses when something other than a socket is at `path`, or when another
  // process is still accepting on it; removes a stale socket left by a crash.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Bind(const std::string& path);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  UnixListener(int fd, std::string path, ino_t ino) : fd_(fd), path_(std::move(path)), ino_(ino) {}
  int fd_;
  std::string path_;
  ino_t ino_;  // unlinked at destruction only if the path still names our socket
};

// Whose connections a server accepts.
struct PeerPolicy {
  uid_t allowed_uid;
};

// Requests are small; a bound keeps a misbehaving peer from ballooning us.
inline constexpr int kDefaultMaxReceiveMessageBytes = 4 << 20;

class GrpcUnixServer {
 public:
  // Starts serving. grpc.health.v1 and server reflection are always on.
  // `services` must outlive the server.
  static absl::StatusOr<std::unique_ptr<GrpcUnixServer>> Start(
      std::unique_ptr<UnixListener> listener, const std::vector<grpc::Service*>& services,
      PeerPolicy peers, int max_receive_message_bytes = kDefaultMaxReceiveMessageBytes);
  ~GrpcUnixServer();
  GrpcUnixServer(const GrpcUnixServer&) = delete;
  GrpcUnixServer& operator=(const GrpcUnixServer&) = delete;

  // Stops accepting, finishes in-flight calls (bounded), removes the socket.
  void Shutdown();

  uint64_t refused_connections() const { return refused_.load(); }

 private:
  GrpcUnixServer(std::unique_ptr<UnixListener> listener, std::unique_ptr<grpc::Server> server,
                 PeerPolicy peers, int wake_fd);
  void AcceptLoop();

  std::unique_ptr<UnixListener> listener_;
  std::unique_ptr<grpc::Server> server_;
  PeerPolicy peers_;
  int wake_fd_;
  // accept4 failing for want of descriptors or memory: the accept loop
  // waits this long before it tries again instead of spinning.
  static constexpr int kAcceptBackoffMs = 100;
  bool out_of_resources_ = false;  // accept thread only
  std::atomic<uint64_t> refused_{0};
  std::atomic<bool> stopped_{false};
  std::thread accept_thread_;
};

// SO_PEERPIDFD from <asm-generic/socket.h> (Linux 6.5); glibc 2.36 lacks it.
inline constexpr int kSoPeerPidfd = 77;

// The process at the other end of a call served by GrpcUnixServer.
struct PeerProcess {
  uid_t uid = 0;
  pid_t pid = 0;  // in this process's pid namespace
  int pidfd = -1;  // owned by the caller; refers to that process and no other
};

// Who made `context`'s call: the connection's SO_PEERCRED and a pidfd of
// the connecting process (SO_PEERPIDFD). Only for servers started with
// GrpcUnixServer; call it from inside the handler, while the call runs.
absl::StatusOr<PeerProcess> PeerOfCall(const grpc::ServerContextBase& context);

// A channel to a Lazaret service socket.
std::shared_ptr<grpc::Channel> DialUnix(const std::string& socket_path);

// grpc.health.v1 Check against `socket_path`; OK when SERVING.
absl::Status CheckHealth(const std::string& socket_path, int timeout_ms);

// The one place an absl::Status becomes a grpc::Status (and back).
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// What a client of a Lazaret service tells its user about a failed `rpc` to
// `service` ("lazaret-netpolicyd") on `socket`: not answering (start
// Lazaret), too slow (where its log is), not implemented (an older service
// set), or the service's own refusal with its code. OK stays OK.
absl::Status ExplainServiceCall(const std::string& service, const std::string& socket,
                                const char* rpc, const grpc::Status& status,
                                std::chrono::seconds timeout);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_UNIX_SERVER_H_
