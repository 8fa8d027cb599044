// The text of `lazaret state show`, `lazaret state reset` and the mount
// part of `lazaret clean`. Runs in the `lazaret` CLI; pure. The paths
// inside a persistent directory were written by the sandbox and are
// escaped for the terminal here (the rest comes from the helper and the
// configuration, escaped all the same).
#ifndef LAZARET_CLIENTS_LAZARET_PERSIST_STATE_FORMAT_H_
#define LAZARET_CLIENTS_LAZARET_PERSIST_STATE_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "lazaret/mounthelper/v1/mounthelper.pb.h"

namespace lazaret::cli::persist {

// 1023 -> "1023 B", 1536 -> "1.5 KiB", 5 << 30 -> "5.0 GiB".
std::string HumanBytes(uint64_t bytes);

// Per directory: its size, file count, upper layer, the changed and deleted
// samples with their totals, and which sessions mount it.
std::string StateText(const ::lazaret::mounthelper::v1::DescribeStateResponse& state);

// The same as JSON (proto field names, every field printed).
absl::StatusOr<std::string> StateJson(const ::lazaret::mounthelper::v1::DescribeStateResponse& s);

// What a reset of `directory` (empty: every one) of the profile drops, for
// the confirmation question: "the changes to /usr (12.0 MiB, 340 files)".
std::string ResetQuestion(const ::lazaret::mounthelper::v1::DescribeStateResponse& state,
                          const std::string& directory);

// One line per overlay Cleanup unmounted ("unmounted <profile> <D> (<merged>)").
std::string CleanupText(const ::lazaret::mounthelper::v1::CleanupResponse& cleanup);

}  // namespace lazaret::cli::persist

#endif  // LAZARET_CLIENTS_LAZARET_PERSIST_STATE_FORMAT_H_
