// One session's network policy in lazaret-netpolicyd: the resolved inputs,
// the live changes, the name routes with their expiry, the generation
// counter, the applied table and the network log, and the operations on
// them (apply, change, show, test, the DNS path). Runs in
// lazaret-netpolicyd, unprivileged. Its callers are the service's handlers
// (peers checked to be the user) and the DNS relay, whose queries come from
// the sandbox: they are parsed by dns_message, judged by the compiled
// policy, and only a listed name is ever asked upstream.
#ifndef LAZARET_SERVICES_NETPOLICYD_SESSION_H_
#define LAZARET_SERVICES_NETPOLICYD_SESSION_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/netpolicyd/compile.h"
#include "services/netpolicyd/dns_message.h"
#include "services/netpolicyd/egress_log.h"
#include "services/netpolicyd/held_names.h"
#include "services/netpolicyd/resolver.h"

namespace lazaret::netpolicyd {

// Everything a session's policy is compiled from that is read at attach
// (and again at reload).
struct SessionInputs {
  lazaret::supervisor::v1::SessionInfo info;
  lazaret::config::v1::NetworkPolicy network;
  // The host's addresses and networks (host_monitor.h) at the time; null:
  // not known, and the session is closed until a snapshot arrives.
  std::shared_ptr<const HostNetworks> host;
  uint64_t host_version = 0;  // HostMonitor::version() of `host`
  lazaret::netrouter::v1::GetNamespaceInfoResponse namespace_info;
  std::vector<Upstream> upstreams;
  // The names the egress proxy intercepts (host_inputs.h InterceptedNames):
  // answered with its address, never asked upstream for the sandbox.
  std::vector<std::string> intercepted;
};

struct SessionOptions {
  ResolverOptions resolver;
  // Seconds since the epoch; tests move it.
  std::function<int64_t()> now_unix;
  std::chrono::milliseconds router_timeout{30000};
  // Name routes live clamp(TTL, floor, cap) seconds.
  int64_t name_ttl_floor = 60;
  int64_t name_ttl_cap = 3600;
  // Where the egress log is persisted (egress_log.h); an empty dir keeps
  // it in memory only.
  EgressLogOptions log;
  // `egress = "ask"`: who is asked about unlisted names (nullptr: nobody,
  // such a name is refused), and the bounds on held names.
  std::shared_ptr<ApprovalClient> approval;
  HeldNamesOptions held;
};

// "deny 10.0.0.0/8 (configuration: FILE:LINE KEY)": a rule and its source, for
// people (explanations, log details).
std::string DescribeRule(const lazaret::netpolicy::v1::Rule& rule);

// The address of an A or AAAA record as a host prefix.
IpPrefix RecordAddress(const dns::ResourceRecord& rr);

class Session {
 public:
  Session(std::string id, std::shared_ptr<grpc::ChannelInterface> router, SessionOptions options);
  ~Session();  // held names first: their threads call into the session
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& id() const { return id_; }
  lazaret::netrouter::v1::NetRouterService::Stub& router() { return *router_; }

  // Takes the inputs (attach, reload) and applies; live changes and name
  // routes that have not expired are kept.
  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Configure(SessionInputs inputs);
  // The names the session's egress proxy intercepts, as configured.
  std::vector<std::string> Intercepted() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Change(
      const lazaret::netpolicy::v1::ChangeSessionRequest& request);
  // Re-applies when a live rule or a name route of the applied table has
  // expired; nothing otherwise.
  absl::Status ApplyIfExpired();
  // The host's addresses or networks changed (null: no longer known):
  // re-applies when they differ from the session's. A `version` older than
  // the session's is ignored (updates run on several threads); 0 always
  // applies.
  absl::Status SetHostNetworks(std::shared_ptr<const HostNetworks> host, uint64_t version = 0);

  absl::StatusOr<lazaret::netpolicy::v1::SessionPolicy> Show();
  absl::StatusOr<lazaret::netpolicy::v1::TestDestinationResponse> Test(
      const lazaret::netpolicy::v1::TestDestinationRequest& request);
  lazaret::netpolicy::v1::SessionSummary Summary();

  // The DNS path: a query as the sandbox sent it; the answer goes to
  // `responder` (empty: none), at once or, for a name held for an approver
  // (`egress = "ask"`), after the decision - never blocking the caller on
  // a human. Installs name routes (ApplyPolicy) before it answers.
  void AnswerDns(absl::string_view query, bool udp, std::unique_ptr<DnsResponder> responder);
  // Ends every held name (REFUSED) and its asker thread: the session is
  // detaching.
  void StopHeldNames();
  // The egress proxy's lookup (NetPolicyService.ResolveUpstream): an
  // intercepted name the name policy answers, resolved upstream, its
  // addresses filtered and their name routes installed. A name that is
  // not a plain host name is InvalidArgument; a refusal is in `refused`.
  absl::StatusOr<lazaret::netpolicy::v1::ResolveUpstreamResponse> ResolveUpstream(
      absl::string_view name);
  // Whether the egress proxy intercepts `name` (a PlainName).
  bool Intercepted(const std::string& name) const ABSL_LOCKS_EXCLUDED(mu_);

