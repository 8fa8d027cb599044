// The arguments of `lazaret config check|show` and `lazaret trust`. Runs in
// the user's terminal; the arguments are the user's own. Relative paths are
// made absolute against the current directory, which is also the workspace.
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_OPTIONS_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::cli::config {

// The current directory, or empty when it cannot be read.
std::string Cwd();

// `path` if absolute, else <Cwd()>/<path>.
std::string Absolute(const std::string& path);

struct ConfigArgs {
  std::string explicit_config;  // absolute, or empty
  std::string profile;
  bool json = false;
};

// Parses the options of `config check|show` in args[from...]; `show` allows
// --profile and --json. The error names the argument that is wrong.
absl::StatusOr<ConfigArgs> ParseConfigArgs(const std::vector<std::string>& args, size_t from,
                                           bool show);

struct TrustArgs {
  bool revoke = false;
  std::string expected_sha256;  // lowercased as given; empty when not given
  std::string file;             // as given; default ./lazaret.toml
};

// Parses the arguments of `lazaret trust`: --revoke, --sha256 HASH (or
// --sha256=HASH) and at most one FILE. The error names (escaped for the
// terminal) the argument that is unexpected. Does not check the hash.
absl::StatusOr<TrustArgs> ParseTrustArgs(const std::vector<std::string>& args);

// 64 lowercase hex digits, the form `lazaret trust` shows a sha256 in.
bool IsSha256Hex(absl::string_view s);

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_OPTIONS_H_
