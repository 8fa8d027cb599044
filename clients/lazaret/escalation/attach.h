// A `lazaret run` session's escalation endpoint, attached and checked in
// one step before its sandbox exists. Runs in the `lazaret` CLI, as the
// user. Trusts lazaret-brokerd's answer only as far as CheckEndpoint
// (endpoint.h) confirms it.
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_ATTACH_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_ATTACH_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "clients/lazaret/escalation/endpoint.h"

namespace lazaret::cli::escalation {

// AttachSession{session_id} (at most kAttachTimeout), then CheckEndpoint
// against `expected_socket_dir` and `owner`. Every error reads "host
// escalation could not be set up: WHY; the sandbox was not started; set
// [escalation] enabled = false to run without it", keeping the broker's
// code. There is no fallback: the caller does not start the sandbox.
absl::StatusOr<CheckedEndpoint> AttachEndpoint(BrokerClient& broker, const std::string& session_id,
                                               const std::string& expected_socket_dir, uid_t owner);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_ATTACH_H_
