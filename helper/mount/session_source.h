// What the mount helper asks Lazaret's own services: a session's profile
// (the supervisor's registry, then configd, exactly as lazaret-brokerd
// does), whether a session is still live, and a profile by name. Behind an
// interface so the bookkeeping can be tested with a fake registry. Runs in
// lazaret-mount-helper. A session id is checked before it names anything;
// the profile and its paths come from configd, never from the caller.
#ifndef LAZARET_HELPER_MOUNT_SESSION_SOURCE_H_
#define LAZARET_HELPER_MOUNT_SESSION_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::mounthelper {

// Which profile, resolved as `lazaret run` in `workspace` with --config
// `explicit_config` resolves it (an empty name: the default profile; an
// empty workspace: the user's own configuration layers only).
struct ProfileQuery {
  std::string name;
  std::string workspace;        // absolute, or empty
  std::string explicit_config;  // absolute, or empty
};

struct ProfileFacts {
  std::string name;
  std::string data_root;
  std::string profile_dir;
  std::vector<std::string> persistent_dirs;
  // The size cap of the profile's persistent data (configd's
  // persistent_cap_bytes, the default already applied).
  uint64_t persistent_cap_bytes = 0;
};

class SessionSource {
 public:
  virtual ~SessionSource() = default;
  // The profile of a live (registered or attached) session;
  // FAILED_PRECONDITION for one being reaped, NOT_FOUND for an unknown one.
  virtual absl::StatusOr<ProfileFacts> ProfileOfSession(const std::string& session_id) = 0;
  // false when the registry no longer has the session or is reaping it; an
  // error when the registry cannot be asked.
  virtual absl::StatusOr<bool> IsLive(const std::string& session_id) = 0;
  // The profile `query` names; INVALID_ARGUMENT for a path that is not
  // absolute and clean.
  virtual absl::StatusOr<ProfileFacts> Profile(const ProfileQuery& query) = 0;
};

// Over <runtime_dir>/supervisor.sock and configd.sock.
std::unique_ptr<SessionSource> MakeRegistrySessionSource(const std::string& runtime_dir);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_SESSION_SOURCE_H_
