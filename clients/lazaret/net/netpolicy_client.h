// The `lazaret` CLI's client of lazaret-netpolicyd (NetPolicyService, on
// netpolicyd.sock in the runtime directory): `lazaret run` attaches a
// session before its sandbox exists and detaches it at the teardown and
// the reap; the `lazaret net` commands show, test and change a live
// session's policy. Runs in the CLI, as the user. netpolicyd is a host
// service of the same user and is trusted to say what it applied; the
// names and text it relays from a session's DNS traffic are the agent's
// and are escaped by whoever prints them (format.h).
#ifndef LAZARET_CLIENTS_LAZARET_NET_NETPOLICY_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_NET_NETPOLICY_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"

namespace lazaret::cli::net {

// <runtime_dir>/netpolicyd.sock: the service catalog's socket of
// lazaret-netpolicyd (services/common/service_catalog.h).
std::string NetPolicySocket(const std::string& runtime_dir);

// How long a `lazaret run` waits for AttachSession (the compile, the
// router's ApplyPolicy and its read-back).
inline constexpr std::chrono::seconds kAttachTimeout{20};
// Every other unary call.
inline constexpr std::chrono::seconds kCallTimeout{10};

class NetPolicyClient {
 public:
  explicit NetPolicyClient(const std::string& socket);

  const std::string& socket() const { return socket_; }

  // Each call's error says what failed and how to fix it: UNAVAILABLE
  // names the socket and `lazaret up`, DEADLINE_EXCEEDED the wait, and a
  // refusal keeps netpolicyd's code and message.
  absl::StatusOr<::lazaret::netpolicy::v1::PolicyApplied> Attach(
      const std::string& session, std::chrono::seconds timeout = kAttachTimeout);
  absl::StatusOr<::lazaret::netpolicy::v1::PolicyApplied> Reload(const std::string& session);
  absl::StatusOr<::lazaret::netpolicy::v1::PolicyApplied> Change(
      const ::lazaret::netpolicy::v1::ChangeSessionRequest& request);
  absl::Status Detach(const std::string& session, std::chrono::seconds timeout = kCallTimeout);
  absl::StatusOr<::lazaret::netpolicy::v1::ListSessionsResponse> List();
  absl::StatusOr<::lazaret::netpolicy::v1::SessionPolicy> Show(const std::string& session);
  absl::StatusOr<::lazaret::netpolicy::v1::TestDestinationResponse> Test(
      const ::lazaret::netpolicy::v1::TestDestinationRequest& request);

  // The session's log, each entry to `sink` as it arrives. Without
  // `follow` it ends after what netpolicyd has; with it, when netpolicyd
  // ends the stream (the session ended) or the process is stopped. No
  // deadline with `follow`.
  absl::Status WatchLog(const std::string& session, bool follow,
                        const std::function<void(const ::lazaret::netpolicy::v1::LogEntry&)>& sink);

 private:
  absl::Status Explain(const char* rpc, const grpc::Status& status,
                       std::chrono::seconds timeout) const;

  std::string socket_;
  std::unique_ptr<::lazaret::netpolicy::v1::NetPolicyService::Stub> stub_;
};

// DetachSession of a session whose containers are gone, best effort: OK
// also when netpolicyd is not running or does not know the session (the
// registry's ENDED event makes it forget the session anyway). The error of
// any other refusal, for the caller to show.
absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session);

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_NETPOLICY_CLIENT_H_
