#include "services/netpolicyd/host_inputs.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>

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

absl::StatusOr<std::vector<HostAddress>> ReadHostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoStatus("getifaddrs", errno);
  std::vector<HostAddress> out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    std::array<uint8_t, 16> bytes = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      memcpy(bytes.data(), &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, 4);
      out.push_back({a->ifa_name, IpPrefix::Make(IpPrefix::Family::kIpv4, bytes, 32)});
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      memcpy(bytes.data(), &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, 16);
      out.push_back({a->ifa_name, IpPrefix::Make(IpPrefix::Family::kIpv6, bytes, 128)});
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace lazaret::netpolicyd
