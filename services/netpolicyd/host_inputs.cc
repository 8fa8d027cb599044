#include "services/netpolicyd/host_inputs.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/constants.h"
#include "services/common/runtime_dir.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd {
namespace {

void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + kHostCallTimeout);
}

absl::Status Failed(const std::string& what, const grpc::Status& status) {
  absl::Status s = FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

absl::Status CheckSessionId(const std::string& id) {
  if (IsValidSessionId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("'", id.substr(0, 40), "' is not a session id (12 lowercase hex digits)"));
}

std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id) {
  return absl::StrCat(runtime_dir, "/sessions/", id, "/router/router.sock");
}

absl::StatusOr<lazaret::supervisor::v1::SessionInfo> FetchSession(const std::string& runtime_dir,
                                                                  const std::string& id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(id));
  auto stub = lazaret::supervisor::v1::SupervisorService::NewStub(
      DialUnix(SocketPath(runtime_dir, kSupervisorSocketName)));
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  lazaret::supervisor::v1::GetSessionRequest req;
  req.set_id(id);
  lazaret::supervisor::v1::SessionInfo info;
  grpc::Status st = stub->GetSession(&ctx, req, &info);
  if (!st.ok()) return Failed(absl::StrCat("the supervisor's session ", id), st);
  if (info.record().id() != id) {
    return absl::InternalError(absl::StrCat("the supervisor answered another session for ", id));
  }
  return info;
}

absl::StatusOr<lazaret::config::v1::NetworkPolicy> ResolveNetwork(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record) {
  auto stub =
      lazaret::config::v1::ConfigService::NewStub(DialUnix(SocketPath(runtime_dir, "configd")));
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  lazaret::config::v1::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir(record.workspace());
  req.mutable_selector()->set_explicit_config(record.explicit_config());
  req.set_profile(record.profile());
  lazaret::config::v1::ResolveProfileResponse resp;
  grpc::Status st = stub->ResolveProfile(&ctx, req, &resp);
  if (!st.ok()) {
    return Failed(absl::StrCat("lazaret-configd resolving profile '", record.profile(), "'"), st);
  }
  return resp.profile().network();
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
