#include "services/brokerd/brokerd.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>

#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/brokerd/approver_service.h"
#include "services/brokerd/audit_log.h"
#include "services/brokerd/audit_reader.h"
#include "services/brokerd/network_approval_service.h"
#include "services/brokerd/request_flow.h"
#include "services/brokerd/session_manager.h"
#include "services/brokerd/tls/private_dir.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd {
namespace {

namespace sv = ::lazaret::supervisor::v1;

// Abort: the supervisor asks the session's `lazaret run` to end (SIGTERM
// through the pidfd it took at registration); its teardown then detaches
// the endpoint, and the registry's ENDED event does too if it cannot.
void StopSessionThroughSupervisor(const std::string& runtime_dir, const std::string& id) {
  auto stub = sv::SupervisorService::NewStub(grpc::CreateChannel(
      "unix:" + ServiceSocketPath(runtime_dir, kSupervisorService), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  sv::StopSessionRequest req;
  req.set_id(id);
  sv::StopSessionResponse resp;
  grpc::Status st = stub->StopSession(&ctx, req, &resp);
  if (!st.ok()) {
    LAZ_LOG_ERROR << "session " << id
                  << ": abort: the supervisor did not stop it: " << st.error_message();
  } else {
    LAZ_LOG_INFO << "session " << id << ": aborted by an approver (its lazaret run, pid "
                 << resp.pid() << ", was told to end)";
  }
}

// Everything the broker's handlers share; destroyed after they are.
struct Broker {
  std::optional<tls::CertsRoot> certs_root;
  std::unique_ptr<tls::CertificateAuthority> ca;
  std::unique_ptr<tls::TlsAcceptor> acceptor;
  std::unique_ptr<AuditLog> audit;
  std::unique_ptr<RequestBook> book;
  std::unique_ptr<SessionManager> sessions;
  std::unique_ptr<SessionWatcher> watcher;

  void Stop() {
    watcher.reset();
    if (sessions != nullptr) sessions->StopAll();
    if (book != nullptr) book->Close();
  }
};

absl::StatusOr<ServiceHandlers> MakeHandlers(const std::string& runtime_dir) {
  auto b = std::make_shared<Broker>();
  LAZ_ASSIGN_OR_RETURN(b->ca, tls::CertificateAuthority::Create());
  LAZ_ASSIGN_OR_RETURN(b->acceptor, tls::TlsAcceptor::Create(*b->ca));
  LAZ_ASSIGN_OR_RETURN(AuditLogOptions audit_options,
                       AuditLogOptionsFromEnv(std::getenv("LAZARET_AUDIT_MAX_BYTES"),
                                              std::getenv("LAZARET_AUDIT_FILES")));
  LAZ_ASSIGN_OR_RETURN(b->audit, AuditLog::Open(DefaultAuditPath(), audit_options));
  LAZ_LOG_INFO << "audit log " << b->audit->path() << ": at most " << audit_options.max_files
               << " files of " << audit_options.max_file_bytes << " bytes";
  LAZ_ASSIGN_OR_RETURN(tls::CertsRoot certs_root,
                       tls::CertsRoot::Claim(tls::kCertsRootParent, runtime_dir));
  b->certs_root.emplace(std::move(certs_root));
  LAZ_LOG_INFO << "certificate root " << b->certs_root->path();
  b->book = std::make_unique<RequestBook>(
      RequestBookOptions(), CheckEdit,
      [runtime_dir](const std::string& id) { StopSessionThroughSupervisor(runtime_dir, id); });
  BrokerParts parts;
  parts.ca = b->ca.get();
  parts.acceptor = b->acceptor.get();
  parts.book = b->book.get();
  parts.audit = b->audit.get();
  parts.certs_root = b->certs_root->path();
  b->sessions = std::make_unique<SessionManager>(runtime_dir, parts);
  SessionManager* sessions = b->sessions.get();
  b->watcher = WatchSessions(
      runtime_dir, SessionEvents{
                       .started = [sessions](const std::string& id) { sessions->OnStarted(id); },
                       .ended = [sessions](const std::string& id) { sessions->OnEnded(id); },
                   });
  ServiceHandlers h;
  auto approver = std::make_unique<ApproverService>(
      b->book.get(), [sessions] { return sessions->Views(); },
      [sessions](const approver::v1::ParseCommandRequest& req) {
        std::shared_ptr<LiveSession> live =
            req.session_id().empty() ? nullptr : sessions->Find(req.session_id());
        return ParseForApprover(req.command(), live == nullptr ? nullptr : &live->entries());
      },
      b->audit.get());
  approver->set_egress_log(NetpolicydEgressLog(runtime_dir));
  approver->set_request_log(EgressdRequestLog(runtime_dir));
  h.services.push_back(std::move(approver));
  h.services.push_back(std::make_unique<EndpointService>(sessions));
  // netpolicyd's questions about held names; their requests share the book
  // (and its per-session cap) with escalations.
  h.services.push_back(std::make_unique<NetworkApprovalService>(
      b->book.get(), ConfigdNetworkApprovalDeps(runtime_dir, b->audit.get())));
  h.on_shutdown = [b] { b->Stop(); };
  return h;
}

}  // namespace

ServiceSpec Spec() {
  return ServiceSpec{
      .name = std::string(kBrokerdService.name),
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers = MakeHandlers,
  };
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::brokerd
