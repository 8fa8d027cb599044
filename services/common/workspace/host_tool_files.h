// The names of files and directories that host tools act on by themselves
// when a folder is opened, created, entered or used: editors and IDEs
// (`.vscode/`, `.idea/`), shells and environment managers that act on `cd`
// (`.envrc`, `.tool-versions`), and git's own files in a working tree
// (`.gitattributes`, `.gitmodules`). A file of this list that a session wrote
// can make a host program run the agent's code, so two processes look for
// them: the `lazaret` CLI's end-of-session scan lists the ones the session
// created or changed, and lazaret-brokerd refuses to auto-approve an
// escalation aimed at a directory holding one (docs/escalation.md "Planted
// code"). Pure: a decision on one name (one path component) the agent
// chose; no I/O.
#ifndef LAZARET_SERVICES_COMMON_WORKSPACE_HOST_TOOL_FILES_H_
#define LAZARET_SERVICES_COMMON_WORKSPACE_HOST_TOOL_FILES_H_

#include "absl/strings/string_view.h"

namespace lazaret::workspace {

// True for the names the list holds.
bool IsHostToolActedOnName(absl::string_view name);

}  // namespace lazaret::workspace

#endif  // LAZARET_SERVICES_COMMON_WORKSPACE_HOST_TOOL_FILES_H_
