#include "services/netpolicyd/registry.h"

#include <unistd.h>

#include <tuple>

#include "absl/strings/str_cat.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/common/log.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/netpolicyd/host_inputs.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;
namespace sv = ::lazaret::supervisor::v1;

constexpr std::chrono::milliseconds kRelayOpenTimeout{5000};
constexpr size_t kPolicyQueue = 4096;

// Held names (`egress = "ask"`) are asked of lazaret-brokerd on the
// runtime directory's brokerd.sock unless the caller brought a client.
RegistryOptions WithApprovalClient(RegistryOptions options, const std::string& runtime_dir) {
  if (options.session.approval == nullptr) {
    options.session.approval = std::make_shared<BrokerApprovalClient>(runtime_dir);
  }
  return options;
}

}  // namespace

Registry::Registry(std::string runtime_dir, RegistryOptions options)
    : runtime_dir_(std::move(runtime_dir)),
      options_(WithApprovalClient(std::move(options), runtime_dir_)),
      pool_(options_.dns_workers, options_.dns_queue),
      policy_pool_(options_.policy_workers, kPolicyQueue) {}

absl::Status Registry::EnsureHostMonitor() {
  std::lock_guard<std::mutex> lock(monitor_mu_);
  if (monitor_ != nullptr) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<HostMonitor>> monitor = HostMonitor::Create(
      options_.host_monitor,
      [this](uint64_t, std::shared_ptr<const HostNetworks>) { SpreadHostNetworks(List()); });
  if (!monitor.ok()) {
    return absl::UnavailableError(
        absl::StrCat("lazaret-netpolicyd cannot follow the host's networks, so it cannot tell "
                     "which addresses to close: ",
                     monitor.status().message(), " (see lazaret-netpolicyd's log)"));
  }
  monitor_ = std::move(*monitor);
  return absl::OkStatus();
}

void Registry::SpreadHostNetworks(const std::vector<std::shared_ptr<Session>>& sessions) {
  uint64_t version = 0;
  std::shared_ptr<const HostNetworks> host;
  {
    std::lock_guard<std::mutex> lock(monitor_mu_);
    if (monitor_ == nullptr) return;
    std::tie(version, host) = monitor_->Latest();
  }
  for (const auto& session : sessions) {
    // Tasks run on several threads: the version keeps an older snapshot
    // from landing after a newer one. They hold no reference to the
    // monitor, so Stop() ends it for good.
    const bool queued = policy_pool_.TrySubmit([session, version, host] {
      absl::Status st = session->SetHostNetworks(host, version);
      if (!st.ok()) {
        LAZ_LOG_ERROR << "session " << session->id()
                      << ": the host's networks changed, re-apply failed: " << st.message();
      }
    });
    // The ticker hands it over within a tick.
    if (!queued) LAZ_LOG_WARNING << "session " << session->id() << ": policy queue full";
  }
}

Registry::~Registry() { Stop(); }

void Registry::Start() {
  {
    std::lock_guard<std::mutex> attach_lock(attach_mu_);
    if (absl::Status st = EnsureHostMonitor(); !st.ok()) LAZ_LOG_ERROR << st.message();
  }
  if (options_.watch_supervisor) {
    watcher_ = std::make_unique<SessionWatcher>(
        runtime_dir_,
        SessionWatcher::Callbacks{
            .started = [this](const sv::SessionInfo& info) { SessionStarted(info); },
            .ended = [this](const sv::SessionInfo& info) { (void)Detach(info.record().id()); }});
    watcher_->Start();
  }
  tick_thread_ = std::thread([this] { Tick(); });
  if (!options_.session.log.dir.empty()) {
    if (absl::Status st = CollectEgressLogs(options_.session.log.dir, kKeepSessionLogs); !st.ok()) {
      LAZ_LOG_WARNING << "egress logs: " << st;
    }
  }
}

