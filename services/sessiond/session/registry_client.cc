#include "services/sessiond/session/registry_client.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/grpc_deadline.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::session {
namespace {

namespace spb = ::lazaret::supervisor::v1;

std::unique_ptr<spb::SupervisorService::Stub> SupervisorStub(const std::string& socket) {
  return spb::SupervisorService::NewStub(DialUnix(socket));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionRegistration>> SessionRegistration::Register(
    const std::string& runtime_dir, const SessionRecord& record) {
  const std::string socket = ServiceSocketPath(runtime_dir, kSupervisorService);
  spb::RegisterSessionRequest req;
  ::lazaret::common::v1::SessionRecord* m = req.mutable_record();
  m->set_id(record.id);
  m->set_profile(record.profile);
  m->set_workspace(record.workspace);
  m->set_git_state_dir(record.git_state_dir);
  m->set_pid(record.pid);
  m->set_started_unix(record.started_unix);
  m->set_explicit_config(record.explicit_config);
  spb::RegisterSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(10));
  const grpc::Status s = SupervisorStub(socket)->RegisterSession(&cc, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::UnavailableError(absl::StrCat(
          "refusing to start: the supervisor does not answer on ", socket,
          ", and a sandbox never runs without a supervisor that would reap it if this lazaret "
          "died. Start it: lazaret up"));
    }
    return absl::Status(FromGrpcStatus(s).code(),
                        absl::StrCat("refusing to start: the supervisor did not register the "
                                     "session: ",
                                     s.error_message()));
  }
  return std::unique_ptr<SessionRegistration>(new SessionRegistration(socket, record.id));
}

absl::Status SessionRegistration::AttachRouter() {
  spb::AttachSessionRouterRequest req;
  req.set_id(id_);
  spb::AttachSessionRouterResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(10));
  const grpc::Status s = SupervisorStub(socket_)->AttachSessionRouter(&cc, req, &resp);
  if (!s.ok()) {
    return absl::Status(FromGrpcStatus(s).code(),
                        absl::StrCat("refusing to start the sandbox: the supervisor could not "
                                     "hold the session's router: ",
                                     s.error_message()));
  }
  return absl::OkStatus();
}

absl::Status SessionRegistration::Check() {
  spb::GetSessionRequest req;
  req.set_id(id_);
  spb::SessionInfo resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(2));
  return FromGrpcStatus(SupervisorStub(socket_)->GetSession(&cc, req, &resp));
}

absl::Status SessionRegistration::Unregister() {
  spb::UnregisterSessionRequest req;
  req.set_id(id_);
  spb::UnregisterSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(5));
  return FromGrpcStatus(SupervisorStub(socket_)->UnregisterSession(&cc, req, &resp));
}

absl::StatusOr<int> StopRegisteredSession(const std::string& runtime_dir, const std::string& id) {
  const std::string socket = ServiceSocketPath(runtime_dir, kSupervisorService);
  spb::StopSessionRequest req;
  req.set_id(id);
  spb::StopSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(5));
  const grpc::Status s = SupervisorStub(socket)->StopSession(&cc, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return absl::UnavailableError(absl::StrCat(
          "the supervisor does not answer on ", socket,
          "; a session whose supervisor is gone ends itself within seconds. Start it: lazaret "
          "up"));
    }
    return FromGrpcStatus(s);
  }
  return resp.pid();
}

}  // namespace lazaret::cli::session
