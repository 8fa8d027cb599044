// Turning the resolved configuration's auto_approve entries into the
// session's AutoApproveEntry list. Runs in lazaret-brokerd (no
// capabilities) at session start. The entries come from lazaret-configd,
// which applied the listing rule (services/vocab/auto_approve.h); they are
// checked again here, since an entry is the one thing that lets a command
// run without a human.
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_ENTRIES_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_ENTRIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/brokerd/command/matcher.h"
#include "services/brokerd/command/resolve.h"

namespace lazaret::brokerd::command {

// Resolves each entry's argv[0] on `search_path` (kBrokerPath outside
// tests) and records the file it is now. An entry whose command is not on
// the PATH is dropped with a warning appended to `warnings` (may be null).
// An entry that could never have passed the listing rule (empty argv,
// argv[0] not a bare name, an element with a character ScanText finds) is
// an error: InvalidArgument naming it.
absl::StatusOr<std::vector<AutoApproveEntry>> ResolveEntries(
    const lazaret::config::v1::EscalationPolicy& policy, std::vector<std::string>* warnings,
    absl::string_view search_path = kBrokerPath);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_ENTRIES_H_