void Registry::Stop() {
  std::map<std::string, Entry> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  // The watcher's callbacks attach and detach: stop it before taking the
  // sessions away.
  if (watcher_ != nullptr) watcher_->Stop();
  std::shared_ptr<HostMonitor> monitor;
  {
    std::lock_guard<std::mutex> lock(monitor_mu_);
    monitor.swap(monitor_);
  }
  monitor.reset();  // its thread calls back into the registry: gone first
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions.swap(sessions_);
  }
  cv_.notify_all();
  if (tick_thread_.joinable()) tick_thread_.join();
  for (auto& [id, entry] : sessions) {
    entry.session->StopHeldNames();
    entry.relay.reset();
    entry.trace.reset();
    entry.session->log().Close();
  }
}

absl::StatusOr<SessionInputs> Registry::Gather(const std::string& id, Session& session) {
  SessionInputs in;
  LAZ_ASSIGN_OR_RETURN(in.info, FetchSession(runtime_dir_, id));
  if (in.info.state() == sv::SESSION_STATE_REAPING) {
    return absl::FailedPreconditionError(absl::StrCat("session ", id, " is ending"));
  }
  {
    LAZ_ASSIGN_OR_RETURN(ProfileInputs profile,
                         ResolveProfileInputs(runtime_dir_, in.info.record()));
    in.network = std::move(profile.network);
    in.intercepted = std::move(profile.intercepted);
  }
  LAZ_RETURN_IF_ERROR(EnsureHostMonitor());
  {
    std::lock_guard<std::mutex> lock(monitor_mu_);
    std::tie(in.host_version, in.host) = monitor_->Latest();
  }
  if (in.host == nullptr) {
    return absl::UnavailableError(
        "the host's addresses and routes cannot be read just now, so no session is opened "
        "(see lazaret-netpolicyd's log; retry when it recovers)");
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kHostCallTimeout);
  grpc::Status st =
      session.router().GetNamespaceInfo(&ctx, rt::GetNamespaceInfoRequest(), &in.namespace_info);
  if (!st.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the router of session ", id, ": GetNamespaceInfo: ", st.error_message()));
  }
  std::vector<std::string> configured(in.network.dns_upstream().begin(),
                                      in.network.dns_upstream().end());
  LAZ_ASSIGN_OR_RETURN(in.upstreams, ChooseUpstreams(configured, options_.resolv_conf));
  return in;
}

absl::StatusOr<pb::PolicyApplied> Registry::Attach(const std::string& id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(id));
  std::lock_guard<std::mutex> attach_lock(attach_mu_);
  std::shared_ptr<Session> session;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("lazaret-netpolicyd is stopping");
    auto it = sessions_.find(id);
    if (it != sessions_.end()) session = it->second.session;
  }
  if (session == nullptr) {
    session = std::make_shared<Session>(id, DialUnix(RouterSocketPath(runtime_dir_, id)),
                                        options_.session);
    fresh = true;
  }
  absl::StatusOr<SessionInputs> inputs = Gather(id, *session);
  if (!inputs.ok()) return inputs.status();
  // The intercepted names are the egress proxy's, which took the session's
  // secrets and rules once, at its start: a re-attach keeps them.
  if (!fresh) inputs->intercepted = session->Intercepted();
  absl::StatusOr<pb::PolicyApplied> applied = session->Configure(*std::move(inputs));
  if (!applied.ok() || !fresh) return applied;
  auto relay = std::make_unique<DnsRelay>(session, &pool_);
  if (!relay->WaitOpen(kRelayOpenTimeout)) {
    return absl::UnavailableError(
        absl::StrCat("the router of session ", id, " did not take the DNS relay call"));
  }
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<TraceSink> trace, OpenTraceSink(session));
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return absl::UnavailableError("lazaret-netpolicyd is stopping");
  sessions_[id] = Entry{session, std::move(relay), std::move(trace)};
  LAZ_LOG_INFO << "session " << id << " attached: generation " << applied->generation() << ", "
               << applied->routes() << " routes";
  // A change published between Gather and now has not reached it.
  SpreadHostNetworks({session});
  return applied;
}

