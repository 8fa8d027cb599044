#include "clients/lazaret/persist/state_args.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace lazaret::cli::persist {

absl::StatusOr<StateArgs> ParseStateArgs(const std::vector<std::string>& args,
                                         const std::string& cwd) {
  if (args.empty()) return absl::InvalidArgumentError("missing show or reset");
  StateArgs out;
  if (args[0] == "show") {
    out.verb = StateArgs::Verb::kShow;
  } else if (args[0] == "reset") {
    out.verb = StateArgs::Verb::kReset;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown state command '", args[0], "'"));
  }
  const bool show = out.verb == StateArgs::Verb::kShow;
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (show && a == "--json") {
      out.json = true;
    } else if (!show && a == "--yes") {
      out.yes = true;
    } else if (a == "--config" || absl::StartsWith(a, "--config=")) {
      if (a == "--config") {
        if (i + 1 >= args.size()) return absl::InvalidArgumentError("--config needs a FILE");
        out.explicit_config = args[++i];
      } else {
        out.explicit_config = a.substr(strlen("--config="));
      }
      if (out.explicit_config.empty()) {
        return absl::InvalidArgumentError("--config needs a FILE");
      }
      if (out.explicit_config[0] != '/') {
        if (cwd.empty()) {
          return absl::InvalidArgumentError(
              "--config FILE is relative and the current directory cannot be read; give its "
              "absolute path");
        }
        out.explicit_config = absl::StrCat(cwd, "/", out.explicit_config);
      }
    } else if (a == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    } else if (absl::StartsWith(a, "-")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", a, "' for lazaret state ", args[0]));
    } else {
      positional.push_back(a);
    }
  }
  if (show) {
    if (positional.size() > 1) {
      return absl::InvalidArgumentError("lazaret state show takes at most one PROFILE");
    }
    if (!positional.empty()) out.profile = positional[0];
    return out;
  }
  if (positional.empty()) {
    return absl::InvalidArgumentError(
        "lazaret state reset needs the PROFILE (reset never guesses which profile to empty)");
  }
  if (positional.size() > 2) {
    return absl::InvalidArgumentError("lazaret state reset takes a PROFILE and at most one DIR");
  }
  out.profile = positional[0];
  if (positional.size() == 2) {
    out.directory = positional[1];
    if (!absl::StartsWith(out.directory, "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("DIR '", out.directory,
                       "' must be the absolute path inside the sandbox, as persistent_dirs "
                       "lists it (e.g. /usr)"));
    }
  }
  return out;
}

}  // namespace lazaret::cli::persist
