#include "services/netpolicyd/host_inputs.h"

#include "absl/strings/str_cat.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"

namespace lazaret::netpolicyd {

std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id) {
  return absl::StrCat(runtime_dir, "/sessions/", id, "/router/router.sock");
}

absl::StatusOr<lazaret::config::v1::NetworkPolicy> ResolveNetwork(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record) {
  LAZ_ASSIGN_OR_RETURN(lazaret::config::v1::ResolvedProfile profile,
                       ResolveSessionProfile(runtime_dir, record));
  return std::move(*profile.mutable_network());
}

}  // namespace lazaret::netpolicyd
