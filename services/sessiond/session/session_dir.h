// A session on the host: its id and its private directory under the
// runtime directory. Runs in the session worker (which creates it 0700 and
// owns it), lazaret-sessiond's reap and the `lazaret` CLI (ps, net, port,
// held), all as the user; the directory is trusted as the user's own; the
// router socket inside it is created by the sidecar (container root = the
// user when rootless, root when rootful).
//
//   <runtime_dir>/sessions/<id>/          0700
//     lock          flock()ed by the owning session worker for its lifetime
//     session.json  who owns it, profile, workspace, Git Shadow state dir
//     env           0600, the sandbox environment (podman --env-file)
//     attach.sock   the worker's AttachService (attach_service.h), 0600
//     trace.json    0600, runsc's pod-init-config: the connect trace point
//                   and its sink (trace_config.h)
//     trace.sock    lazaret-netpolicyd's trace socket, 0600, bound at attach
//     workspace-scan the git directories before the sandbox started
//                   (workspace/snapshot.h), for `lazaret clean`
//     held/         0700, the held views (held/view.h): units, view/, base/
//     router/       0700, bind-mounted into the sidecar at /run/lazaret/router
//       router.sock the sidecar's gRPC socket (grpc.health.v1, NetRouterService)
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SESSION_DIR_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SESSION_DIR_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/lock.h"
#include "services/common/session_id.h"

namespace lazaret::cli::session {

// 12 lowercase hex digits from getrandom().
std::string NewSessionId();
using ::lazaret::IsValidSessionId;  // services/common/session_id.h

std::string SessionsDir(const std::string& runtime_dir);
std::string SessionPath(const std::string& runtime_dir, const std::string& id);

// What session.json records.
// The file that marks a spare's session directory (SessionDir::Create).
inline constexpr char kSpareMarker[] = "spare";

struct SessionRecord {
  std::string id;
  std::string profile;
  std::string workspace;
  std::string git_state_dir;  // <profile_dir>/git; WriteBackAll target for `clean`
  pid_t pid = 0;              // the owning session worker
  int64_t started_unix = 0;
  // The run's --config FILE, canonical; empty without one. What
  // lazaret-netpolicyd resolves the session's network settings from.
  std::string explicit_config;
};

std::string SessionRecordJson(const SessionRecord& record);
absl::StatusOr<SessionRecord> ParseSessionRecord(const std::string& json);

// The session directory of a running session. Created with its lock
// held; Remove() deletes everything in it (env file, router socket) and the
// directory itself.
class SessionDir {
 public:
  // `spare`: the directory of a spare (docs/architecture.md "Spare
  // sidecar"), marked by a file `spare` from its creation on, until
  // Adopt().
  static absl::StatusOr<std::unique_ptr<SessionDir>> Create(const std::string& runtime_dir,
                                                            const SessionRecord& record,
                                                            bool spare = false);
  ~SessionDir();
  SessionDir(const SessionDir&) = delete;
  SessionDir& operator=(const SessionDir&) = delete;

  const std::string& path() const { return path_; }
  std::string env_file() const { return path_ + "/env"; }
  std::string router_dir() const { return path_ + "/router"; }
  std::string router_socket() const { return path_ + "/router/router.sock"; }

  // Writes the env file, mode 0600, refusing to follow or replace anything.
  absl::Status WriteEnvFile(const std::string& text);
  // Writes trace.json (trace_config.h) the same way.
  absl::Status WriteTraceConfig(const std::string& text);
  // Removes the env file (the sandbox's environment values) once no
  // container reads it any more; absent is fine.
  absl::Status RemoveEnvFile();
  // A spare's directory becomes its session's: the `spare` marker goes.
  absl::Status Adopt();
  // Removes the directory tree and releases the lock. Idempotent.
  absl::Status Remove();

 private:
  SessionDir(std::string path, fs::DirFd dir, fs::FileLock lock)
      : path_(std::move(path)), dir_(std::move(dir)), lock_(std::move(lock)) {}
  std::string path_;
  fs::DirFd dir_;
  std::optional<fs::FileLock> lock_;
  bool removed_ = false;
};

// A session directory found on disk.
struct FoundSession {
  std::string id;
  std::string path;
  bool owner_alive = false;  // its lock is held
  bool has_record = false;
  SessionRecord record;
  // A spare's, not a session's: no command runs in it (kSpareMarker).
  bool spare = false;
};

// Every session directory under <runtime_dir>/sessions. A missing sessions
// directory gives an empty list.
absl::StatusOr<std::vector<FoundSession>> FindSessionDirs(const std::string& runtime_dir);

// True while some process holds the lock of the session directory `path`.
bool SessionOwnerAlive(const std::string& path);

// The live session (its owner's lock held, not a spare) that `arg` names among `dirs`:
// the full id or a unique prefix; with `arg` empty, the only live session.
// The error says why (none, several - listing them -, no match) and what
// to do.
absl::StatusOr<std::string> ChooseLiveSession(const std::vector<FoundSession>& dirs,
                                              const std::string& arg);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SESSION_DIR_H_
