#include "sidecar/netrouter.h"

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "sidecar/dns_relay.h"
#include "sidecar/egress_listener.h"
#include "sidecar/escalation_relay.h"
#include "sidecar/port_relay.h"
#include "sidecar/multicast_guard.h"
#include "sidecar/namespace_guard.h"
#include "sidecar/namespace_info.h"
#include "sidecar/neighbours.h"
#include "sidecar/netlink_routes.h"
#include "sidecar/policy_engine.h"
#include "sidecar/policy_rules.h"

namespace lazaret::netrouter {
namespace {

namespace pb = ::lazaret::netrouter::v1;

// One Hold call: answers HELD once, then only waits for the call to end.
// Whatever ends it - the holder cancelling, its process dying (the socket
// closes), the server shutting down - releases the hold exactly once.
class HoldReactor final : public grpc::ServerWriteReactor<pb::HoldEvent> {
 public:
  HoldReactor(NamespaceGuard* guard, std::string holder, uint32_t holders)
      : guard_(guard), holder_(std::move(holder)) {
    event_.set_state(pb::HOLD_STATE_HELD);
    event_.set_holders(holders);
    StartWrite(&event_);
  }
  void OnWriteDone(bool) override {}
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override {
    guard_->Release(holder_);
    delete this;
  }

 private:
  NamespaceGuard* const guard_;
  const std::string holder_;
  pb::HoldEvent event_;
};

class RefusedHold final : public grpc::ServerWriteReactor<pb::HoldEvent> {
 public:
  explicit RefusedHold(const absl::Status& s) { Finish(ToGrpcStatus(s)); }
  void OnDone() override { delete this; }
};

// One RelayDns call. Queries go out one write at a time from a queue
// (bounded by the relay's in-flight limit); answers go to the relay.
// Lock order: the relay's lock, then mu_; gRPC runs no reaction inline
// from StartWrite or Finish, so neither is ever taken twice.
class RelayReactor final : public grpc::ServerBidiReactor<pb::DnsAnswer, pb::DnsQuery>,
                           public DnsRelaySink {
 public:
  explicit RelayReactor(DnsRelay* relay) : relay_(relay) {
    // The initial metadata tells the caller at once that the router took
    // the call; sent before any query can be written (Attach).
    StartSendInitialMetadata();
    epoch_ = relay_->Attach(this);
    LAZ_LOG_INFO << "DNS relay stream " << epoch_ << " open";
    StartRead(&answer_);
  }

  bool Send(uint64_t id, const std::string& message, pb::DnsTransport transport) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return false;
    pb::DnsQuery& q = queue_.emplace_back();
    q.set_id(id);
    q.set_message(message);
    q.set_transport(transport);
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
    return true;
  }
  void Replace() override {
    FinishOnce(grpc::Status(grpc::StatusCode::ABORTED, "a newer RelayDns call took over"));
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishOnce(grpc::Status::OK);
      return;
    }
    relay_->Answer(epoch_, answer_.id(), std::move(*answer_.mutable_message()), answer_.hold_ms());
    StartRead(&answer_);
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.pop_front();
    if (!ok || finished_) {
      writing_ = false;
      if (pending_finish_.has_value()) Finish(*std::exchange(pending_finish_, std::nullopt));
      return;
    }
    if (queue_.empty()) {
      writing_ = false;
    } else {
      StartWrite(&queue_.front());
    }
  }
  void OnCancel() override { FinishOnce(grpc::Status::CANCELLED); }
  void OnDone() override {
    relay_->Detach(epoch_);
    LAZ_LOG_INFO << "DNS relay stream " << epoch_ << " closed";
    delete this;
  }

 private:
  void FinishOnce(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (writing_) {
      pending_finish_ = std::move(status);  // finished when the write is done
    } else {
      Finish(std::move(status));
    }
  }

