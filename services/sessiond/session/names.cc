#include "services/sessiond/session/names.h"

#include "absl/strings/str_cat.h"

namespace lazaret::cli::session {

std::string SidecarName(const std::string& id) { return absl::StrCat("lazaret-", id, "-sidecar"); }
std::string SandboxName(const std::string& id) { return absl::StrCat("lazaret-", id, "-sandbox"); }

}  // namespace lazaret::cli::session
