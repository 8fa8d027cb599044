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

bool ServeAttachment(AttachHub* hub, AttachConnection* connection) {
  sv1::AttachInput first;
  if (!connection->Read(&first)) return true;
  if (!first.has_hello()) return false;
  std::shared_ptr<AttachHub::Client> client = hub->Attach(first.hello(), connection->direct());
  std::atomic<bool> reader_done{false};
  // The client's input, on a thread of its own: the output below may wait
  // on the client's reading while its keys keep coming.
  std::thread reader([&] {
    sv1::AttachInput in;
    while (connection->Read(&in)) hub->Input(client, in);
    reader_done = true;
    hub->Detach(client);  // ends the loop below
  });
  sv1::AttachOutput out;
  bool sent_exit = false;
  while (client->Next(&out)) {
    const bool is_exit = out.has_exit();
    if (!connection->Write(out)) break;
    sent_exit = is_exit;
  }
  if (sent_exit) {
    const auto deadline = std::chrono::steady_clock::now() + kCloseGrace;
    while (!reader_done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Gone, detached as too slow, or ended without closing: Read returns.
  if (!reader_done) connection->Cancel();
  reader.join();
  hub->Detach(client);
  return true;
}

grpc::Status AttachServiceImpl::Attach(
    grpc::ServerContext* context, grpc::ServerReaderWriter<sv1::AttachOutput, sv1::AttachInput>* stream) {
  class GrpcConnection final : public AttachConnection {
   public:
    GrpcConnection(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<sv1::AttachOutput, sv1::AttachInput>* stream)
        : context_(context), stream_(stream) {}
    bool Read(sv1::AttachInput* in) override { return stream_->Read(in); }
    bool Write(const sv1::AttachOutput& out) override { return stream_->Write(out); }
    void Cancel() override { context_->TryCancel(); }

   private:
    grpc::ServerContext* const context_;
    grpc::ServerReaderWriter<sv1::AttachOutput, sv1::AttachInput>* const stream_;
  };
  GrpcConnection connection(context, stream);
  if (!ServeAttachment(hub_, &connection)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of Attach must be the hello (AttachHello)");
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<FramedListener>> ServeAttachFrames(const std::string& socket_path,
                                                                  AttachHub* hub) {
  return FramedListener::Start(socket_path, getuid(), [hub](FramedChannel* channel) {
    class FramedConnection final : public AttachConnection, public AttachHub::DirectOutput {
     public:
      explicit FramedConnection(FramedChannel* channel) : channel_(channel) {}
      bool Read(sv1::AttachInput* in) override { return channel_->Read(in); }
      bool Write(const sv1::AttachOutput& out) override { return channel_->Write(out); }
      void Cancel() override { channel_->Shutdown(); }
      AttachHub::DirectOutput* direct() override { return this; }
      std::optional<size_t> TrySend(const sv1::AttachOutput& out) override {
        return channel_->TrySend(out);
      }
      bool FlushRest() override { return channel_->FlushRest(); }

     private:
      FramedChannel* const channel_;
    };
    FramedConnection connection(channel);
    (void)ServeAttachment(hub, &connection);
  });
}

absl::StatusOr<std::unique_ptr<GrpcUnixServer>> ServeAttach(const std::string& socket_path,
                                                            AttachServiceImpl* service) {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Bind(socket_path));
  return GrpcUnixServer::Start(std::move(listener), {service}, PeerPolicy{getuid()});
}

}  // namespace lazaret::cli::session
