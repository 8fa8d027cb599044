// `lazaret port SESSION add SPEC | rm HOSTPORT | ls`: a live session's
// inbound forwards, through lazaret-netpolicyd (docs/networking.md
// "Inbound ports"). Runs in the user's terminal, as the user, on the host
// only. The parsing is lazaret_net's (net/port_args.h).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "clients/lazaret/commands.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "clients/lazaret/net/port_args.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli {
namespace {

namespace netpb = ::lazaret::netpolicy::v1;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

}  // namespace

int CmdPort(const Context& ctx, const std::vector<std::string>& args) {
  absl::StatusOr<net::PortArgs> parsed = net::ParsePortArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret port: %s\n%s", std::string(parsed.status().message()).c_str(),
                 net::kPortUsage);
    return kExitUsage;
  }
  if (parsed->verb == net::PortVerb::kHelp) {
    std::fputs(net::kPortHelp, stdout);
    return kExitOk;
  }
  absl::StatusOr<std::vector<session::FoundSession>> dirs =
      session::FindSessionDirs(ctx.runtime_dir);
  if (!dirs.ok()) {
    std::fprintf(stderr, "lazaret port: %s\n", std::string(dirs.status().message()).c_str());
    return kExitFailed;
  }
  absl::StatusOr<std::string> id = session::ChooseLiveSession(*dirs, parsed->session);
  if (!id.ok()) {
    std::fprintf(stderr, "lazaret port: %s\n", std::string(id.status().message()).c_str());
    return kExitFailed;
  }
  const std::string socket = net::NetPolicySocket(ctx.runtime_dir);
  auto stub = netpb::NetPolicyService::NewStub(DialUnix(socket));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + net::kCallTimeout);
  netpb::PortList list;
  grpc::Status st;
  if (parsed->verb == net::PortVerb::kList) {
    netpb::ListPortsRequest req;
    req.mutable_session()->set_id(*id);
    st = stub->ListPorts(&cc, req, &list);
  } else {
    netpb::PortRequest req;
    req.mutable_session()->set_id(*id);
    *req.mutable_port() = parsed->port;
    st = parsed->verb == net::PortVerb::kAdd ? stub->AddPort(&cc, req, &list)
                                             : stub->RemovePort(&cc, req, &list);
  }
  if (!st.ok()) {
    std::fprintf(
        stderr, "lazaret port: %s%s\n", st.error_message().c_str(),
        st.error_code() == grpc::StatusCode::UNAVAILABLE
            ? (" (" + socket + " does not answer; is the service set up? lazaret up)").c_str()
            : "");
    return kExitFailed;
  }
  const std::vector<lazaret::common::v1::PortForward> ports(list.ports().begin(),
                                                            list.ports().end());
  std::fputs(net::FormatPorts(ports).c_str(), stdout);
  return kExitOk;
}

}  // namespace lazaret::cli
