#include "services/sessiond/workspace/git_config.h"

#include <future>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/common/status_util.h"
#include "services/sessiond/gitshadow/git.h"

namespace lazaret::cli::workspace {

using lazaret::workspace::GitConfigEntry;

absl::StatusOr<std::vector<GitConfigEntry>> ParseGitConfigList(absl::string_view out) {
  std::vector<GitConfigEntry> entries;
  size_t i = 0;
  while (i < out.size()) {
    const size_t origin_end = out.find('\0', i);
    if (origin_end == absl::string_view::npos) {
      return absl::DataLossError(
          "git config --list -z printed an origin without its entry; the output was cut short");
    }
    const size_t entry_end = out.find('\0', origin_end + 1);
    if (entry_end == absl::string_view::npos) {
      return absl::DataLossError(
          "git config --list -z printed an entry without its terminator; the output was cut short");
    }
    GitConfigEntry e;
    e.origin = std::string(out.substr(i, origin_end - i));
    const absl::string_view kv = out.substr(origin_end + 1, entry_end - origin_end - 1);
    const size_t nl = kv.find('\n');
    if (nl == absl::string_view::npos) {
      e.key = std::string(kv);  // a key without "=": boolean true
    } else {
      e.key = std::string(kv.substr(0, nl));
      e.value = std::string(kv.substr(nl + 1));
    }
    i = entry_end + 1;
    // Lazaret's own overrides (gitshadow::GitSafetyOptions); the caller's
    // GIT_CONFIG_* variables are removed, so nothing else comes from there.
    if (absl::StartsWith(e.origin, "command line:")) continue;
    entries.push_back(std::move(e));
  }
  return entries;
}

namespace {

// Rootful, `lazaret run` is root and the repository is the developer's:
// git would call it "dubious ownership", treat the folder as no repository
// and list no repository config - the very config whose core.hooksPath the
// developer's own git obeys. Only config is read here (no hook, fsmonitor
// or other command runs for `config --list` or `rev-parse`), so trusting
// the directory for these two queries is safe. Command-line scope, so it
// is filtered out of the listing like Lazaret's other overrides.
const char* const kTrustForReading[] = {"-c", "safe.directory=*"};

}  // namespace

absl::StatusOr<HostGitConfig> ReadHostGitConfig(const std::string& dir) {
  // The top, which makes the origins absolute, meanwhile: two host git
  // runs cost one on the session's start path.
  std::future<absl::StatusOr<std::string>> top =
      std::async(std::launch::async, [&dir] { return HostWorktreeTop(dir); });
  absl::StatusOr<gitshadow::GitResult> r =
      gitshadow::RunGitRaw(dir,
                           {kTrustForReading[0], kTrustForReading[1], "config", "--list",
                            "--show-origin", "--includes", "-z"},
                           gitshadow::kGitQueryTimeout);
  HostGitConfig config;
  config.top = top.get();
  if (!r.ok()) {
    return absl::Status(r.status().code(), absl::StrCat("reading the host's git config from ", dir,
                                                        ": ", r.status().message()));
  }
  // Exit 1 with nothing printed: no config at all. Any other failure is
  // git refusing a config file (a syntax error, an unsafe directory); the
  // developer has to fix that for their own git too.
  if (r->exit_code != 0 && !(r->exit_code == 1 && r->out.empty())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "host git could not read its config from ", dir, " (exit ", r->exit_code, "): ",
        absl::StripAsciiWhitespace(r->err), "; fix the config so `git config --list` works there"));
  }
  LAZ_ASSIGN_OR_RETURN(config.entries, ParseGitConfigList(r->out));
  // git prints the origin of a file it found relative to its own working
  // directory (the top of the working tree, or `dir`) without a leading
  // '/'; make each absolute so callers need not know where git ran.
  const std::string base = config.top.ok() && !config.top->empty() ? *config.top : dir;
  for (GitConfigEntry& e : config.entries) {
    absl::string_view path = e.origin;
    if (absl::ConsumePrefix(&path, "file:") && !path.empty() && path[0] != '/') {
      e.origin = absl::StrCat("file:", base, "/", path);
    }
  }
  return config;
}

absl::StatusOr<std::string> HostWorktreeTop(const std::string& dir) {
  absl::StatusOr<gitshadow::GitResult> r = gitshadow::RunGitRaw(
      dir, {kTrustForReading[0], kTrustForReading[1], "rev-parse", "--show-toplevel"},
      gitshadow::kGitQueryTimeout);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return std::string();
  std::string out = r->out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace lazaret::cli::workspace
