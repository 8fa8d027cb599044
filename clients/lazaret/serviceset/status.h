// Asking the supervisor of this user's service set how it is, and showing
// the answer. Runs in the `lazaret` CLI, as the user; the answer comes from
// the user's own supervisor over its socket in the private runtime
// directory.
#ifndef LAZARET_CLIENTS_LAZARET_SERVICESET_STATUS_H_
#define LAZARET_CLIENTS_LAZARET_SERVICESET_STATUS_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"

namespace lazaret::cli::serviceset {

// The supervisor's socket in `runtime_dir`.
std::string SupervisorSocket(const std::string& runtime_dir);

// GetStatus from the supervisor, within `timeout`.
absl::StatusOr<supervisor::v1::GetStatusResponse> QueryStatus(const std::string& runtime_dir,
                                                              std::chrono::milliseconds timeout);

// The table `lazaret status` and `lazaret up` print, on stdout.
void PrintStatusTable(const supervisor::v1::GetStatusResponse& st);

// `lazaret status --json`: every field, with the proto's field names.
absl::StatusOr<std::string> StatusJson(const supervisor::v1::GetStatusResponse& st);

}  // namespace lazaret::cli::serviceset

#endif  // LAZARET_CLIENTS_LAZARET_SERVICESET_STATUS_H_
