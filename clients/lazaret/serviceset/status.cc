#include "clients/lazaret/serviceset/status.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>

#include "absl/strings/str_join.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::serviceset {
namespace {

namespace pb = ::lazaret::supervisor::v1;

const char* StateName(pb::ServiceState s) {
  switch (s) {
    case pb::SERVICE_STATE_STARTING:
      return "starting";
    case pb::SERVICE_STATE_HEALTHY:
      return "healthy";
    case pb::SERVICE_STATE_UNHEALTHY:
      return "unhealthy";
    case pb::SERVICE_STATE_BACKOFF:
      return "restarting";
    case pb::SERVICE_STATE_STOPPED:
      return "stopped";
    default:
      return "unknown";
  }
}

}  // namespace

std::string SupervisorSocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kSupervisorService);
}

absl::StatusOr<pb::GetStatusResponse> QueryStatus(const std::string& runtime_dir,
                                                  std::chrono::milliseconds timeout) {
  auto stub = pb::SupervisorService::NewStub(DialUnix(SupervisorSocket(runtime_dir)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + timeout);
  pb::GetStatusResponse resp;
  grpc::Status s = stub->GetStatus(&cc, pb::GetStatusRequest(), &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

void PrintStatusTable(const pb::GetStatusResponse& st) {
  std::printf("Lazaret is up: supervisor pid %d, runtime dir %s\n", st.supervisor_pid(),
              st.runtime_dir().c_str());
  std::printf("  %-14s %-11s %-8s %-9s %s\n", "SERVICE", "STATE", "PID", "RESTARTS",
              "CAPABILITIES");
  for (const auto& s : st.services()) {
    const std::string caps =
        s.capabilities().empty() ? "none" : absl::StrJoin(s.capabilities(), ",");
    std::printf("  %-14s %-11s %-8d %-9u %s\n", s.name().c_str(), StateName(s.state()), s.pid(),
                s.restarts(), caps.c_str());
  }
}

absl::StatusOr<std::string> StatusJson(const pb::GetStatusResponse& st) {
  google::protobuf::util::JsonPrintOptions o;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (auto s = google::protobuf::util::MessageToJsonString(st, &out, o); !s.ok()) {
    return absl::InternalError(std::string(s.message()));
  }
  return out;
}

}  // namespace lazaret::cli::serviceset
