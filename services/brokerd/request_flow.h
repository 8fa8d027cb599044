// One connection from a sandbox, from accept to the last byte: the mTLS
// preflight, one request frame, the checks, auto-approval or a human's
// decision, the host command, the answer, the audit record. Runs in
// lazaret-brokerd (the user, no capabilities), one thread per connection.
// Everything read from the connection is the sandbox's; the order of the
// steps is the contract of docs/escalation.md "How a request is judged",
// and any step that fails ends the exchange with an answer that says why
// (or, before the preflight passed, by closing the connection unread).
#ifndef LAZARET_SERVICES_BROKERD_REQUEST_FLOW_H_
#define LAZARET_SERVICES_BROKERD_REQUEST_FLOW_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/brokerd/command/checked_command.h"
#include "services/brokerd/live_session.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd {

// How long a human's decision may take to reach the client before the
// broker stops trying to write the answer, beyond the approval timeout.
inline constexpr absl::Duration kAnswerSlack = absl::Seconds(30);

void ServeConnection(LiveSession& session, fs::UniqueFd conn);

// The approver's Edit, checked the way a request is (split, bare argv[0] on
// the fixed PATH, the request's working directory below its workspace); the
// checked command travels in EditedCommand::checked.
absl::StatusOr<EditedCommand> CheckEdit(const approver::v1::Edit& edit,
                                        const approver::v1::PendingRequest& pending);

// ParseCommand for the approver API: the broker's own reading of `command`,
// judged against `entries` when given.
approver::v1::ParseCommandResponse ParseForApprover(
    const std::string& command, const std::vector<command::AutoApproveEntry>* entries);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_REQUEST_FLOW_H_
