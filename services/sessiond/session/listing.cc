#include "services/sessiond/session/listing.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/session/names.h"

namespace lazaret::cli::session {

std::string SessionView::profile() const {
  if (dir.has_value() && dir->has_record) return dir->record.profile;
  for (const auto& c : containers) {
    if (!c.profile.empty()) return c.profile;
  }
  return "?";
}

int64_t SessionView::started() const {
  if (dir.has_value() && dir->has_record) return dir->record.started_unix;
  int64_t t = 0;
  for (const auto& c : containers) {
    if (t == 0 || (c.created_unix != 0 && c.created_unix < t)) t = c.created_unix;
  }
  return t;
}

std::string SessionView::ContainerState(const char* role) const {
  for (const auto& c : containers) {
    if (c.role == role) return c.state;
  }
  return "-";
}

std::string SessionView::state() const {
  if (!owner_alive()) return "orphaned";
  const std::string sandbox = ContainerState(kRoleSandbox);
  if (sandbox == "running") return "running";
  if (sandbox == "-") return "starting";
  return sandbox;
}

absl::StatusOr<std::map<std::string, SessionView>> CollectSessions(const std::string& runtime_dir) {
  std::map<std::string, SessionView> out;
  absl::StatusOr<std::vector<FoundSession>> dirs = FindSessionDirs(runtime_dir);
  if (!dirs.ok()) return dirs.status();
  for (FoundSession& d : *dirs) {
    SessionView& v = out[d.id];
    v.id = d.id;
    v.runtime_dir = runtime_dir;
    v.dir = std::move(d);
  }
  absl::StatusOr<std::vector<ContainerInfo>> containers = ListLazaretContainers();
  if (!containers.ok()) return containers.status();
  for (ContainerInfo& c : *containers) {
    // Another instance's container (another runtime directory): not ours.
    if (c.runtime_dir != runtime_dir || !IsValidSessionId(c.session)) continue;
    SessionView& v = out[c.session];
    v.id = c.session;
    v.runtime_dir = runtime_dir;
    v.containers.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<SessionView> FindSession(const std::map<std::string, SessionView>& all,
                                        const std::string& arg) {
  std::vector<const SessionView*> hits;
  for (const auto& [id, v] : all) {
    if (absl::StartsWith(id, arg)) hits.push_back(&v);
  }
  if (arg.empty() || hits.empty()) {
    return absl::NotFoundError(absl::StrCat("no session '", arg, "' (see: lazaret ps)"));
  }
  if (hits.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", arg, "' matches ", hits.size(), " sessions; give more of the id"));
  }
  return *hits[0];
}

}  // namespace lazaret::cli::session
