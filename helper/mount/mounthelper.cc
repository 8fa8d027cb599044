#include "helper/mount/mounthelper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "helper/mount/overlay_manager.h"
#include "helper/mount/overlay_ops.h"
#include "helper/mount/session_source.h"
#include "helper/mount/state_file.h"
#include "lazaret/mounthelper/v1/mounthelper.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/service_catalog.h"
#include "services/common/session_client.h"
#include "services/common/session_watcher.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::mounthelper {
namespace {

namespace pb = ::lazaret::mounthelper::v1;

void ToProto(const Mounted& m, pb::OverlayMount* out) {
  out->set_profile(m.profile);
  out->set_directory(m.directory);
  out->set_merged(m.merged);
  out->set_image_id(m.image_id);
  for (const std::string& h : m.holders) out->add_sessions(h);
}

// The gRPC edge: every handler hands checked-nothing input (ids, a profile
// name) to the OverlayManager, which checks it; no path crosses this API.
class MountHelperServiceImpl final : public pb::MountHelperService::Service {
 public:
  explicit MountHelperServiceImpl(OverlayManager* manager) : manager_(manager) {}

  grpc::Status AttachSession(grpc::ServerContext*, const pb::AttachSessionRequest* req,
                             pb::AttachSessionResponse* resp) override {
    absl::StatusOr<std::vector<Mounted>> m = manager_->Attach(req->session_id(), req->image_id());
    if (!m.ok()) return ToGrpcStatus(m.status());
    for (const Mounted& x : *m) ToProto(x, resp->add_mounts());
    return grpc::Status::OK;
  }

  grpc::Status DetachSession(grpc::ServerContext*, const pb::DetachSessionRequest* req,
                             pb::DetachSessionResponse* resp) override {
    absl::StatusOr<std::vector<std::string>> u = manager_->Detach(req->session_id());
    if (!u.ok()) return ToGrpcStatus(u.status());
    for (const std::string& d : *u) resp->add_unmounted(d);
    return grpc::Status::OK;
  }

  grpc::Status ListMounts(grpc::ServerContext*, const pb::ListMountsRequest*,
                          pb::ListMountsResponse* resp) override {
    for (const Mounted& m : manager_->List()) ToProto(m, resp->add_mounts());
    return grpc::Status::OK;
  }

  grpc::Status DescribeState(grpc::ServerContext*, const pb::DescribeStateRequest* req,
                             pb::DescribeStateResponse* resp) override {
    absl::StatusOr<ProfileState> s =
        manager_->Describe({req->profile(), req->workspace_dir(), req->explicit_config()});
    if (!s.ok()) return ToGrpcStatus(s.status());
    resp->set_profile(s->profile);
    resp->set_profile_dir(s->profile_dir);
    for (const DirectoryState& d : s->directories) {
      pb::DirectoryState* o = resp->add_directories();
      o->set_directory(d.directory);
      o->set_changes(d.changes);
      o->set_bytes(d.stats.bytes);
      o->set_files(d.stats.files);
      for (const std::string& c : d.stats.changed) o->add_changed(c);
      for (const std::string& c : d.stats.deleted) o->add_deleted(c);
      o->set_changed_total(d.stats.changed_total);
      o->set_deleted_total(d.stats.deleted_total);
      o->set_limit(d.stats.limit);
      o->set_mounted(d.mounted);
      o->set_overlay(d.overlay);
      for (const std::string& h : d.sessions) o->add_sessions(h);
      o->set_uncapped_changes(d.uncapped_changes);
    }
    pb::PersistentUsage* u = resp->mutable_usage();
    u->set_exists(s->usage.exists);
    u->set_cap_bytes(s->usage.cap_bytes);
    u->set_size_bytes(s->usage.usage.size_bytes);
    u->set_used_bytes(s->usage.usage.used_bytes);
    u->set_free_bytes(s->usage.usage.free_bytes);
    u->set_inodes_used(s->usage.usage.inodes_used);
    u->set_inodes_total(s->usage.usage.inodes_total);
    u->set_held_by(s->usage.held_by);
    u->set_note(s->usage.note);
    return grpc::Status::OK;
  }

  grpc::Status ResetState(grpc::ServerContext*, const pb::ResetStateRequest* req,
                          pb::ResetStateResponse* resp) override {
    absl::StatusOr<std::vector<std::string>> r = manager_->Reset(
        {req->profile(), req->workspace_dir(), req->explicit_config()}, req->directory());
    if (!r.ok()) return ToGrpcStatus(r.status());
    for (const std::string& d : *r) resp->add_reset(d);
    return grpc::Status::OK;
  }

  grpc::Status Cleanup(grpc::ServerContext*, const pb::CleanupRequest*,
                       pb::CleanupResponse* resp) override {
    absl::StatusOr<std::vector<Mounted>> u = manager_->Cleanup();
    if (!u.ok()) return ToGrpcStatus(u.status());
    for (const Mounted& m : *u) ToProto(m, resp->add_unmounted());
    return grpc::Status::OK;
  }

 private:
  OverlayManager* const manager_;
};

// Everything the service owns, torn down in order at shutdown.
struct HelperState {
  std::unique_ptr<SessionSource> sessions;
  std::unique_ptr<OverlayOps> ops;
  std::unique_ptr<OverlayManager> manager;
  std::unique_ptr<SessionWatcher> watcher;
  std::thread recovery;
};

absl::StatusOr<ServiceHandlers> MakeHandlers(const std::string& runtime_dir) {
  LAZ_ASSIGN_OR_RETURN(std::string state_path, StateFilePath(runtime_dir));
  const char* env = std::getenv(kOverlayEnv);
  LAZ_ASSIGN_OR_RETURN(OverlayPreference preference, ParsePreference(env == nullptr ? "" : env));
  auto state = std::make_shared<HelperState>();
  state->sessions = MakeRegistrySessionSource(runtime_dir);
  state->ops = MakeSystemOverlayOps();
  state->manager = std::make_unique<OverlayManager>(state->sessions.get(), state->ops.get(),
                                                    state_path, geteuid(), preference);
  // The registry answers only once the supervisor's loop runs, which may be
  // after this service reports healthy: recover in the background.
  OverlayManager* manager = state->manager.get();
  state->recovery = std::thread([manager] {
    absl::Status s = manager->Recover();
    if (!s.ok()) LAZ_LOG_ERROR << "recovering earlier mounts: " << s;
  });
  SessionWatcher::Callbacks callbacks;
  callbacks.ended = [manager](const lazaret::supervisor::v1::SessionInfo& info) {
    const std::string& id = info.record().id();
    if (!CheckSessionId(id).ok()) return;
    absl::StatusOr<std::vector<std::string>> u = manager->Detach(id);
    if (!u.ok()) LAZ_LOG_WARNING << "detaching ended session " << id << ": " << u.status();
  };
  state->watcher = std::make_unique<SessionWatcher>(runtime_dir, std::move(callbacks));
  state->watcher->Start();
  ServiceHandlers h;
  h.services.push_back(std::make_unique<MountHelperServiceImpl>(manager));
  h.on_shutdown = [state] {
    state->watcher->Stop();
    if (state->recovery.joinable()) state->recovery.join();
  };
  return h;
}

}  // namespace

ServiceSpec Spec() {
  return ServiceSpec{
      .name = std::string(kMountHelperService.name),
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()},
                       .delegated = {kDelegatedCapabilities.begin(), kDelegatedCapabilities.end()}},
      .make_handlers = MakeHandlers,
  };
}

bool ExitWithParent() {
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return false;
  return getppid() == parent && parent != 1;
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::mounthelper
