// AttachService (protos/lazaret/session/v1/session.proto) on a session's
// attach socket, <session dir>/attach.sock: each Attach call is one
// attached terminal of the session's hub (attach_hub.h). The first message
// must be the hello; the call then carries the client's input to the hub
// and the client's queue to the client until the session ends (its exit is
// the last message), the client goes, or it falls too far behind.
//
// Runs in the session worker (lazaret-sessiond --session-worker, as the
// user), on gRPC's threads. Only connections of the worker's own uid are
// accepted (GrpcUnixServer's peer check); the session directory is 0700.
// What a client sends is bounded by the server's message limit and checked
// by the hub.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_SERVICE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_SERVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session/attach_frames.h"
#include "services/sessiond/session/attach_hub.h"

namespace lazaret::cli::session {

// The attach socket's name in the session directory (the service catalog's).
inline constexpr const auto& kAttachSocketName = ::lazaret::kAttachSocketName;

// One attached client's connection, whatever carries it (a gRPC call or a
// framed socket, attach_frames.h).
class AttachConnection {
 public:
  virtual ~AttachConnection() = default;
  virtual bool Read(lazaret::session::v1::AttachInput* in) = 0;
  virtual bool Write(const lazaret::session::v1::AttachOutput& out) = 0;
  // Makes a Read blocked on this connection return false.
  virtual void Cancel() = 0;
  // Where the hub may write without the writer (null: only through it).
  virtual AttachHub::DirectOutput* direct() { return nullptr; }
};

// Serves one connection: the hello, then the client's input to the hub
// (on a thread of its own) and the client's queue to the connection, until
// the session's exit was sent and the client closed, the client went, or
// it fell too far behind. False when the first message was not the hello.
bool ServeAttachment(AttachHub* hub, AttachConnection* connection);

class AttachServiceImpl final : public lazaret::session::v1::AttachService::Service {
 public:
  explicit AttachServiceImpl(AttachHub* hub) : hub_(hub) {}

  grpc::Status Attach(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<lazaret::session::v1::AttachOutput,
                                               lazaret::session::v1::AttachInput>* stream) override;

 private:
  AttachHub* const hub_;
};

// Serves the framed attach protocol (attach_frames.h) on `socket_path` for
// this process's uid, each connection an attachment of `hub`.
absl::StatusOr<std::unique_ptr<FramedListener>> ServeAttachFrames(const std::string& socket_path,
                                                                  AttachHub* hub);

// Binds `socket_path` and serves `service` there for this process's uid.
absl::StatusOr<std::unique_ptr<GrpcUnixServer>> ServeAttach(const std::string& socket_path,
                                                            AttachServiceImpl* service);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_SERVICE_H_