  DnsRelay* const relay_;
  uint64_t epoch_ = 0;
  pb::DnsAnswer answer_;
  std::mutex mu_;
  std::deque<pb::DnsQuery> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

// The holder label is for the log only; keep it short and printable.
std::string HolderLabel(const std::string& in) {
  std::string out;
  for (char c : in.substr(0, 32)) out.push_back(c >= 0x21 && c <= 0x7e ? c : '?');
  return out.empty() ? "unnamed" : out;
}

void ToProto(const PolicyRoute& r, pb::Route* out) {
  out->mutable_destination()->set_prefix(r.prefix.ToString());
  out->set_action(r.action == Action::kAllow ? pb::ROUTE_ACTION_ALLOW : pb::ROUTE_ACTION_PROHIBIT);
}

std::string InterfaceName(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (ifindex <= 0 || if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr) return "";
  return name;
}

using ServiceBase = pb::NetRouterService::WithCallbackMethod_Hold<
    pb::NetRouterService::WithCallbackMethod_RelayDns<pb::NetRouterService::Service>>;

class NetRouterServiceImpl final : public ServiceBase {
 public:
  NetRouterServiceImpl(std::unique_ptr<PolicyEngine> engine, std::unique_ptr<RtnlSocket> query,
                       NlSockPtr rules, std::unique_ptr<GatewayWatcher> watcher,
                       std::unique_ptr<DnsRelay> relay,
                       std::unique_ptr<EscalationRelay> escalation_relay,
                       std::unique_ptr<EgressListener> egress_listener,
                       std::unique_ptr<PortRelay> ports)
      : guard_(CloseNamespace),
        engine_(std::move(engine)),
        query_(std::move(query)),
        rules_(std::move(rules)),
        watcher_(std::move(watcher)),
        relay_(std::move(relay)),
        escalation_relay_(std::move(escalation_relay)),
        egress_listener_(std::move(egress_listener)),
        ports_(std::move(ports)) {}

  grpc::ServerWriteReactor<pb::HoldEvent>* Hold(grpc::CallbackServerContext*,
                                                const pb::HoldRequest* request) override {
    const std::string holder = HolderLabel(request->holder());
    absl::StatusOr<uint32_t> holders = guard_.Acquire(holder);
    if (!holders.ok()) return new RefusedHold(holders.status());
    return new HoldReactor(&guard_, holder, *holders);
  }

  grpc::ServerBidiReactor<pb::DnsAnswer, pb::DnsQuery>* RelayDns(
      grpc::CallbackServerContext*) override {
    return new RelayReactor(relay_.get());
  }

  grpc::Status ApplyPolicy(grpc::ServerContext*, const pb::ApplyPolicyRequest* request,
                           pb::ApplyPolicyResponse* response) override {
    if (guard_.closed()) {
      return ToGrpcStatus(absl::FailedPreconditionError(
          "the session's network is closed for good (every hold ended); no policy applies"));
    }
    absl::StatusOr<PolicySet> routes = ValidateRoutes(request->routes());
    if (!routes.ok()) return ToGrpcStatus(routes.status());
    absl::StatusOr<ApplyResult> r = engine_->Apply(request->generation(), *routes);
    if (!r.ok()) return ToGrpcStatus(r.status());
    response->set_generation(r->generation);
    response->set_digest(r->digest);
    response->set_routes(r->routes);
    response->set_added(r->added);
    response->set_replaced(r->replaced);
    response->set_removed(r->removed);
    LAZ_LOG_INFO << "generation " << r->generation << " applied: " << r->routes << " routes (+"
                 << r->added << " ~" << r->replaced << " -" << r->removed << ")";
    return grpc::Status::OK;
  }

  grpc::Status GetPolicy(grpc::ServerContext*, const pb::GetPolicyRequest*,
                         pb::GetPolicyResponse* response) override {
    absl::StatusOr<PolicySnapshot> s = engine_->Read();
    if (!s.ok()) return ToGrpcStatus(s.status());
    response->set_generation(s->generation);
    response->set_digest(s->digest);
    for (const PolicyRoute& r : s->routes) ToProto(r, response->add_routes());
    response->set_failed_closed(s->failed_closed);
    response->set_last_error(s->last_error);
    return grpc::Status::OK;
  }

  grpc::Status LookupRoute(grpc::ServerContext*, const pb::LookupRouteRequest* request,
                           pb::LookupRouteResponse* response) override {
    return ToGrpcStatus(Lookup(*request, response));
  }

  grpc::Status GetNamespaceInfo(grpc::ServerContext*, const pb::GetNamespaceInfoRequest*,
                                pb::GetNamespaceInfoResponse* response) override {
    std::lock_guard<std::mutex> lock(query_mu_);
    absl::StatusOr<NamespaceInfo> info = ReadNamespaceInfo(*query_);
    if (!info.ok()) return ToGrpcStatus(info.status());
    for (const NamespaceInfo::Address& a : info->addresses) {
      pb::NamespaceAddress* out = response->add_addresses();
      out->set_interface(a.interface);
      out->mutable_address()->set_prefix(a.address.ToString());
    }
    for (const std::string& g : info->gateways) response->add_gateways(g);
    for (const std::string& s : info->link_services) response->add_link_services(s);
    response->set_ipv6(info->ipv6);
    return grpc::Status::OK;
  }

