// The lazaret-egressd client: a session worker attaches and detaches its
// session's egress proxy with it, `lazaret net log` reads the request log.
// Part of lazaret_netpolicy_client (linked by the session library too).
#ifndef LAZARET_CLIENTS_LAZARET_NET_EGRESS_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_NET_EGRESS_CLIENT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/egress/v1/egress.grpc.pb.h"

namespace lazaret::cli::net {

// <runtime_dir>/egressd.sock (the service catalog's name).
std::string EgressSocket(const std::string& runtime_dir);

// AttachSession; the request's secret values are wiped (OPENSSL_cleanse)
// before this returns, whatever the outcome.
absl::StatusOr<::lazaret::egress::v1::AttachSessionResponse> AttachEgress(
    const std::string& runtime_dir, ::lazaret::egress::v1::AttachSessionRequest* request);

// Whether lazaret-egressd answers and serves `session` (ListSessions,
// 1 s deadline).
bool EgressServes(const std::string& runtime_dir, const std::string& session);

// DetachSession; a session the proxy does not know is not an error.
absl::Status DetachEgressBestEffort(const std::string& runtime_dir, const std::string& session);

// WatchRequests: each record to `each` (false stops), oldest first; with
// `follow`, until the session ends or `each` returns false.
absl::Status WatchEgressRequests(
    const std::string& runtime_dir, const std::string& session, bool follow,
    const std::function<bool(const ::lazaret::egress::v1::RequestRecord&)>& each);

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_EGRESS_CLIENT_H_
