#include "services/common/workspace/host_tool_files.h"

#include <set>
#include <string>

#include "absl/strings/match.h"

namespace lazaret::workspace {

bool IsHostToolActedOnName(absl::string_view name) {
  static const std::set<std::string, std::less<>>* const kNames =
      new std::set<std::string, std::less<>>{
          // Editors and IDEs: workspace settings, tasks, launch
          // configurations, recommended extensions, dev containers,
          // per-directory scripts.
          ".vscode", ".idea", ".fleet", ".zed", ".devcontainer", ".devcontainer.json",
          ".editorconfig", ".exrc", ".nvimrc", ".nvim.lua", ".dir-locals.el", ".dir-locals-2.el",
          // Shells and environment managers that act on `cd`.
          ".envrc", ".direnv", ".env", ".flaskenv", ".nvmrc", ".node-version", ".tool-versions",
          ".python-version", ".ruby-version", ".java-version", ".sdkmanrc", ".mise.toml",
          "mise.toml", ".rtx.toml", ".autoenv", ".autoenv.zsh", ".autoenv_leave",
          // Git files in the working tree (attributes select filter and diff
          // drivers; submodule settings; hook managers).
          ".gitattributes", ".gitmodules", ".lfsconfig", ".pre-commit-config.yaml", ".husky"};
  if (kNames->find(name) != kNames->end()) return true;
  if (absl::StartsWith(name, ".env.")) return true;
  return absl::EndsWith(name, ".code-workspace") || absl::EndsWith(name, ".sublime-project");
}

}  // namespace lazaret::workspace
