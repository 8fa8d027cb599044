// Files and directories editors, shells and version managers act on by
// themselves when a folder is opened, created or entered (`.vscode/`,
// `.envrc`, `.tool-versions`, ...). The end-of-session scan lists the ones
// the session created or changed, so the developer looks at them before
// opening the folder. Pure: a decision on one name the agent chose.
#ifndef LAZARET_CLIENTS_LAZARET_WORKSPACE_EDITOR_FILES_H_
#define LAZARET_CLIENTS_LAZARET_WORKSPACE_EDITOR_FILES_H_

#include <string>

namespace lazaret::cli::workspace {

// True for the names (one path component) the editor list watches.
bool IsEditorActedOnName(const std::string& name);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_CLIENTS_LAZARET_WORKSPACE_EDITOR_FILES_H_