  // Inbound forwards: a Unix socket per sandbox port, joined to the
  // namespace's own loopback only (port_relay.h). Safe to serve: the only
  // destination is a loopback port of this namespace, the socket admits
  // only this process's uid, and at most 16 are open.
  grpc::Status OpenInbound(grpc::ServerContext*, const pb::InboundPort* request,
                           pb::InboundPorts* response) override {
    if (guard_.closed()) {
      return ToGrpcStatus(absl::FailedPreconditionError("the session's network is closed"));
    }
    if (absl::Status st = ports_->Open(request->sandbox_port()); !st.ok()) return ToGrpcStatus(st);
    LAZ_LOG_INFO << "inbound relay open for sandbox port " << request->sandbox_port();
    return ListPorts(response);
  }

  grpc::Status CloseInbound(grpc::ServerContext*, const pb::InboundPort* request,
                            pb::InboundPorts* response) override {
    if (absl::Status st = ports_->Close(request->sandbox_port()); !st.ok()) return ToGrpcStatus(st);
    LAZ_LOG_INFO << "inbound relay closed for sandbox port " << request->sandbox_port();
    return ListPorts(response);
  }

  grpc::Status ListInbound(grpc::ServerContext*, const pb::ListInboundRequest*,
                           pb::InboundPorts* response) override {
    return ListPorts(response);
  }

 private:
  grpc::Status ListPorts(pb::InboundPorts* response) {
    for (uint32_t p : ports_->List()) response->add_ports()->set_sandbox_port(p);
    return grpc::Status::OK;
  }

  absl::Status Lookup(const pb::LookupRouteRequest& request, pb::LookupRouteResponse* response) {
    std::array<uint8_t, 16> address{};
    const bool v6 = request.address().find(':') != std::string::npos;
    const int family = v6 ? AF_INET6 : AF_INET;
    if (request.address().size() > 64 ||
        inet_pton(family, request.address().c_str(), address.data()) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", request.address(), "\" is not an IPv4 or IPv6 address"));
    }
    if (request.port() > 0xffff) return absl::InvalidArgumentError("port out of range");
    const uint8_t ipproto = request.protocol() == pb::PROTOCOL_TCP   ? 6
                            : request.protocol() == pb::PROTOCOL_UDP ? 17
                                                                     : 0;
    const uint16_t port = static_cast<uint16_t>(request.port());
    KernelRoute kr;
    std::vector<RuleInfo> rules;
    {
      std::lock_guard<std::mutex> lock(query_mu_);
      LAZ_ASSIGN_OR_RETURN(kr, LookupKernelRoute(*query_, family, address, ipproto, port));
      LAZ_ASSIGN_OR_RETURN(rules, ListRules(rules_.get()));
    }
    const std::string rule =
        kr.error != 0 ? RefusingRule(rules, family, address, ipproto, port) : "";
    response->set_allowed(kr.error == 0);
    response->set_rule(rule);
    if (kr.error == 0) {
      response->set_route_type(RouteTypeName(kr.type));
      response->set_device(InterfaceName(kr.oif));
    } else {
      response->set_route_type(kr.error == EACCES ? "prohibit"
                               : kr.error == ENETUNREACH || kr.error == EHOSTUNREACH
                                   ? "unreachable"
                                   : std::strerror(kr.error));
    }
    // The policy route that matched, when the lookup reached the table.
    if (rule.empty() && kr.table != RT_TABLE_LOCAL) {
      LAZ_ASSIGN_OR_RETURN(PolicySnapshot snapshot, engine_->Read());
      if (const PolicyRoute* m = LongestMatch(snapshot.routes, family, address.data())) {
        response->mutable_policy_route()->set_prefix(m->prefix.ToString());
      }
    }
    return absl::OkStatus();
  }

  NamespaceGuard guard_;
  const std::unique_ptr<PolicyEngine> engine_;
  std::mutex query_mu_;
  const std::unique_ptr<RtnlSocket> query_ ABSL_GUARDED_BY(query_mu_);
  const NlSockPtr rules_ ABSL_GUARDED_BY(query_mu_);
  const std::unique_ptr<GatewayWatcher> watcher_;
  const std::unique_ptr<DnsRelay> relay_;
  const std::unique_ptr<EscalationRelay> escalation_relay_;  // null: no escalation
  const std::unique_ptr<EgressListener> egress_listener_;    // null: no egress proxy
  const std::unique_ptr<PortRelay> ports_;
};

