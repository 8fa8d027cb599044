// The sessions of one Lazaret instance (one runtime directory), found by
// their session directories and by the labels on their containers, for
// `lazaret ps`, `stop` and `clean`. Runs in the `lazaret` CLI, as the user.
// A session whose directory lock is held belongs to a live `lazaret run`;
// anything else is what a crashed or killed CLI left behind. Labels are
// Lazaret's own (podman reports them), but a container of another instance
// (another runtime directory) or with a malformed session id is ignored.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_LISTING_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_LISTING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli::session {

// Everything known about one session id.
struct SessionView {
  std::string id;
  std::string runtime_dir;  // of the instance it belongs to
  std::optional<FoundSession> dir;
  std::vector<ContainerInfo> containers;

  bool owner_alive() const { return dir.has_value() && dir->owner_alive; }
  // From session.json, else from a container's label; "?" when unknown.
  std::string profile() const;
  // Unix time: session.json's start, else the oldest container's creation.
  int64_t started() const;
  // podman's state of the container with `role`, or "-".
  std::string ContainerState(const char* role) const;
  // "orphaned" (no live owner), "running", "starting", or the sandbox's
  // podman state.
  std::string state() const;
};

// Sessions of the runtime directory `runtime_dir`, by id.
absl::StatusOr<std::map<std::string, SessionView>> CollectSessions(const std::string& runtime_dir);

// The session an argument names: the full id or a unique prefix.
absl::StatusOr<SessionView> FindSession(const std::map<std::string, SessionView>& all,
                                        const std::string& arg);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_LISTING_H_
