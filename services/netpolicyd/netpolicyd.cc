#include "services/netpolicyd/netpolicyd.h"

#include <chrono>

#include "absl/strings/str_cat.h"

#include "services/common/status_util.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* resp) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *resp = *std::move(result);
  return grpc::Status::OK;
}

constexpr std::chrono::milliseconds kFollowPoll{250};

}  // namespace

grpc::Status NetPolicyServiceImpl::AttachSession(grpc::ServerContext*,
                                                 const pb::AttachSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  return Reply(registry_->Attach(req->session().id()), resp);
}

grpc::Status NetPolicyServiceImpl::ReloadSession(grpc::ServerContext*,
                                                 const pb::ReloadSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  return Reply(registry_->Reload(req->session().id()), resp);
}

grpc::Status NetPolicyServiceImpl::ChangeSession(grpc::ServerContext*,
                                                 const pb::ChangeSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Change(*req), resp);
}

grpc::Status NetPolicyServiceImpl::DetachSession(grpc::ServerContext*,
                                                 const pb::DetachSessionRequest* req,
                                                 pb::DetachSessionResponse*) {
  return ToGrpcStatus(registry_->Detach(req->session().id()));
}

grpc::Status NetPolicyServiceImpl::ListSessions(grpc::ServerContext*,
                                                const pb::ListSessionsRequest*,
                                                pb::ListSessionsResponse* resp) {
  for (const auto& session : registry_->List()) *resp->add_sessions() = session->Summary();
  return grpc::Status::OK;
}

grpc::Status NetPolicyServiceImpl::ShowPolicy(grpc::ServerContext*,
                                              const pb::ShowPolicyRequest* req,
                                              pb::SessionPolicy* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Show(), resp);
}

grpc::Status NetPolicyServiceImpl::TestDestination(grpc::ServerContext*,
                                                   const pb::TestDestinationRequest* req,
                                                   pb::TestDestinationResponse* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Test(*req), resp);
}

grpc::Status NetPolicyServiceImpl::WatchLog(grpc::ServerContext* ctx,
                                            const pb::WatchLogRequest* req,
                                            grpc::ServerWriter<pb::LogEntry>* writer) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) {
    // An ended session (or one of an earlier netpolicyd): its file. The id
    // was checked by Find, and the path is derived from it; `follow` ends
    // at the end of the file, as nothing will be added.
    if (!absl::IsNotFound(session.status()) || registry_->log_dir().empty()) {
      return ToGrpcStatus(session.status());
    }
    absl::StatusOr<std::vector<pb::LogEntry>> entries =
        ReadEgressLogFile(registry_->log_dir(), req->session().id());
    if (!entries.ok()) return ToGrpcStatus(entries.status());
    for (const auto& entry : *entries) {
      if (!writer->Write(entry)) return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }
  EgressLog& log = (*session)->log();
  uint64_t next = 0;
  for (const auto& entry : log.Read(&next, std::chrono::milliseconds(0))) {
    if (!writer->Write(entry)) return grpc::Status::OK;
  }
  if (!req->follow()) return grpc::Status::OK;
  while (!ctx->IsCancelled() && !log.closed()) {
    std::vector<pb::LogEntry> entries = log.Read(&next, kFollowPoll);
    for (const auto& entry : entries) {
      if (!writer->Write(entry)) return grpc::Status::OK;
    }
  }
  return grpc::Status::OK;
}

grpc::Status NetPolicyServiceImpl::ResolveUpstream(grpc::ServerContext*,
                                                   const pb::ResolveUpstreamRequest* req,
                                                   pb::ResolveUpstreamResponse* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->ResolveUpstream(req->name()), resp);
}

grpc::Status NetPolicyServiceImpl::AddPort(grpc::ServerContext*, const pb::PortRequest* req,
                                           pb::PortList* resp) {
  if (ports_ == nullptr) return ToGrpcStatus(absl::UnimplementedError("no inbound forwards here"));
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  const uint32_t sandbox_port =
      req->port().sandbox_port() != 0 ? req->port().sandbox_port() : req->port().host_port();
  if (sandbox_port == 0 || sandbox_port > 65535) {
    return ToGrpcStatus(absl::InvalidArgumentError("the sandbox port is not a port number"));
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    lazaret::netrouter::v1::InboundPort in;
    in.set_sandbox_port(sandbox_port);
    lazaret::netrouter::v1::InboundPorts out;
    grpc::Status st = (*session)->router().OpenInbound(&ctx, in, &out);
    if (!st.ok()) {
      return grpc::Status(st.error_code(),
                          absl::StrCat("the session's router did not open sandbox port ",
                                       sandbox_port, ": ", st.error_message()));
    }
  }
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> list =
      ports_->Add(req->session().id(), req->port());
  if (!list.ok()) return ToGrpcStatus(list.status());
  for (auto& p : *list) *resp->add_ports() = std::move(p);
  return grpc::Status::OK;
}

grpc::Status NetPolicyServiceImpl::RemovePort(grpc::ServerContext*, const pb::PortRequest* req,
                                              pb::PortList* resp) {
  if (ports_ == nullptr) return ToGrpcStatus(absl::UnimplementedError("no inbound forwards here"));
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  uint32_t sandbox_port = 0;
  bool unused = false;
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> list =
      ports_->Remove(req->session().id(), req->port().host_port(), &sandbox_port, &unused);
  if (!list.ok()) return ToGrpcStatus(list.status());
  if (unused) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    lazaret::netrouter::v1::InboundPort in;
    in.set_sandbox_port(sandbox_port);
    lazaret::netrouter::v1::InboundPorts out;
    // The host side is closed already: nothing reaches the router's socket.
    (void)(*session)->router().CloseInbound(&ctx, in, &out);
  }
  for (auto& p : *list) *resp->add_ports() = std::move(p);
  return grpc::Status::OK;
}

grpc::Status NetPolicyServiceImpl::ListPorts(grpc::ServerContext*, const pb::ListPortsRequest* req,
                                             pb::PortList* resp) {
  if (ports_ == nullptr) return ToGrpcStatus(absl::UnimplementedError("no inbound forwards here"));
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  for (auto& p : ports_->List(req->session().id())) *resp->add_ports() = std::move(p);
  return grpc::Status::OK;
}

ServiceSpec SpecWith(RegistryOptions options) {
  return ServiceSpec{
      .name = std::string(kNetPolicydService.name),
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers =
          [options](const std::string& runtime_dir) -> absl::StatusOr<ServiceHandlers> {
        absl::StatusOr<std::unique_ptr<InboundPorts>> made = InboundPorts::Create(runtime_dir);
        if (!made.ok()) return made.status();
        std::shared_ptr<InboundPorts> ports = *std::move(made);
        RegistryOptions with_ports = options;
        with_ports.on_detach = [ports](const std::string& id) { ports->CloseSession(id); };
        auto registry = std::make_shared<Registry>(runtime_dir, std::move(with_ports));
        registry->Start();
        ServiceHandlers h;
        h.services.push_back(std::make_unique<NetPolicyServiceImpl>(registry, ports));
        h.on_shutdown = [registry] { registry->Stop(); };
        return h;
      },
  };
}

ServiceSpec Spec() {
  RegistryOptions options;
  options.trace_sinks = true;
  options.session.log.dir = UserStateDir() + "/netlog";
  return SpecWith(std::move(options));
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netpolicyd
