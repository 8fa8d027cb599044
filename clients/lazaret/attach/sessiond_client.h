// The `lazaret` CLI's client of lazaret-sessiond (SessionService, on
// sessiond.sock in the runtime directory): `lazaret run` starts a session
// through it, `lazaret attach`, ps, stop and `clean --session` find, list,
// stop and reap sessions with it. Runs in the CLI, as the user. sessiond
// is a host service of the same user and is trusted to say what it did;
// the text it relays (notices, a session's command and workspace) comes
// partly from the session and is escaped by whoever prints it.
#ifndef LAZARET_CLIENTS_LAZARET_ATTACH_SESSIOND_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_ATTACH_SESSIOND_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "lazaret/session/v1/session.grpc.pb.h"

namespace lazaret::cli::attach {

// <runtime_dir>/sessiond.sock (services/common/service_catalog.h).
std::string SessiondSocket(const std::string& runtime_dir);

// List, Reap and Stop without wait.
inline constexpr std::chrono::seconds kCallTimeout{10};
// Stop with wait: the teardown, the last write-back and the scan.
inline constexpr std::chrono::seconds kStopTimeout{300};
// Reap: sessiond's own bound is 180 s.
inline constexpr std::chrono::seconds kReapTimeout{200};

class SessiondClient {
 public:
  explicit SessiondClient(const std::string& socket);

  // Start's events, each to `on_event` as it arrives, until the stream
  // ends. No deadline (a start may pull an image); Cancel ends it from
  // another thread. UNAVAILABLE says to run `lazaret up`.
  absl::Status Start(const ::lazaret::session::v1::StartRequest& request,
                     const std::function<void(const ::lazaret::session::v1::StartEvent&)>& on_event);
  // From any thread: ends a Start that is running (sessiond then stops
  // the session it was starting).
  void Cancel();

  absl::StatusOr<std::vector<::lazaret::session::v1::SessionInfo>> List();
  // The whole answer: the sessions and the spare sidecars.
  absl::StatusOr<::lazaret::session::v1::ListResponse> ListAll();
  absl::Status Stop(const std::string& session_id, bool wait);
  absl::StatusOr<std::vector<std::string>> Reap(const std::string& session_id);

 private:
  absl::Status Explain(const char* rpc, const grpc::Status& s, std::chrono::seconds timeout) const;

  const std::string socket_;
  std::unique_ptr<::lazaret::session::v1::SessionService::Stub> stub_;
  absl::Mutex mu_;
  grpc::ClientContext* start_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// The session `arg` names among `sessions`: the whole id or a unique
// prefix; with `arg` empty, the only one. The error lists the candidates
// and says what to type.
absl::StatusOr<::lazaret::session::v1::SessionInfo> ChooseSession(
    const std::vector<::lazaret::session::v1::SessionInfo>& sessions, const std::string& arg);

}  // namespace lazaret::cli::attach

#endif  // LAZARET_CLIENTS_LAZARET_ATTACH_SESSIOND_CLIENT_H_
