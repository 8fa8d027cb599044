#include "services/common/session_watcher.h"

#include <set>

#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/session_client.h"
#include "services/common/unix_server.h"

namespace lazaret {
namespace {

namespace sv = ::lazaret::supervisor::v1;

}  // namespace

SessionWatcher::SessionWatcher(std::string runtime_dir, Callbacks callbacks,
                               std::chrono::milliseconds retry)
    : runtime_dir_(std::move(runtime_dir)), callbacks_(std::move(callbacks)), retry_(retry) {}

SessionWatcher::~SessionWatcher() { Stop(); }

void SessionWatcher::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void SessionWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SessionWatcher::Started(const sv::SessionInfo& info) {
  const std::string& id = info.record().id();
  if (CheckSessionId(id).ok()) known_[id] = info;
  if (callbacks_.started) callbacks_.started(info);
}

void SessionWatcher::Ended(const sv::SessionInfo& info) {
  known_.erase(info.record().id());
  if (callbacks_.ended) callbacks_.ended(info);
}

void SessionWatcher::Reconcile() {
  if (known_.empty()) return;
  auto stub =
      sv::SupervisorService::NewStub(DialUnix(ServiceSocketPath(runtime_dir_, kSupervisorService)));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kHostCallTimeout);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    ctx_ = &ctx;
  }
  sv::ListSessionsResponse resp;
  grpc::Status st = stub->ListSessions(&ctx, sv::ListSessionsRequest(), &resp);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ctx_ = nullptr;
    if (stopping_ || !st.ok()) return;
  }
  std::set<std::string> listed;
  for (const auto& info : resp.sessions()) listed.insert(info.record().id());
  std::vector<sv::SessionInfo> gone;
  for (const auto& [id, info] : known_) {
    if (!listed.contains(id)) gone.push_back(info);
  }
  for (const auto& info : gone) {
    LAZ_LOG_INFO << "session " << info.record().id()
                 << " ended while the supervisor's registry was unreachable";
    Ended(info);
  }
}

void SessionWatcher::Run() {
  bool warned = false;
  while (true) {
    Reconcile();
    auto stub =
        sv::SupervisorService::NewStub(DialUnix(ServiceSocketPath(runtime_dir_, kSupervisorService)));
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      ctx_ = &ctx;
    }
    std::unique_ptr<grpc::ClientReader<sv::SessionEvent>> reader =
        stub->WatchSessions(&ctx, sv::WatchSessionsRequest());
    sv::SessionEvent event;
    while (reader->Read(&event)) {
      warned = false;
      if (event.kind() == sv::SESSION_EVENT_ENDED) {
        Ended(event.session());
      } else if (event.kind() == sv::SESSION_EVENT_STARTED) {
        Started(event.session());
      }
    }
    grpc::Status st = reader->Finish();
    std::unique_lock<std::mutex> lock(mu_);
    ctx_ = nullptr;
    if (stopping_) return;
    if (!warned) {
      LAZ_LOG_WARNING << "the supervisor's session registry is not reachable ("
                      << st.error_message() << "); trying again";
      warned = true;
    }
    cv_.wait_for(lock, retry_, [this] { return stopping_; });
  }
}

}  // namespace lazaret
