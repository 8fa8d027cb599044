#include "services/sessiond/session/attach_service.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

// After the session's exit was sent: how long the client has to close its
// side before the call is cancelled.
constexpr auto kCloseGrace = std::chrono::seconds(2);

}  // namespace

grpc::Status AttachServiceImpl::Attach(
    grpc::ServerContext* context, grpc::ServerReaderWriter<sv1::AttachOutput, sv1::AttachInput>* stream) {
  sv1::AttachInput first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (!first.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of Attach must be the hello (AttachHello)");
  }
  std::shared_ptr<AttachHub::Client> client = hub_->Attach(first.hello());
  std::atomic<bool> reader_done{false};
  // The client's input, on a thread of its own: the output below may wait
  // on the client's reading while its keys keep coming.
  std::thread reader([&] {
    sv1::AttachInput in;
    while (stream->Read(&in)) hub_->Input(client, in);
    reader_done = true;
    hub_->Detach(client);  // ends the loop below
  });
  sv1::AttachOutput out;
  bool sent_exit = false;
  while (client->Next(&out)) {
    const bool is_exit = out.has_exit();
    if (!stream->Write(out)) break;
    sent_exit = is_exit;
  }
  if (sent_exit) {
    const auto deadline = std::chrono::steady_clock::now() + kCloseGrace;
    while (!reader_done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Gone, detached as too slow, or ended without closing: Read returns.
  if (!reader_done) context->TryCancel();
  reader.join();
  hub_->Detach(client);
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<GrpcUnixServer>> ServeAttach(const std::string& socket_path,
                                                            AttachServiceImpl* service) {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Bind(socket_path));
  return GrpcUnixServer::Start(std::move(listener), {service}, PeerPolicy{getuid()});
}

}  // namespace lazaret::cli::session
