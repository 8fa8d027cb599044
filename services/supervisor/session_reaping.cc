#include "services/supervisor/session_reaping.h"

#include <dirent.h>
#include <poll.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/session_id.h"
#include "services/common/unix_server.h"

namespace lazaret::supervisor {
namespace {

namespace spb = ::lazaret::session::v1;
using Clock = std::chrono::steady_clock;

class GrpcSessiondReaper final : public SessionReaper {
 public:
  GrpcSessiondReaper(std::string socket, std::chrono::seconds timeout)
      : socket_(std::move(socket)), timeout_(timeout) {}

  absl::StatusOr<std::vector<std::string>> Reap(const std::string& id) override {
    // A channel per call: a channel that failed while sessiond was down
    // waits out its own reconnect backoff, which would only slow the
    // retries this caller already paces.
    auto stub = spb::SessionService::NewStub(DialUnix(socket_));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) return absl::CancelledError("the supervisor is shutting down");
      current_ = &ctx;
    }
    spb::ReapRequest req;
    req.set_session_id(id);
    spb::ReapResponse resp;
    const grpc::Status s = stub->Reap(&ctx, req, &resp);
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_ = nullptr;
    }
    if (!s.ok()) return FromGrpcStatus(s);
    return std::vector<std::string>(resp.notices().begin(), resp.notices().end());
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    if (current_ != nullptr) current_->TryCancel();
  }

 private:
  const std::string socket_;
  const std::chrono::seconds timeout_;
  std::mutex mu_;
  grpc::ClientContext* current_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<SessionReaper> SessiondReaper(std::string socket, std::chrono::seconds timeout) {
  return std::make_unique<GrpcSessiondReaper>(std::move(socket), timeout);
}

SessionReaping::SessionReaping(std::string runtime_dir, SessionRegistry* registry,
                               std::unique_ptr<SessionReaper> reaper, ReapPolicy policy)
    : runtime_dir_(std::move(runtime_dir)),
      registry_(registry),
      reaper_(std::move(reaper)),
      policy_(policy),
      thread_([this] { Loop(); }) {}

SessionReaping::~SessionReaping() {
  if (thread_.joinable()) Drain(std::chrono::milliseconds(0));
}

void SessionReaping::ReapLeftoverSessions() {
  const std::string dir = absl::StrCat(runtime_dir_, "/sessions");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> ids;
  while (dirent* e = readdir(d)) {
    if (IsValidSessionId(e->d_name)) ids.emplace_back(e->d_name);
  }
  closedir(d);
  for (auto& id : ids) {
    LAZ_LOG_INFO << "session " << id << " was left by an earlier run; reaping it if its owner "
                 << "is gone";
    Enqueue({.id = std::move(id), .owner_seen_gone = false});
  }
}

void SessionReaping::OwnerGone(const std::string& id) {
  if (registry_->BeginReap(id)) {
    LAZ_LOG_WARNING << "session " << id << ": its owner is gone; reaping the session";
    Enqueue({.id = id, .owner_seen_gone = true});
  }
}

void SessionReaping::StopSessions() {
  const int asked = registry_->StopAll();
  if (asked > 0) LAZ_LOG_INFO << "asked " << asked << " live session(s) to end";
  const auto deadline = Clock::now() + policy_.session_stop_grace;
  while (!registry_->empty() && Clock::now() < deadline) {
    std::vector<pollfd> fds;
    std::vector<std::string> ids;
    for (const auto& [id, pidfd] : registry_->WatchedPidfds()) {
      fds.push_back({pidfd, POLLIN, 0});
      ids.push_back(id);
    }
    poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < fds.size(); ++i) {
      // An owner that unregistered before it ended is no longer watched.
      if (fds[i].revents != 0) OwnerGone(ids[i]);
    }
  }
  registry_->ShutdownWatchers();
  Drain(policy_.drain_timeout);
}

void SessionReaping::Drain(std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();
    if (!cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; })) {
      LAZ_LOG_WARNING << "the reaps still running or queued (" << queue_.size() + (busy_ ? 1 : 0)
                      << ") are cut short by the shutdown; run: lazaret clean";
      abandon_ = true;
      cv_.notify_all();
    }
  }
  reaper_->Cancel();
  if (thread_.joinable()) thread_.join();
}

void SessionReaping::Enqueue(Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abandon_) {
    LAZ_LOG_ERROR << "session " << job.id << ": not reaped, the supervisor is stopping; run: "
                  << "lazaret clean";
    return;
  }
  queue_.push_back(std::move(job));
  cv_.notify_all();
}

void SessionReaping::Loop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return abandon_ || closing_ || !queue_.empty(); });
      if (abandon_ || queue_.empty()) {
        busy_ = false;
        cv_.notify_all();
        if (abandon_ || closing_) return;
        continue;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    ReapOne(job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      cv_.notify_all();
    }
  }
}

bool SessionReaping::Pause(std::chrono::milliseconds delay) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, delay, [&] { return abandon_; });
}

void SessionReaping::ReapOne(const Job& job) {
  const std::string& id = job.id;
  const auto started = Clock::now();
  auto retry = policy_.first_retry;
  absl::StatusOr<std::vector<std::string>> result;
  Clock::duration waited{};
  while (true) {
    result = reaper_->Reap(id);
    const absl::StatusCode code = result.status().code();
    waited = Clock::now() - started;
    const bool unanswered = code == absl::StatusCode::kUnavailable;
    const bool not_yet_dead = code == absl::StatusCode::kFailedPrecondition &&
                              job.owner_seen_gone && waited < policy_.owner_alive_grace;
    if (!unanswered && !not_yet_dead) break;
    if (unanswered && waited >= policy_.give_up_after) break;
    if (!Pause(retry)) {
      result = absl::CancelledError("the supervisor is shutting down");
      break;
    }
    retry = std::min(retry * 2, policy_.max_retry);
  }
  if (result.ok()) {
    for (const std::string& notice : *result) LAZ_LOG_INFO << "session " << id << ": " << notice;
    LAZ_LOG_INFO << "session " << id << " reaped (containers removed, git written back)";
  } else {
    switch (result.status().code()) {
      case absl::StatusCode::kFailedPrecondition:
        LAZ_LOG_INFO << "session " << id << ": its owner is alive; left alone";
        break;
      case absl::StatusCode::kNotFound:
        LAZ_LOG_INFO << "session " << id << ": nothing left to reap";
        break;
      case absl::StatusCode::kUnavailable:
        LAZ_LOG_ERROR << "session " << id << ": lazaret-sessiond did not answer for "
                      << std::chrono::duration_cast<std::chrono::seconds>(waited).count()
                      << " s (" << result.status().message()
                      << "), so the session is NOT reaped; once `lazaret status` shows sessiond "
                         "healthy, run: lazaret clean";
        break;
      case absl::StatusCode::kCancelled:
        LAZ_LOG_ERROR << "session " << id
                      << ": its reap was cut short by the shutdown; run: lazaret clean";
        break;
      default:
        LAZ_LOG_ERROR << "session " << id << ": reaping failed (" << result.status().message()
                      << "); see lazaret-sessiond's lines above, and run: lazaret clean";
        break;
    }
  }
  registry_->Forget(id);
}

}  // namespace lazaret::supervisor
