// `lazaret state show [PROFILE] [--json]` and `lazaret state reset PROFILE
// [DIR]`: a profile's persistent directories as lazaret-mount-helper
// describes them, and emptying their upper layers (docs/persistence.md).
// Runs in the user's terminal; what the sandbox wrote is escaped
// (persist/state_format.h).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/config/configd_client.h"
#include "clients/lazaret/config/terminal_text.h"
#include "clients/lazaret/persist/mount_client.h"
#include "clients/lazaret/persist/state_args.h"
#include "clients/lazaret/persist/state_format.h"
#include "lazaret/config/v1/config.grpc.pb.h"

namespace lazaret::cli {
namespace {

namespace mpb = ::lazaret::mounthelper::v1;
using persist::StateArgs;

int Fail(const char* verb, const absl::Status& s) {
  std::fprintf(stderr, "lazaret state %s: %s\n", verb, std::string(s.message()).c_str());
  return 1;
}

// The default profile of the user's own configuration (no workspace), as
// lazaret-configd names it.
absl::StatusOr<std::string> DefaultProfile(const Context& ctx) {
  config::ConfigdClient configd(ctx.runtime_dir);
  ::lazaret::config::v1::ListProfilesRequest req;
  ::lazaret::config::v1::ListProfilesResponse resp;
  const grpc::Status s = configd.ListProfiles(req, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "the default profile could not be read from lazaret-configd on ", configd.socket(), " (",
        s.error_message(), "); name the profile, or start Lazaret: lazaret up"));
  }
  return resp.default_profile();
}

int Show(const Context& ctx, const StateArgs& a) {
  std::string profile = a.profile;
  if (profile.empty()) {
    absl::StatusOr<std::string> d = DefaultProfile(ctx);
    if (!d.ok()) return Fail("show", d.status());
    profile = *d;
  }
  persist::MountClient client(persist::MountHelperSocket(ctx.runtime_dir));
  absl::StatusOr<mpb::DescribeStateResponse> state = client.DescribeState(profile);
  if (!state.ok()) return Fail("show", state.status());
  if (a.json) {
    absl::StatusOr<std::string> j = persist::StateJson(*state);
    if (!j.ok()) return Fail("show", j.status());
    std::printf("%s\n", j->c_str());
  } else {
    std::fputs(persist::StateText(*state).c_str(), stdout);
  }
  return 0;
}

// y or yes on the terminal; anything else (or end of input) is no.
bool Confirmed(const std::string& question) {
  std::fprintf(stderr, "%s.\nReset? [y/N] ", question.c_str());
  std::fflush(stderr);
  char line[64] = {};
  if (std::fgets(line, sizeof(line), stdin) == nullptr) return false;
  const std::string answer(line);
  return answer == "y\n" || answer == "Y\n" || answer == "yes\n" || answer == "YES\n";
}

int Reset(const Context& ctx, const StateArgs& a) {
  persist::MountClient client(persist::MountHelperSocket(ctx.runtime_dir));
  if (!a.yes) {
    if (isatty(STDIN_FILENO) != 1) {
      std::fprintf(stderr,
                   "lazaret state reset: not on a terminal, so nothing can be confirmed; to "
                   "drop the changes without a question, add --yes\n");
      return 2;
    }
    absl::StatusOr<mpb::DescribeStateResponse> state = client.DescribeState(a.profile);
    if (!state.ok()) return Fail("reset", state.status());
    bool known = a.directory.empty();
    for (const auto& d : state->directories()) known = known || d.directory() == a.directory;
    if (!known || state->directories().empty()) {
      std::fprintf(stderr, "lazaret state reset: %s\n",
                   persist::ResetQuestion(*state, a.directory).c_str());
      return 1;
    }
    if (!Confirmed(persist::ResetQuestion(*state, a.directory))) {
      std::fprintf(stderr, "Nothing was reset.\n");
      return 1;
    }
  }
  absl::StatusOr<mpb::ResetStateResponse> r = client.ResetState(a.profile, a.directory);
  if (!r.ok()) return Fail("reset", r.status());
  if (r->reset().empty()) {
    std::printf("Nothing to reset: profile %s has no persistent directories.\n",
                config::EscapeForTerminal(a.profile).c_str());
    return 0;
  }
  std::vector<std::string> dirs;
  for (const std::string& d : r->reset()) dirs.push_back(config::EscapeForTerminal(d));
  std::printf("Reset %s of profile %s: the next session starts from the image's content.\n",
              absl::StrJoin(dirs, ", ").c_str(), config::EscapeForTerminal(a.profile).c_str());
  return 0;
}

}  // namespace

int CmdState(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(persist::kStateUsage, stdout);
    return 0;
  }
  absl::StatusOr<StateArgs> a = persist::ParseStateArgs(args);
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret state: %s\n%s", std::string(a.status().message()).c_str(),
                 persist::kStateUsage);
    return 2;
  }
  return a->verb == StateArgs::Verb::kShow ? Show(ctx, *a) : Reset(ctx, *a);
}

}  // namespace lazaret::cli
