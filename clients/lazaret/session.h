// A `lazaret run` session on the host: its id, its private directory under
// the runtime directory and the names and labels of its two containers.
// Runs in the `lazaret` CLI (run, ps, stop, clean). The session directory is
// created 0700 by the CLI and trusted as the CLI's own; the router socket
// inside it is created by the sidecar (container root = the user when
// rootless, root when rootful).
//
//   <runtime_dir>/sessions/<id>/          0700
//     lock          flock()ed by the owning `lazaret run` for its lifetime
//     session.json  who owns it, profile, workspace, Git Shadow state dir
//     env           0600, the sandbox environment (podman --env-file)
//     router/       0700, bind-mounted into the sidecar at /run/lazaret/router
//       router.sock the sidecar's gRPC socket (grpc.health.v1, NetRouterService)
#ifndef LAZARET_CLIENTS_LAZARET_SESSION_H_
#define LAZARET_CLIENTS_LAZARET_SESSION_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/session_id.h"

namespace lazaret::cli {

// Labels on both containers of a session.
inline constexpr char kLabelProfile[] = "io.lazaret.profile";
inline constexpr char kLabelSession[] = "io.lazaret.session";
inline constexpr char kLabelRole[] = "io.lazaret.role";
// The runtime directory of the Lazaret instance that created the container,
// so that `clean` of one instance (another LAZARET_RUNTIME_DIR, a test)
// never reaps the live sessions of another.
inline constexpr char kLabelRuntimeDir[] = "io.lazaret.runtime-dir";
inline constexpr char kRoleSidecar[] = "sidecar";
inline constexpr char kRoleSandbox[] = "sandbox";

// Inside the sidecar.
inline constexpr char kSidecarRouterDir[] = "/run/lazaret/router";
inline constexpr char kSidecarRouterSocket[] = "/run/lazaret/router/router.sock";

// 12 lowercase hex digits from getrandom().
std::string NewSessionId();
using ::lazaret::IsValidSessionId;  // services/common/session_id.h

std::string SidecarName(const std::string& id);  // lazaret-<id>-sidecar
std::string SandboxName(const std::string& id);  // lazaret-<id>-sandbox
std::string SessionsDir(const std::string& runtime_dir);
std::string SessionPath(const std::string& runtime_dir, const std::string& id);

// What session.json records.
struct SessionRecord {
  std::string id;
  std::string profile;
  std::string workspace;
  std::string git_state_dir;  // <profile_dir>/git; WriteBackAll target for `clean`
  pid_t pid = 0;              // the owning `lazaret run`
  int64_t started_unix = 0;
};

std::string SessionRecordJson(const SessionRecord& record);
absl::StatusOr<SessionRecord> ParseSessionRecord(const std::string& json);

// The session directory of a running `lazaret run`. Created with its lock
// held; Remove() deletes everything in it (env file, router socket) and the
// directory itself.
class SessionDir {
 public:
  static absl::StatusOr<std::unique_ptr<SessionDir>> Create(const std::string& runtime_dir,
                                                            const SessionRecord& record);
  ~SessionDir();
  SessionDir(const SessionDir&) = delete;
  SessionDir& operator=(const SessionDir&) = delete;

  const std::string& path() const { return path_; }
  std::string env_file() const { return path_ + "/env"; }
  std::string router_dir() const { return path_ + "/router"; }
  std::string router_socket() const { return path_ + "/router/router.sock"; }

  // Writes the env file, mode 0600, refusing to follow or replace anything.
  absl::Status WriteEnvFile(const std::string& text);
  // Removes the directory tree and releases the lock. Idempotent.
  absl::Status Remove();

 private:
  SessionDir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}
  std::string path_;
  int lock_fd_;
  bool removed_ = false;
};

// This session's entry in the supervisor's session registry, from the
// owning `lazaret run` (services/supervisor/registry.h). The supervisor
// watches this process through a pidfd it takes from the connection itself
// and reaps the session the moment the process is gone.
class SessionRegistration {
 public:
  // RegisterSession; refused (fail closed) when the supervisor is not up or
  // does not accept the record. The error says why and what to do.
  static absl::StatusOr<std::unique_ptr<SessionRegistration>> Register(
      const std::string& runtime_dir, const SessionRecord& record);
  // AttachSessionRouter: the supervisor holds the router once this is OK.
  absl::Status AttachRouter();
  // GetSession: OK while the supervisor still knows the session.
  absl::Status Check();
  // UnregisterSession, once the session is torn down and written back.
  absl::Status Unregister();

 private:
  SessionRegistration(std::string socket, std::string id)
      : socket_(std::move(socket)), id_(std::move(id)) {}
  std::string socket_;
  std::string id_;
};

// StopSession: asks the owner of a registered session to end it, through
// the supervisor (which signals it by pidfd). Returns the owner's pid.
absl::StatusOr<int> StopRegisteredSession(const std::string& runtime_dir, const std::string& id);

// A session directory found on disk.
struct FoundSession {
  std::string id;
  std::string path;
  bool owner_alive = false;  // its lock is held
  bool has_record = false;
  SessionRecord record;
};

// Every session directory under <runtime_dir>/sessions. A missing sessions
// directory gives an empty list.
absl::StatusOr<std::vector<FoundSession>> FindSessionDirs(const std::string& runtime_dir);

// True while some process holds the lock of the session directory `path`.
bool SessionOwnerAlive(const std::string& path);

// Removes a session directory tree without following symlinks.
absl::Status RemoveSessionTree(const std::string& path);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_SESSION_H_
