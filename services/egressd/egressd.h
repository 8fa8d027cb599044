// lazaret-egressd: the egress proxy of the sessions whose profile names
// secrets or HTTP rules (docs/networking.md "The egress proxy"). A host
// service of the set, unprivileged; its API (EgressService, egress.proto)
// is for the session workers and `lazaret net log`, on its socket in the
// private runtime directory (owner uid only).
#ifndef LAZARET_SERVICES_EGRESSD_EGRESSD_H_
#define LAZARET_SERVICES_EGRESSD_EGRESSD_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "lazaret/egress/v1/egress.grpc.pb.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"
#include "services/egressd/sessions.h"

namespace lazaret::egressd {

// The capabilities this process keeps: none (service_catalog.h).
inline constexpr const auto& kCapabilities = kEgressdCapabilities;

class EgressServiceImpl final : public lazaret::egress::v1::EgressService::Service {
 public:
  explicit EgressServiceImpl(std::shared_ptr<SessionTable> sessions)
      : sessions_(std::move(sessions)) {}

  grpc::Status AttachSession(grpc::ServerContext* ctx,
                             const lazaret::egress::v1::AttachSessionRequest* req,
                             lazaret::egress::v1::AttachSessionResponse* resp) override;
  grpc::Status DetachSession(grpc::ServerContext* ctx,
                             const lazaret::egress::v1::DetachSessionRequest* req,
                             lazaret::egress::v1::DetachSessionResponse* resp) override;
  grpc::Status ListSessions(grpc::ServerContext* ctx,
                            const lazaret::egress::v1::ListSessionsRequest* req,
                            lazaret::egress::v1::ListSessionsResponse* resp) override;
  grpc::Status WatchRequests(
      grpc::ServerContext* ctx, const lazaret::egress::v1::WatchRequestsRequest* req,
      grpc::ServerWriter<lazaret::egress::v1::RequestRecord>* writer) override;

 private:
  std::shared_ptr<SessionTable> sessions_;
};

// The service as ServiceMain runs it; `options` for tests.
ServiceSpec Spec();
ServiceSpec SpecWith(SessionTable::Options options);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_EGRESSD_H_