absl::StatusOr<pb::PolicyApplied> Registry::Reload(const std::string& id) {
  LAZ_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, Find(id));
  std::lock_guard<std::mutex> attach_lock(attach_mu_);
  LAZ_ASSIGN_OR_RETURN(SessionInputs inputs, Gather(id, *session));
  // As at a re-attach: the egress proxy's names stay those of the start.
  inputs.intercepted = session->Intercepted();
  return session->Configure(std::move(inputs));
}

absl::Status Registry::Detach(const std::string& id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(id));
  Entry entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return absl::OkStatus();  // forgotten already
    entry = std::move(it->second);
    sessions_.erase(it);
  }
  entry.session->StopHeldNames();
  if (options_.on_detach) options_.on_detach(id);
  entry.relay.reset();
  entry.trace.reset();
  entry.session->log().Close();
  LAZ_LOG_INFO << "session " << id << " detached";
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Session>> Registry::Find(const std::string& id) const {
  LAZ_RETURN_IF_ERROR(CheckSessionId(id));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("session ", id, " is not attached"));
  }
  return it->second.session;
}

std::vector<std::shared_ptr<Session>> Registry::List() const {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, entry] : sessions_) out.push_back(entry.session);
  return out;
}

void Registry::SessionStarted(const sv::SessionInfo& info) {
  const std::string& id = info.record().id();
  if (info.state() != sv::SESSION_STATE_ATTACHED || Find(id).ok()) return;
  // Attached before this netpolicyd started: take it up again.
  absl::StatusOr<pb::PolicyApplied> applied = Attach(id);
  if (!applied.ok()) {
    LAZ_LOG_ERROR << "session " << id
                  << " could not be attached again: " << applied.status().message();
  }
}

void Registry::Tick() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, options_.tick, [this] { return stopping_; });
      if (stopping_) return;
    }
    // Catches a change a full policy queue dropped.
    SpreadHostNetworks(List());
    for (const auto& session : List()) {
      absl::Status s = session->ApplyIfExpired();
      if (!s.ok()) {
        LAZ_LOG_ERROR << "session " << session->id() << ": expiry re-apply failed: " << s.message();
      }
    }
  }
}

absl::StatusOr<std::unique_ptr<TraceSink>> Registry::OpenTraceSink(
    const std::shared_ptr<Session>& session) {
  if (!options_.session.log.dir.empty()) {
    if (absl::Status st = CollectEgressLogs(options_.session.log.dir, kKeepSessionLogs); !st.ok()) {
      LAZ_LOG_WARNING << "egress logs: " << st;
    }
  }
  if (!options_.trace_sinks) return nullptr;
  TraceSink::Options opts;
  // runsc runs as this uid: root rootful, the user's mapped root (the
  // user) rootless.
  opts.peer_uid = geteuid();
  std::weak_ptr<Session> weak = session;
  absl::StatusOr<std::unique_ptr<TraceSink>> sink = TraceSink::Create(
      TraceSocketPath(runtime_dir_, session->id()), std::move(opts),
      [weak](const TraceConnect& c) {
        std::shared_ptr<Session> s = weak.lock();
        std::shared_ptr<const CompiledPolicy> policy = s ? s->AppliedPolicy() : nullptr;
        return ConnectEntry(c, policy.get());
      },
      [weak](netpolicy::v1::LogEntry e) {
        if (std::shared_ptr<Session> s = weak.lock()) s->Log(std::move(e));
      });
  if (!sink.ok()) {
    return absl::Status(sink.status().code(),
                        absl::StrCat("the sandbox's connection log: ", sink.status().message()));
  }
  return sink;
}

}  // namespace lazaret::netpolicyd
