#include "services/sessiond/spare.h"

#include <limits.h>
#include <stdlib.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "services/sessiond/session/run_args.h"

namespace lazaret::sessiond {
namespace {

namespace pb = ::lazaret::session::v1;

struct Selection {
  std::string explicit_config;  // canonical when it resolves
  std::string profile;
};

std::optional<Selection> Select(const pb::StartRequest& request) {
  if (request.workspace_dir().empty() || request.workspace_dir()[0] != '/') return std::nullopt;
  absl::StatusOr<cli::session::RunArgs> args = cli::session::ParseRunArgs(
      {request.args().begin(), request.args().end()}, request.workspace_dir());
  if (!args.ok() || args->help || args->dry_run) return std::nullopt;
  Selection s;
  s.profile = args->profile;
  s.explicit_config = args->explicit_config;
  // As the worker does: the file by its canonical path.
  if (char resolved[PATH_MAX]; !s.explicit_config.empty() &&
                               realpath(s.explicit_config.c_str(), resolved) != nullptr) {
    s.explicit_config = resolved;
  }
  return s;
}

}  // namespace

std::optional<std::string> SpareKey(const pb::StartRequest& request) {
  if (request.spare()) return std::nullopt;
  std::optional<Selection> s = Select(request);
  if (!s.has_value()) return std::nullopt;
  // Length-prefixed parts: no two different selections share a key.
  std::string key;
  auto add = [&key](const std::string& part) { absl::StrAppend(&key, part.size(), ":", part); };
  add(request.workspace_dir());
  add(s->explicit_config);
  add(s->profile);
  for (const char* name : kSpareEnv) {
    auto it = request.env().find(name);
    add(it == request.env().end() ? std::string("-") : absl::StrCat("=", it->second));
  }
  return key;
}

pb::StartRequest SpareRequest(const pb::StartRequest& request) {
  pb::StartRequest spare;
  spare.set_spare(true);
  spare.set_workspace_dir(request.workspace_dir());
  if (std::optional<Selection> s = Select(request); s.has_value()) {
    if (!s->explicit_config.empty()) {
      spare.add_args("--config");
      spare.add_args(s->explicit_config);
    }
    if (!s->profile.empty()) spare.add_args(s->profile);
  }
  for (const char* name : kSpareEnv) {
    if (auto it = request.env().find(name); it != request.env().end()) {
      (*spare.mutable_env())[name] = it->second;
    }
  }
  return spare;
}

}  // namespace lazaret::sessiond