// Everything before the socket answers: the namespace closed (table, then
// rules), the neighbour discipline, the multicast guard, the DNS listeners,
// the escalation relay's listener, the egress listener. Any failure ends the router, so `lazaret
// run`'s health wait fails the session.
absl::StatusOr<ServiceHandlers> StartRouter(const RouterOptions& options,
                                            const std::string& socket_dir) {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<PolicyEngine> engine, PolicyEngine::Create());
  LAZ_RETURN_IF_ERROR(engine->InstallClosedTable());
  LAZ_LOG_INFO << "namespace closed: table " << kPolicyTable << " prohibits both defaults; rules "
               << "pref " << kDnsRulePriority << " (DNS ports) and " << kPolicyRulePriority
               << " (lookup " << kPolicyTable << ") installed";
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<GatewayWatcher> watcher, GatewayWatcher::Start());
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<RtnlSocket> query, RtnlSocket::Open());
  LAZ_RETURN_IF_ERROR(EnforceNeighbourDiscipline(*query, kGatewayResolveTimeout));
  LAZ_LOG_INFO << "neighbour discipline: gateways permanent, no dynamic resolution";
  {
    LAZ_ASSIGN_OR_RETURN(NlSockPtr tc, ConnectLibnl());
    LAZ_RETURN_IF_ERROR(DropMulticastEgress(tc.get()));
  }
  LAZ_LOG_INFO << "multicast egress dropped on every link (IPv4 224.0.0.0/4, IPv6 ff00::/8)";
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<DnsRelay> relay, DnsRelay::Start(DnsRelayOptions{}));
  LAZ_LOG_INFO << "DNS relay listening on the loopback, port 53 (UDP and TCP)";
  std::unique_ptr<EscalationRelay> escalation_relay;
  if (!options.escalation_socket.empty()) {
    EscalationRelayOptions o;
    o.broker_socket = options.escalation_socket;
    LAZ_ASSIGN_OR_RETURN(escalation_relay, EscalationRelay::Start(o));
    LAZ_LOG_INFO << "escalation relay listening on " << o.address << ":" << escalation_relay->port()
                 << " (TCP), to " << o.broker_socket;
  }
  std::unique_ptr<EgressListener> egress_listener;
  if (!options.egress_socket.empty()) {
    EgressListenerOptions o;
    o.socket_path = options.egress_socket;
    LAZ_ASSIGN_OR_RETURN(egress_listener, EgressListener::Start(o));
    LAZ_LOG_INFO << "egress listener on " << o.address << ":" << egress_listener->https_port()
                 << " and :" << egress_listener->http_port() << " (TCP), channel " << o.socket_path;
  }
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<PortRelay> ports,
                       PortRelay::Create({.socket_dir = socket_dir}));
  LAZ_ASSIGN_OR_RETURN(NlSockPtr rules, ConnectLibnl());
  ServiceHandlers h;
  h.services.push_back(std::make_unique<NetRouterServiceImpl>(
      std::move(engine), std::move(query), std::move(rules), std::move(watcher), std::move(relay),
      std::move(escalation_relay), std::move(egress_listener), std::move(ports)));
  return h;
}

}  // namespace

absl::StatusOr<RouterOptions> TakeRouterFlags(std::vector<char*>* args) {
  RouterOptions o;
  const std::pair<absl::string_view, std::string*> flags[] = {
      {"--escalation-socket=", &o.escalation_socket},
      {"--egress-socket=", &o.egress_socket},
  };
  std::vector<char*> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    char* a = (*args)[i];
    bool taken = false;
    for (const auto& [prefix, value] : flags) {
      if (i == 0 || !absl::StartsWith(a, prefix)) continue;
      const absl::string_view name = prefix.substr(0, prefix.size() - 1);
      if (!value->empty()) return absl::InvalidArgumentError(absl::StrCat(name, " is given twice"));
      *value = std::string(absl::string_view(a).substr(prefix.size()));
      if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(name, " needs a path"));
      taken = true;
    }
    if (!taken) rest.push_back(a);
  }
  *args = std::move(rest);
  return o;
}

ServiceSpec Spec(const RouterOptions& options) {
  return ServiceSpec{
      .name = "netrouter",
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers = [options](const std::string& runtime_dir) {
        return StartRouter(options, runtime_dir);
      },
      .max_receive_message_bytes = kMaxRequestBytes,
  };
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netrouter
