#include "clients/lazaret/escalation/attach.h"

#include "absl/strings/str_cat.h"

namespace lazaret::cli::escalation {
namespace {

absl::Status NotSetUp(const absl::Status& why) {
  return absl::Status(why.code(),
                      absl::StrCat("host escalation could not be set up: ", why.message(),
                                   "; the sandbox was not started; set [escalation] enabled = "
                                   "false to run without it"));
}

}  // namespace

absl::StatusOr<CheckedEndpoint> AttachEndpoint(BrokerClient& broker, const std::string& session_id,
                                               const std::string& expected_socket_dir,
                                               uid_t owner) {
  absl::StatusOr<::lazaret::broker::v1::Endpoint> answer = broker.AttachSession(session_id);
  if (!answer.ok()) return NotSetUp(answer.status());
  absl::StatusOr<CheckedEndpoint> endpoint =
      CheckEndpoint(*answer, session_id, expected_socket_dir, owner);
  if (!endpoint.ok()) return NotSetUp(endpoint.status());
  return endpoint;
}

}  // namespace lazaret::cli::escalation
