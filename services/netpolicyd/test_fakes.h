// In-process stand-ins for the services lazaret-netpolicyd talks to, for its
// tests: the supervisor (GetSession, WatchSessions), lazaret-configd
// (ResolveProfile) and a session's router (ApplyPolicy, GetPolicy,
// LookupRoute, GetNamespaceInfo, RelayDns), each served over a Unix socket
// at the path the real one uses. Test code only; trusts everything.
#ifndef LAZARET_SERVICES_NETPOLICYD_TEST_FAKES_H_
#define LAZARET_SERVICES_NETPOLICYD_TEST_FAKES_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd::testing {

class FakeSupervisor final : public lazaret::supervisor::v1::SupervisorService::Service {
 public:
  void Add(lazaret::supervisor::v1::SessionInfo info);
  grpc::Status GetSession(grpc::ServerContext*, const lazaret::supervisor::v1::GetSessionRequest*,
                          lazaret::supervisor::v1::SessionInfo*) override;
  grpc::Status WatchSessions(grpc::ServerContext*,
                             const lazaret::supervisor::v1::WatchSessionsRequest*,
                             grpc::ServerWriter<lazaret::supervisor::v1::SessionEvent>*) override;

 private:
  std::mutex mu_;
  std::map<std::string, lazaret::supervisor::v1::SessionInfo> sessions_;
};

class FakeConfigd final : public lazaret::config::v1::ConfigService::Service {
 public:
  void Set(lazaret::config::v1::NetworkPolicy network);
  // The rest of the profile (secrets, HTTP rules); its network is Set's.
  void SetProfile(lazaret::config::v1::ResolvedProfile profile);
  grpc::Status ResolveProfile(grpc::ServerContext*,
                              const lazaret::config::v1::ResolveProfileRequest*,
                              lazaret::config::v1::ResolveProfileResponse*) override;
  lazaret::config::v1::ResolveProfileRequest last_request();

 private:
  std::mutex mu_;
  lazaret::config::v1::NetworkPolicy network_;
  lazaret::config::v1::ResolvedProfile profile_;
  lazaret::config::v1::ResolveProfileRequest last_;
};

class FakeRouter final : public lazaret::netrouter::v1::NetRouterService::Service {
 public:
  explicit FakeRouter(uint64_t generation = 0) : generation_(generation) {}
  grpc::Status ApplyPolicy(grpc::ServerContext*, const lazaret::netrouter::v1::ApplyPolicyRequest*,
                           lazaret::netrouter::v1::ApplyPolicyResponse*) override;
  grpc::Status GetPolicy(grpc::ServerContext*, const lazaret::netrouter::v1::GetPolicyRequest*,
                         lazaret::netrouter::v1::GetPolicyResponse*) override;
  grpc::Status LookupRoute(grpc::ServerContext*, const lazaret::netrouter::v1::LookupRouteRequest*,
                           lazaret::netrouter::v1::LookupRouteResponse*) override;
  grpc::Status GetNamespaceInfo(grpc::ServerContext*,
                                const lazaret::netrouter::v1::GetNamespaceInfoRequest*,
                                lazaret::netrouter::v1::GetNamespaceInfoResponse*) override;
  grpc::Status RelayDns(grpc::ServerContext*,
                        grpc::ServerReaderWriter<lazaret::netrouter::v1::DnsQuery,
                                                 lazaret::netrouter::v1::DnsAnswer>*) override;

  // Sends a query through the open relay call (waiting for one); the answer,
  // or an error when there is no call or no answer within `timeout`.
  absl::StatusOr<std::string> Ask(const std::string& message, bool tcp,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The table as applied, prefix -> "allow"/"prohibit".
  std::map<std::string, std::string> Table();
  uint64_t generation();
  int applies();
  // Holds received (DnsAnswer.hold_ms with no message).
  int holds();
  void FailApplies(bool fail);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_;
  int applies_ = 0;
  int holds_ = 0;
  bool fail_ = false;
  std::vector<lazaret::netrouter::v1::Route> routes_;
  std::string digest_;
  int relays_open_ = 0;
  uint64_t next_id_ = 1;
  std::deque<lazaret::netrouter::v1::DnsQuery> pending_;
  std::map<uint64_t, std::string> answers_;
};

// A gRPC server for `service` on `socket` (directories created).
absl::StatusOr<std::unique_ptr<GrpcUnixServer>> Serve(grpc::Service* service,
                                                      const std::string& socket);

}  // namespace lazaret::netpolicyd::testing

#endif  // LAZARET_SERVICES_NETPOLICYD_TEST_FAKES_H_
