#include "services/netpolicyd/route_digest.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"
#include "services/netpolicyd/ip_prefix.h"

namespace lazaret::netpolicyd {

namespace rt = ::lazaret::netrouter::v1;

absl::StatusOr<std::string> RoutesDigest(const std::vector<rt::Route>& routes) {
  std::vector<std::pair<IpPrefix, bool>> sorted;
  sorted.reserve(routes.size());
  for (const auto& route : routes) {
    LAZ_ASSIGN_OR_RETURN(IpPrefix prefix, IpPrefix::Parse(route.destination().prefix()));
    if (route.action() != rt::ROUTE_ACTION_ALLOW && route.action() != rt::ROUTE_ACTION_PROHIBIT) {
      return absl::InvalidArgumentError(
          absl::StrCat("the route ", prefix.ToString(), " has no action"));
    }
    sorted.emplace_back(prefix, route.action() == rt::ROUTE_ACTION_ALLOW);
  }
  std::sort(sorted.begin(), sorted.end());
  fs::Sha256 sha;
  for (const auto& [prefix, allow] : sorted) {
    sha.Update(absl::StrCat(allow ? "allow " : "prohibit ", prefix.ToString(), "\n"));
  }
  return sha.HexDigest();
}

absl::StatusOr<std::string> RoutesDigest(
    const google::protobuf::RepeatedPtrField<rt::Route>& routes) {
  return RoutesDigest(std::vector<rt::Route>(routes.begin(), routes.end()));
}

}  // namespace lazaret::netpolicyd