  EgressLog& log() { return log_; }
  // The one entry point of the egress log: stamped with the time, seq and
  // this session's id.
  void Log(lazaret::netpolicy::v1::LogEntry entry);
  // The table in force (null before the first apply): what the trace
  // sink judges the sandbox's connects with.
  std::shared_ptr<const CompiledPolicy> AppliedPolicy() const { return Applied(); }

 private:
  using NameKey = std::pair<IpPrefix, std::string>;
  struct Snapshot {
    CompileInput input;
    uint64_t version = 0;
  };

  // Applies the current state unless the applied table already reflects
  // `min_version` (and `force` is false). One apply at a time.
  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Apply(uint64_t min_version, bool force)
      ABSL_LOCKS_EXCLUDED(mu_, apply_mu_);
  Snapshot TakeSnapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const CompiledPolicy> Applied() const ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<Resolver> CurrentResolver() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t Now() const { return options_.now_unix(); }
  void Log(lazaret::netpolicy::v1::LogKind kind, const std::string& name,
           const std::string& query_type, std::vector<std::string> addresses,
           const std::string& detail);

  // The DNS path's steps (session_dns.cc).
  std::string AnswerNow(const dns::Query& query, bool udp, const CompiledPolicy& policy);
  std::string Answered(const dns::Query& query, const std::string& name_text,
                       const CompiledPolicy& policy, bool udp);
  // The filtered answer from the upstream's `response` to `query`.
  // `approved`: an approver allowed the name (its name routes stay
  // although no pattern lists it).
  std::string AnswerFrom(const dns::Query& query, const std::string& name_text,
                         const CompiledPolicy& policy, bool udp, const dns::Response& response,
                         bool approved = false);
  // Held names (session_dns.cc): the session as HeldNames sees it.
  class HeldHost;
  HeldNames& Held();
  // The profile's ask settings; nullopt when the profile does not ask.
  std::optional<AskSettings> AskMode() const ABSL_LOCKS_EXCLUDED(mu_);
  ResolvedName ResolveForApproval(const dns::Question& question);
  std::string AnswerFromResolved(const dns::Query& query, bool udp, const ResolvedName& resolved);
  // An intercepted name's answer: A 127.0.80.1 (egress_endpoint.h), an
  // empty AAAA; nothing asked upstream.
  std::string ProxyAnswer(const dns::Query& query, const std::string& name_text, bool udp);
  // Adds name routes for `addresses` of `name` that need one; returns the
  // state version to apply (0: nothing new). Sets each address's lifetime.
  uint64_t AddNameRoutes(const std::string& name, std::vector<dns::ResourceRecord>& addresses,
                         const CompiledPolicy& policy, bool approved = false);

  const std::string id_;
  const SessionOptions options_;
  const std::unique_ptr<lazaret::netrouter::v1::NetRouterService::Stub> router_;
  EgressLog log_;

  std::mutex apply_mu_;  // held across one ApplyPolicy: generations go out in order
  mutable std::mutex mu_;
  bool configured_ ABSL_GUARDED_BY(mu_) = false;
  SessionInputs inputs_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Resolver> resolver_ ABSL_GUARDED_BY(mu_);
  std::vector<lazaret::netpolicy::v1::Rule> live_rules_ ABSL_GUARDED_BY(mu_);
  std::vector<lazaret::netpolicy::v1::NameRule> live_names_ ABSL_GUARDED_BY(mu_);
  std::map<NameKey, NameRoute> name_routes_ ABSL_GUARDED_BY(mu_);
  // Intercepted names an approver allowed without listing them (`egress =
  // "ask"`, once): the sandbox got the proxy's address, so the proxy's
  // ResolveUpstream is served for them until the answer's TTL ends. Name
  // -> expiry (unix seconds); bounded.
  std::map<std::string, int64_t> proxy_approved_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;  // bumped by every change of the state
  uint64_t applied_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // the last one sent; 0: ask the router
  std::shared_ptr<const CompiledPolicy> applied_ ABSL_GUARDED_BY(mu_);
  lazaret::netpolicy::v1::PolicyApplied last_applied_ ABSL_GUARDED_BY(mu_);

  // Last: destroyed first, so its asker threads (which call into the
  // session) are joined while the rest is still there.
  std::mutex held_mu_;
  std::unique_ptr<HeldNamesHost> held_host_ ABSL_GUARDED_BY(held_mu_);
  std::unique_ptr<HeldNames> held_ ABSL_GUARDED_BY(held_mu_);
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_SESSION_H_
