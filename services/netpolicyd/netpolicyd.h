// lazaret-netpolicyd: the owner of every session's egress policy. Compiles
// each session's resolved network settings into its route table, pushes it
// into the session's sidecar router over router.sock before the sandbox
// exists, answers the router's DNS relay (asking upstream from the host)
// and keeps name routes for their TTL. Holds no capabilities: the only
// process that touches Netlink is the router inside the sidecar. Its socket
// admits only the user (unix_server.h); requests name sessions by id only.
#ifndef LAZARET_SERVICES_NETPOLICYD_NETPOLICYD_H_
#define LAZARET_SERVICES_NETPOLICYD_NETPOLICYD_H_

#include <sys/capability.h>

#include <array>
#include <memory>

#include "absl/status/status.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"
#include "services/netpolicyd/inbound_ports.h"
#include "services/netpolicyd/registry.h"

namespace lazaret::netpolicyd {

// The capabilities this process keeps; everything else is dropped at start.
// The set is written in the service catalog (services/common/service_catalog.h);
// deploy/capabilities.toml restates it and a test compares the two.
inline constexpr const auto& kCapabilities = kNetPolicydCapabilities;

// NetPolicyService over a Registry. Every handler converts Status to
// grpc::Status at its edge.
class NetPolicyServiceImpl final : public lazaret::netpolicy::v1::NetPolicyService::Service {
 public:
  // Without `ports` (tests of the policy alone) the port calls fail.
  explicit NetPolicyServiceImpl(std::shared_ptr<Registry> registry)
      : registry_(std::move(registry)) {}
  NetPolicyServiceImpl(std::shared_ptr<Registry> registry, std::shared_ptr<InboundPorts> ports)
      : registry_(std::move(registry)), ports_(std::move(ports)) {}

  grpc::Status AttachSession(grpc::ServerContext*,
                             const lazaret::netpolicy::v1::AttachSessionRequest* req,
                             lazaret::netpolicy::v1::PolicyApplied* resp) override;
  grpc::Status ReloadSession(grpc::ServerContext*,
                             const lazaret::netpolicy::v1::ReloadSessionRequest* req,
                             lazaret::netpolicy::v1::PolicyApplied* resp) override;
  grpc::Status ChangeSession(grpc::ServerContext*,
                             const lazaret::netpolicy::v1::ChangeSessionRequest* req,
                             lazaret::netpolicy::v1::PolicyApplied* resp) override;
  grpc::Status DetachSession(grpc::ServerContext*,
                             const lazaret::netpolicy::v1::DetachSessionRequest* req,
                             lazaret::netpolicy::v1::DetachSessionResponse*) override;
  grpc::Status ListSessions(grpc::ServerContext*,
                            const lazaret::netpolicy::v1::ListSessionsRequest*,
                            lazaret::netpolicy::v1::ListSessionsResponse* resp) override;
  grpc::Status ShowPolicy(grpc::ServerContext*,
                          const lazaret::netpolicy::v1::ShowPolicyRequest* req,
                          lazaret::netpolicy::v1::SessionPolicy* resp) override;
  grpc::Status TestDestination(grpc::ServerContext*,
                               const lazaret::netpolicy::v1::TestDestinationRequest* req,
                               lazaret::netpolicy::v1::TestDestinationResponse* resp) override;
  grpc::Status WatchLog(grpc::ServerContext* ctx,
                        const lazaret::netpolicy::v1::WatchLogRequest* req,
                        grpc::ServerWriter<lazaret::netpolicy::v1::LogEntry>* writer) override;
  // Inbound forwards: the router's end is opened first (OpenInbound), then
  // the host's listeners; removed in the reverse order.
  grpc::Status AddPort(grpc::ServerContext*, const lazaret::netpolicy::v1::PortRequest* req,
                       lazaret::netpolicy::v1::PortList* resp) override;
  grpc::Status RemovePort(grpc::ServerContext*, const lazaret::netpolicy::v1::PortRequest* req,
                          lazaret::netpolicy::v1::PortList* resp) override;
  grpc::Status ListPorts(grpc::ServerContext*, const lazaret::netpolicy::v1::ListPortsRequest* req,
                         lazaret::netpolicy::v1::PortList* resp) override;
  // For lazaret-egressd (the same user; the socket admits no one else).
  grpc::Status ResolveUpstream(grpc::ServerContext*,
                               const lazaret::netpolicy::v1::ResolveUpstreamRequest* req,
                               lazaret::netpolicy::v1::ResolveUpstreamResponse* resp) override;

 private:
  std::shared_ptr<Registry> registry_;
  std::shared_ptr<InboundPorts> ports_;
};

// The service with `options` (tests); Spec() uses the defaults.
ServiceSpec SpecWith(RegistryOptions options);
ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_NETPOLICYD_H_
