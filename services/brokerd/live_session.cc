#include "services/brokerd/live_session.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/brokerd/command/entries.h"
#include "services/brokerd/request_flow.h"
#include "services/common/log.h"

namespace lazaret::brokerd {

namespace {

// The profile's rate_limit, when it sets one, over the broker's default.
GuardLimits LimitsFor(const SessionFacts& facts, GuardLimits limits) {
  if (const uint32_t rate = facts.profile.escalation().rate_limit(); rate > 0) {
    limits.requests_per_second = rate;
    limits.burst = 2.0 * rate;
  }
  return limits;
}

}  // namespace

LiveSession::LiveSession(SessionFacts facts, const BrokerParts& parts)
    : facts_(std::move(facts)), parts_(parts), guard_(LimitsFor(facts_, parts.guard)) {}

absl::StatusOr<std::unique_ptr<LiveSession>> LiveSession::Start(SessionFacts facts,
                                                                const BrokerParts& parts,
                                                                bool adopt_existing) {
  const config::v1::EscalationPolicy& policy = facts.profile.escalation();
  if (!policy.enabled()) {
    return absl::FailedPreconditionError(
        absl::StrCat("escalation is disabled for profile '", facts.record.profile(),
                     "' ([escalation] enabled = false): no endpoint is made"));
  }
  std::unique_ptr<LiveSession> s(new LiveSession(std::move(facts), parts));
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<command::AutoApproveEntry>> entries =
      command::ResolveEntries(policy, &warnings);
  if (!entries.ok()) return entries.status();
  s->entries_ = *std::move(entries);
  for (const std::string& w : warnings) {
    LAZ_LOG_WARNING << "session " << s->id() << ": auto_approve: " << w;
  }
  absl::StatusOr<std::unique_ptr<tls::SessionEndpoint>> endpoint =
      tls::SessionEndpoint::Create(policy.socket_dir(), parts.certs_root,
                                   tls::SessionIdentity{s->facts_.record.profile(), s->id()},
                                   *parts.ca, parts.cert_lifetime, adopt_existing);
  if (!endpoint.ok()) return endpoint.status();
  s->endpoint_ = *std::move(endpoint);
  s->wake_ = fs::UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_.valid()) {
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  s->accept_thread_ = std::thread([raw = s.get()] { raw->AcceptLoop(); });
  return s;
}

LiveSession::~LiveSession() { Stop(); }

void LiveSession::Stop() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    stopping_ = true;
    for (command::RunningCommand* r : running_) r->Cancel();
    cv_.notify_all();
  }
  if (wake_.valid()) {
    const uint64_t one = 1;
    (void)!write(wake_.get(), &one, sizeof one);
  }
  if (endpoint_ != nullptr) endpoint_->StopAccepting();
  if (accept_thread_.joinable()) accept_thread_.join();
  // Pending requests of the session stop waiting; their threads answer and
  // end.
  parts_.book->EndSession(id());
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return serving_ == 0; });
    stopped_ = true;
  }
  if (endpoint_ != nullptr) {
    if (absl::Status st = endpoint_->Close(); !st.ok()) {
      LAZ_LOG_WARNING << "session " << id() << ": removing the endpoint: " << st.message();
    }
  }
}

bool LiveSession::Register(command::RunningCommand* running) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return false;
  running_.insert(running);
  return true;
}

void LiveSession::Unregister(command::RunningCommand* running) {
  std::unique_lock<std::mutex> lock(mu_);
  running_.erase(running);
}

broker::v1::Endpoint LiveSession::EndpointMessage() const {
  broker::v1::Endpoint e;
  e.set_session_id(id());
  e.set_socket_dir(endpoint_->socket_dir());
  e.set_certs_dir(endpoint_->certs_dir());
  e.set_certificate_not_after(absl::ToUnixSeconds(endpoint_->not_after()));
  return e;
}

approver::v1::SessionEndpoint LiveSession::View() const {
  approver::v1::SessionEndpoint v;
  v.set_session_id(id());
  v.set_profile(facts_.record.profile());
  v.set_workspace(facts_.record.workspace());
  v.set_socket(absl::StrCat(endpoint_->socket_dir(), "/", tls::kSocketName));
  for (const command::AutoApproveEntry& e : entries_) v.add_auto_approve(e.text);
  return v;
}

// Accepts connections and hands each to a thread of its own, so that one
// slow handshake never holds up the next; renews the certificate at its
// half-life. The guard bounds the threads.
void LiveSession::AcceptLoop() {
  const int listen_fd = endpoint_->listen_fd();
  absl::Time retry_renewal = absl::InfinitePast();
  while (true) {
    const absl::Time now = absl::Now();
    const absl::Time renew_at = std::max(endpoint_->renew_at(), retry_renewal);
    if (now >= renew_at) {
      if (absl::Status st = endpoint_->Renew(); !st.ok()) {
        retry_renewal = now + absl::Seconds(10);  // never a busy loop
        LAZ_LOG_ERROR << "session " << id() << ": renewing its certificate: " << st.message();
      }
      continue;
    }
    {
      // At the connection cap, new connections wait in the listen backlog
      // (the client's connect or handshake waits) until a slot frees: back
      // pressure, not a reset.
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return;
      if (static_cast<size_t>(serving_) >= parts_.guard.max_connections) {
        cv_.wait_for(lock, std::chrono::milliseconds(100), [&] {
          return stopping_ || static_cast<size_t>(serving_) < parts_.guard.max_connections;
        });
        continue;
      }
    }
    const int64_t wait_ms =
        std::min<int64_t>(absl::ToInt64Milliseconds(renew_at - now) + 1, 60 * 1000);
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(wait_ms));
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "session " << id() << ": poll: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    fs::UniqueFd conn(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        poll(nullptr, 0, 100);  // out of resources: wait instead of spinning
      }
      continue;
    }
    if (absl::Status st = guard_.OpenConnection(); !st.ok()) {
      LAZ_LOG_WARNING << "session " << id() << ": connection refused: " << st.message();
      continue;  // closed unread
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) {
        guard_.CloseConnection();
        return;
      }
      ++serving_;
    }
    std::thread([this, c = std::move(conn)]() mutable { Serve(std::move(c)); }).detach();
  }
}

void LiveSession::Serve(fs::UniqueFd conn) {
  ServeConnection(*this, std::move(conn));
  guard_.CloseConnection();
  std::unique_lock<std::mutex> lock(mu_);
  --serving_;
  cv_.notify_all();
}

}  // namespace lazaret::brokerd
