// lazaret-sessiond's SessionService (protos/lazaret/session/v1/session.proto):
// Start launches a session worker and relays its start, List shows the live
// workers' sessions, Stop ends one cleanly through its worker, Reap removes
// what a dead session left, in a child process of its own. Runs in
// lazaret-sessiond, as the user who ran `lazaret up`; callers are peers of
// that uid only (service_main.h), and their requests are still checked and
// bounded here before a worker gets them.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SERVICE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SERVICE_H_

#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/sessiond/worker_table.h"

namespace lazaret::sessiond {

// The largest StartRequest accepted: it travels to the worker as one
// control packet, which the kernel's socket buffer limits.
inline constexpr size_t kMaxStartRequestBytes = 192 << 10;

// How long a reap may take before its child process is killed (a reap cut
// short is done again by the next one).
inline constexpr absl::Duration kReapTimeout = absl::Seconds(180);

// The reap child (`lazaret-sessiond --reap-session=ID`) prints what it did,
// one line each, on stdout and says how it went in its exit code.
inline constexpr int kReapExitReaped = 0;
inline constexpr int kReapExitLeftSomething = 1;
inline constexpr int kReapExitNothingLeft = 2;
inline constexpr int kReapExitOwnerAlive = 3;
inline constexpr int kReapExitError = 4;

// Checks what a client may ask for: an absolute, canonical, existing
// workspace directory, and arguments, environment and terminal size within
// bounds (no NUL in anything that becomes a C string).
absl::Status CheckStartRequest(const session::v1::StartRequest& request);

class SessionServiceImpl final : public session::v1::SessionService::Service {
 public:
  // `program`: the binary run as `--reap-session=ID --runtime-dir=DIR` for
  // a reap (lazaret-sessiond itself). `spare_sidecars`: a started session
  // gets a spare prepared for the next one like it (spare.h).
  SessionServiceImpl(std::shared_ptr<WorkerTable> workers, std::string runtime_dir,
                     std::string program, absl::Duration reap_timeout = kReapTimeout,
                     bool spare_sidecars = true);

  grpc::Status Start(grpc::ServerContext* context, const session::v1::StartRequest* request,
                     grpc::ServerWriter<session::v1::StartEvent>* writer) override;
  grpc::Status List(grpc::ServerContext* context, const session::v1::ListRequest* request,
                    session::v1::ListResponse* response) override;
  grpc::Status Stop(grpc::ServerContext* context, const session::v1::StopRequest* request,
                    session::v1::StopResponse* response) override;
  grpc::Status Reap(grpc::ServerContext* context, const session::v1::ReapRequest* request,
                    session::v1::ReapResponse* response) override;

 private:
  const std::shared_ptr<WorkerTable> workers_;
  const std::string runtime_dir_;
  const std::string program_;
  const absl::Duration reap_timeout_;
  const bool spare_sidecars_;

  absl::Mutex mu_;
  std::set<std::string> reaping_ ABSL_GUARDED_BY(mu_);  // session ids being reaped now
};

}  // namespace lazaret::sessiond

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SERVICE_H_
