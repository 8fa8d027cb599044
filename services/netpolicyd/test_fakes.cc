#include "services/netpolicyd/test_fakes.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "services/netpolicyd/compile.h"

namespace lazaret::netpolicyd::testing {

namespace rt = ::lazaret::netrouter::v1;
namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;

void FakeSupervisor::Add(sv::SessionInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  sessions_[info.record().id()] = std::move(info);
}

grpc::Status FakeSupervisor::GetSession(grpc::ServerContext*, const sv::GetSessionRequest* req,
                                        sv::SessionInfo* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(req->id());
  if (it == sessions_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such session");
  *resp = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeSupervisor::WatchSessions(grpc::ServerContext* ctx,
                                           const sv::WatchSessionsRequest*,
                                           grpc::ServerWriter<sv::SessionEvent>* writer) {
  std::vector<sv::SessionInfo> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, info] : sessions_) all.push_back(info);
  }
  for (const auto& info : all) {
    sv::SessionEvent ev;
    ev.set_kind(sv::SESSION_EVENT_STARTED);
    *ev.mutable_session() = info;
    writer->Write(ev);
  }
  while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return grpc::Status::OK;
}

void FakeConfigd::Set(cfg::NetworkPolicy network) {
  std::lock_guard<std::mutex> lock(mu_);
  network_ = std::move(network);
}

void FakeConfigd::SetProfile(cfg::ResolvedProfile profile) {
  std::lock_guard<std::mutex> lock(mu_);
  profile_ = std::move(profile);
}

grpc::Status FakeConfigd::ResolveProfile(grpc::ServerContext*,
                                         const cfg::ResolveProfileRequest* req,
                                         cfg::ResolveProfileResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = *req;
  *resp->mutable_profile() = profile_;
  resp->mutable_profile()->set_name(req->profile());
  *resp->mutable_profile()->mutable_network() = network_;
  return grpc::Status::OK;
}

cfg::ResolveProfileRequest FakeConfigd::last_request() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

grpc::Status FakeRouter::ApplyPolicy(grpc::ServerContext*, const rt::ApplyPolicyRequest* req,
                                     rt::ApplyPolicyResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  ++applies_;
  if (fail_) return grpc::Status(grpc::StatusCode::INTERNAL, "netlink said no");
  if (req->generation() <= generation_) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "old generation");
  }
  std::vector<rt::Route> routes(req->routes().begin(), req->routes().end());
  absl::StatusOr<std::string> digest = RoutesDigest(routes);
  if (!digest.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad route");
  generation_ = req->generation();
  routes_ = std::move(routes);
  digest_ = *digest;
  resp->set_generation(generation_);
  resp->set_digest(digest_);
  resp->set_routes(static_cast<uint32_t>(routes_.size()));
  return grpc::Status::OK;
}

grpc::Status FakeRouter::GetPolicy(grpc::ServerContext*, const rt::GetPolicyRequest*,
                                   rt::GetPolicyResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_generation(generation_);
  resp->set_digest(digest_);
  for (const auto& r : routes_) *resp->add_routes() = r;
  return grpc::Status::OK;
}

grpc::Status FakeRouter::LookupRoute(grpc::ServerContext*, const rt::LookupRouteRequest* req,
                                     rt::LookupRouteResponse* resp) {
  resp->set_route_type("fake");
  resp->set_device(req->address());
  return grpc::Status::OK;
}

grpc::Status FakeRouter::GetNamespaceInfo(grpc::ServerContext*, const rt::GetNamespaceInfoRequest*,
                                          rt::GetNamespaceInfoResponse* resp) {
  rt::NamespaceAddress* a = resp->add_addresses();
  a->set_interface("tap0");
  a->mutable_address()->set_prefix("10.0.2.100/32");
  resp->add_gateways("10.0.2.2");
  resp->add_link_services("10.0.2.3");
  return grpc::Status::OK;
}

grpc::Status FakeRouter::RelayDns(grpc::ServerContext* ctx,
                                  grpc::ServerReaderWriter<rt::DnsQuery, rt::DnsAnswer>* stream) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++relays_open_;
  }
  cv_.notify_all();
  std::thread reader([&] {
    rt::DnsAnswer answer;
    while (stream->Read(&answer)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (answer.message().empty() && answer.hold_ms() > 0) {
        // Held for an approver: the answer comes later.
        ++holds_;
        cv_.notify_all();
        continue;
      }
      answers_[answer.id()] = answer.message();
      cv_.notify_all();
    }
  });
  while (!ctx->IsCancelled()) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return !pending_.empty(); });
    while (!pending_.empty()) {
      rt::DnsQuery q = pending_.front();
      pending_.pop_front();
      lock.unlock();
      stream->Write(q);
      lock.lock();
    }
  }
  reader.join();
  std::lock_guard<std::mutex> lock(mu_);
  --relays_open_;
  return grpc::Status::OK;
}

absl::StatusOr<std::string> FakeRouter::Ask(const std::string& message, bool tcp,
                                            std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  // The client's call may not have reached this handler yet.
  if (!cv_.wait_for(lock, timeout, [&] { return relays_open_ > 0; })) {
    return absl::UnavailableError("no relay call open");
  }
  rt::DnsQuery q;
  q.set_id(next_id_++);
  q.set_message(message);
  q.set_transport(tcp ? rt::DNS_TRANSPORT_TCP : rt::DNS_TRANSPORT_UDP);
  uint64_t id = q.id();
  pending_.push_back(std::move(q));
  cv_.notify_all();
  if (!cv_.wait_for(lock, timeout, [&] { return answers_.count(id) > 0; })) {
    return absl::DeadlineExceededError("no answer");
  }
  std::string answer = answers_[id];
  answers_.erase(id);
  return answer;
}

std::map<std::string, std::string> FakeRouter::Table() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  for (const auto& r : routes_) {
    out[r.destination().prefix()] = r.action() == rt::ROUTE_ACTION_ALLOW ? "allow" : "prohibit";
  }
  return out;
}

int FakeRouter::holds() {
  std::lock_guard<std::mutex> lock(mu_);
  return holds_;
}

uint64_t FakeRouter::generation() {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

int FakeRouter::applies() {
  std::lock_guard<std::mutex> lock(mu_);
  return applies_;
}

void FakeRouter::FailApplies(bool fail) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_ = fail;
}

absl::StatusOr<std::unique_ptr<GrpcUnixServer>> Serve(grpc::Service* service,
                                                      const std::string& socket) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket).parent_path(), ec);
  absl::StatusOr<std::unique_ptr<UnixListener>> listener = UnixListener::Bind(socket);
  if (!listener.ok()) return listener.status();
  return GrpcUnixServer::Start(*std::move(listener), {service},
                               PeerPolicy{.allowed_uid = geteuid()});
}

}  // namespace lazaret::netpolicyd::testing
