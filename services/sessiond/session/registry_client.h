// The session owner's side of the supervisor's session registry
// (services/supervisor/registry.h): the session worker registers its
// session before anything of it exists, and a stop may ask the supervisor
// to end a session. Runs in the session worker (lazaret-sessiond
// --session-worker), as the user; the supervisor
// answers on its socket in the private runtime directory, and trusts the
// connection's peer (it takes a pidfd of this process from it), not what
// this side says about itself.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_REGISTRY_CLIENT_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_REGISTRY_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli::session {

// This session's entry in the supervisor's session registry, from the
// owning `lazaret run` (services/supervisor/registry.h). The supervisor
// watches this process through a pidfd it takes from the connection itself
// and reaps the session the moment the process is gone.
class SessionRegistration {
 public:
  // RegisterSession; refused (fail closed) when the supervisor is not up or
  // does not accept the record. The error says why and what to do.
  static absl::StatusOr<std::unique_ptr<SessionRegistration>> Register(
      const std::string& runtime_dir, const SessionRecord& record);
  // AttachSessionRouter: the supervisor holds the router once this is OK.
  absl::Status AttachRouter();
  // GetSession: OK while the supervisor still knows the session.
  absl::Status Check();
  // UnregisterSession, once the session is torn down and written back.
  absl::Status Unregister();

 private:
  SessionRegistration(std::string socket, std::string id)
      : socket_(std::move(socket)), id_(std::move(id)) {}
  std::string socket_;
  std::string id_;
};

// StopSession: asks the owner of a registered session to end it, through
// the supervisor (which signals it by pidfd). Returns the owner's pid.
absl::StatusOr<int> StopRegisteredSession(const std::string& runtime_dir, const std::string& id);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_REGISTRY_CLIENT_H_
