// `lazaret state show [PROFILE] [--json]` and `lazaret state reset PROFILE
// [DIR] [--yes]`, both with [--config FILE]: a profile's persistent directories as
// lazaret-mount-helper describes them, and emptying their upper layers
// (docs/persistence.md). The profile is the one `lazaret run` would use in
// the current directory with that --config; the helper resolves it through
// configd from these two paths. Runs in the user's terminal; what the
// sandbox wrote is escaped (persist/state_format.h).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/config/options.h"
#include "clients/lazaret/persist/mount_client.h"
#include "clients/lazaret/persist/state_args.h"
#include "clients/lazaret/persist/state_format.h"
#include "services/vocab/escape.h"

namespace lazaret::cli {
namespace {

namespace mpb = ::lazaret::mounthelper::v1;
using persist::StateArgs;

int Fail(const char* verb, const absl::Status& s) {
  std::fprintf(stderr, "lazaret state %s: %s\n", verb, std::string(s.message()).c_str());
  return 1;
}

// `path` with every symlink resolved; `path` itself when it cannot be.
std::string RealPathOr(const std::string& path) {
  char resolved[PATH_MAX];
  if (path.empty() || realpath(path.c_str(), resolved) == nullptr) return path;
  return resolved;
}

// The current directory as `lazaret run` takes it for the workspace
// (canonical); empty when it cannot be read (deleted, no permission): the
// profile is then resolved from the user's own configuration alone.
std::string Workspace() {
  char resolved[PATH_MAX];
  if (realpath(".", resolved) == nullptr) return "";
  return resolved;
}

struct Described {
  std::string workspace;  // the one the profile was resolved for; empty: none
  std::string explicit_config;
  mpb::DescribeStateResponse state;
};

// The state of the profile `lazaret run` in the current directory (with
// --config FILE) would use. Where configd refuses the current directory as
// a workspace (it is /, or holds the user's configuration or data_root),
// the profile of the user's own configuration (and --config FILE) instead,
// with a note: unlike `run`, `state` works from any directory.
absl::StatusOr<Described> DescribeHere(persist::MountClient& client, const char* verb,
                                       const StateArgs& a) {
  Described d{Workspace(), RealPathOr(a.explicit_config), {}};
  absl::StatusOr<mpb::DescribeStateResponse> s =
      client.DescribeState(a.profile, d.workspace, d.explicit_config);
  if (!s.ok() && !d.workspace.empty() && !absl::IsUnavailable(s.status()) &&
      !absl::IsDeadlineExceeded(s.status()) && !absl::IsUnimplemented(s.status())) {
    absl::StatusOr<mpb::DescribeStateResponse> own =
        client.DescribeState(a.profile, "", d.explicit_config);
    if (own.ok()) {
      // configd's message has a heading line and one line per problem.
      const std::string why = absl::StrJoin(
          absl::StrSplit(s.status().message(), '\n', absl::SkipWhitespace()), " ");
      std::fprintf(stderr,
                   "lazaret state %s: note: %s is no workspace `lazaret run` accepts (%s); the "
                   "profile is %s's from your own configuration%s\n",
                   verb, vocab::EscapeForTerminal(d.workspace).c_str(),
                   vocab::EscapeForTerminal(why).c_str(),
                   vocab::EscapeForTerminal(own->profile()).c_str(),
                   d.explicit_config.empty() ? "" : " and --config");
      d.workspace.clear();
      s = std::move(own);
    }
  }
  if (!s.ok()) return s.status();
  d.state = std::move(*s);
  return d;
}

int Show(const Context& ctx, const StateArgs& a) {
  persist::MountClient client(persist::MountHelperSocket(ctx.runtime_dir));
  absl::StatusOr<Described> d = DescribeHere(client, "show", a);
  if (!d.ok()) return Fail("show", d.status());
  const mpb::DescribeStateResponse* state = &d->state;
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
  if (!a.yes && isatty(STDIN_FILENO) != 1) {
    std::fprintf(stderr,
                 "lazaret state reset: not on a terminal, so nothing can be confirmed; to "
                 "drop the changes without a question, add --yes\n");
    return 2;
  }
  // Which workspace (if any) the profile is resolved for, as show does.
  absl::StatusOr<Described> d = DescribeHere(client, "reset", a);
  if (!d.ok()) return Fail("reset", d.status());
  if (!a.yes) {
    const mpb::DescribeStateResponse* state = &d->state;
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
  absl::StatusOr<mpb::ResetStateResponse> r =
      client.ResetState(a.profile, a.directory, d->workspace, d->explicit_config);
  if (!r.ok()) return Fail("reset", r.status());
  if (r->reset().empty()) {
    std::printf("Nothing to reset: profile %s has no persistent directories.\n",
                vocab::EscapeForTerminal(a.profile).c_str());
    return 0;
  }
  std::vector<std::string> dirs;
  for (const std::string& d : r->reset()) dirs.push_back(vocab::EscapeForTerminal(d));
  std::printf("Reset %s of profile %s: the next session starts from the image's content.\n",
              absl::StrJoin(dirs, ", ").c_str(), vocab::EscapeForTerminal(a.profile).c_str());
  return 0;
}

}  // namespace

int CmdState(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(persist::kStateUsage, stdout);
    return 0;
  }
  absl::StatusOr<StateArgs> a = persist::ParseStateArgs(args, config::Cwd());
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret state: %s\n%s", std::string(a.status().message()).c_str(),
                 persist::kStateUsage);
    return 2;
  }
  return a->verb == StateArgs::Verb::kShow ? Show(ctx, *a) : Reset(ctx, *a);
}

}  // namespace lazaret::cli
