#include "services/sessiond/worker_table.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"

namespace lazaret::sessiond {
namespace {

namespace pb = ::lazaret::session::v1;

// How often the thread looks at exited workers to forget them.
constexpr int kForgetPollMs = 1000;

bool EventEndsStart(const pb::StartEvent& e) {
  return e.has_started() || e.has_failed() || e.event_case() == pb::StartEvent::kPlan;
}

int SendSignal(int pidfd, int signal) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

std::string DescribeWaitStatus(int st) {
  if (WIFEXITED(st)) return absl::StrCat("exited with status ", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return absl::StrCat("was killed by signal ", WTERMSIG(st));
  return absl::StrCat("ended with wait status ", st);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerTable>> WorkerTable::Create(WorkerCommand command,
                                                                 absl::Duration forget_after) {
  if (command.program.empty() || command.program[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the session worker program '", command.program, "' is not absolute"));
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return ErrnoStatus("eventfd for the worker thread", errno);
  std::unique_ptr<WorkerTable> t(new WorkerTable(std::move(command), forget_after, wake));
  t->thread_ = std::thread([p = t.get()] { p->Loop(); });
  return t;
}

WorkerTable::WorkerTable(WorkerCommand command, absl::Duration forget_after, int wake_fd)
    : command_(std::move(command)), forget_after_(forget_after), wake_fd_(wake_fd) {}

WorkerTable::~WorkerTable() {
  Shutdown(absl::ZeroDuration());
  absl::MutexLock lock(&mu_);
  for (auto& [key, w] : workers_) {
    if (w.process.pidfd >= 0) close(w.process.pidfd);
    if (w.process.control_fd >= 0) close(w.process.control_fd);
  }
  close(wake_fd_);
}

void WorkerTable::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

absl::StatusOr<WorkerKey> WorkerTable::Launch(std::string request) {
  LaunchJob job;
  job.request = std::move(request);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("lazaret-sessiond is shutting down");
    jobs_.push_back(&job);
  }
  Wake();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&job.done));
  return job.result;
}

WorkerKey WorkerTable::Add(const LaunchedWorker& launched) {
  const WorkerKey key = next_key_++;
  workers_[key].process = launched;
  // Shutdown began while it was being launched: it ends with the rest.
  if (stopping_) SendSignal(launched.pidfd, SIGTERM);
  return key;
}

void WorkerTable::RunLaunchJobs() {
  std::deque<LaunchJob*> jobs;
  {
    absl::MutexLock lock(&mu_);
    jobs.swap(jobs_);
  }
  for (LaunchJob* job : jobs) {
    absl::StatusOr<LaunchedWorker> launched = LaunchWorker(command_, job->request);
    absl::MutexLock lock(&mu_);
    if (launched.ok()) {
      LAZ_LOG_INFO << "started session worker " << launched->pid;
      job->result = Add(*launched);
    } else {
      LAZ_LOG_WARNING << "could not start a session worker: " << launched.status().message();
      job->result = launched.status();
    }
    job->done = true;
  }
}

void WorkerTable::Apply(WorkerKey key, Worker& w, pb::WorkerReport report) {
  switch (report.report_case()) {
    case pb::WorkerReport::kEvent:
      if (w.start_done) {
        LAZ_LOG_WARNING << "session worker " << w.process.pid
                        << " sent a start event after its start ended; dropped";
        return;
      }
      w.start_done = EventEndsStart(report.event());
      w.start_events.push_back(std::move(*report.mutable_event()));
      return;
    case pb::WorkerReport::kInfo:
      w.info = std::move(*report.mutable_info());
      w.info->set_worker_pid(w.process.pid);
      return;
    case pb::WorkerReport::kSpareReady:
      if (!w.spare_key.has_value() || !w.spare_id.empty() ||
          !IsValidSessionId(report.spare_ready())) {
        LAZ_LOG_WARNING << "session worker " << w.process.pid
                        << " reported a spare it was not asked for; dropped";
        return;
      }
      w.spare_id = report.spare_ready();
      LAZ_LOG_INFO << "spare worker " << w.process.pid << " ready as session " << w.spare_id;
      return;
    case pb::WorkerReport::kSpareDeclined:
      if (!w.adopted) {
        LAZ_LOG_WARNING << "session worker " << w.process.pid
                        << " declined a request it was not handed; dropped";
        return;
      }
      LAZ_LOG_INFO << "spare worker " << w.process.pid
                   << " declined its request: " << report.spare_declined();
      w.declined = true;
      return;
    case pb::WorkerReport::REPORT_NOT_SET:
      break;
  }
  LAZ_LOG_WARNING << "session worker " << w.process.pid << " (key " << key
                  << ") sent an empty report";
}

void WorkerTable::DrainReports(WorkerKey key, Worker& w) {
  while (w.process.control_fd >= 0) {
    absl::StatusOr<std::optional<pb::WorkerReport>> r = ReadReport(w.process.control_fd);
    if (r.ok() && !r->has_value()) return;
    if (!r.ok()) {
      if (!absl::IsOutOfRange(r.status())) {
        LAZ_LOG_WARNING << "session worker " << w.process.pid << ": " << r.status().message()
                        << "; no longer reading its reports";
      }
      close(w.process.control_fd);
      w.process.control_fd = -1;
      return;
    }
    Apply(key, w, **std::move(r));
  }
}

void WorkerTable::CheckExit(WorkerKey key, Worker& w) {
  if (w.exited) return;
  int st = 0;
  pid_t r;
  do {
    r = waitpid(w.process.pid, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return;
  // Everything it sent before it exited counts (a failed, the last info).
  DrainReports(key, w);
  if (w.process.control_fd >= 0) {
    close(w.process.control_fd);
    w.process.control_fd = -1;
  }
  close(w.process.pidfd);
  w.process.pidfd = -1;
  w.exited = true;
  w.wait_status = r < 0 ? -1 : st;
  w.exited_at = absl::Now();
  if (w.spare_after_exit.has_value()) {
    pending_spares_.push_back(*std::move(w.spare_after_exit));
    w.spare_after_exit.reset();
  }
  LAZ_LOG_INFO << "session worker " << w.process.pid
               << (w.info.has_value() ? absl::StrCat(" (session ", w.info->id(), ")") : "") << " "
               << DescribeWaitStatus(st);
}

void WorkerTable::Forget(absl::Time now) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->second.exited && now - it->second.exited_at >= forget_after_) {
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool WorkerTable::AnyLive() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const auto& kv) { return !kv.second.exited; });
}

void WorkerTable::Loop() {
  enum class Kind { kWake, kControl, kExit };
  std::vector<pollfd> fds;
  std::vector<std::pair<WorkerKey, Kind>> what;
  for (;;) {
    fds.clear();
    what.clear();
    int timeout_ms = -1;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      if (stopping_ && (!AnyLive() || now >= *stop_deadline_)) break;
      fds.push_back({wake_fd_, POLLIN, 0});
      what.emplace_back(0, Kind::kWake);
      bool any_exited = false;
      for (const auto& [key, w] : workers_) {
        if (w.process.control_fd >= 0) {
          fds.push_back({w.process.control_fd, POLLIN, 0});
          what.emplace_back(key, Kind::kControl);
        }
        if (!w.exited) {
          fds.push_back({w.process.pidfd, POLLIN, 0});
          what.emplace_back(key, Kind::kExit);
        }
        any_exited = any_exited || w.exited;
      }
      if (any_exited) timeout_ms = kForgetPollMs;
      if (stopping_) {
        const int64_t left = absl::ToInt64Milliseconds(*stop_deadline_ - now) + 1;
        timeout_ms = timeout_ms < 0 ? static_cast<int>(left)
                                    : std::min<int>(timeout_ms, static_cast<int>(left));
      }
    }
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "the worker thread's poll failed: " << ErrnoStatus("poll", errno).message();
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof(count));
      RunLaunchJobs();
    }
    {
      absl::MutexLock lock(&mu_);
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = workers_.find(what[i].first);
        if (it == workers_.end()) continue;
        if (what[i].second == Kind::kControl) {
          DrainReports(it->first, it->second);
        } else {
          CheckExit(it->first, it->second);
        }
      }
      Forget(absl::Now());
    }
    RunPendingSpares();
  }
  // A launch asked for while shutting down is refused, not left waiting.
  absl::MutexLock lock(&mu_);
  for (LaunchJob* job : jobs_) {
    job->result = absl::UnavailableError("lazaret-sessiond is shutting down");
    job->done = true;
  }
  jobs_.clear();
}

bool WorkerTable::KeepOnlySpare(const std::string& key) {
  bool kept = false;
  for (auto& [k, w] : workers_) {
    if (w.exited || !w.spare_key.has_value()) continue;
    if (*w.spare_key == key) {
      kept = true;
      continue;
    }
    // A spare for other requests: only one is kept.
    LAZ_LOG_INFO << "ending spare worker " << w.process.pid << ": replaced";
    w.spare_key.reset();
    ++unused_spares_;
    SendSignal(w.process.pidfd, SIGTERM);
  }
  return kept;
}

void WorkerTable::EndSparesExcept(const std::string& key) {
  absl::MutexLock lock(&mu_);
  // A request like one whose spare was not made: spares are used again.
  if (skipped_key_ == key) {
    unused_spares_ = 0;
    skipped_key_.reset();
  }
  (void)KeepOnlySpare(key);
  // Nor is one made later for other requests, by a session still ending
  // or one that runs on: the spare for this request follows its session.
  std::erase_if(pending_spares_, [&key](const auto& p) { return p.second != key; });
  for (auto& [k, w] : workers_) {
    if (w.spare_after_exit.has_value() && w.spare_after_exit->second != key) {
      w.spare_after_exit.reset();
    }
  }
}

void WorkerTable::PrepareSpareAfterExit(WorkerKey after, std::string spare_request,
                                        std::string key) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(after);
  if (it == workers_.end() || stopping_) return;
  if (unused_spares_ >= kUnusedSparesBeforePause) {
    LAZ_LOG_INFO << "no spare prepared: the last " << unused_spares_
                 << " were ended unused; one is made again after a request like this one";
    skipped_key_ = std::move(key);
    return;
  }
  if (it->second.exited) {
    pending_spares_.emplace_back(std::move(spare_request), std::move(key));
    Wake();
    return;
  }
  it->second.spare_after_exit.emplace(std::move(spare_request), std::move(key));
}

void WorkerTable::RunPendingSpares() {
  std::vector<std::pair<std::string, std::string>> pending;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      pending_spares_.clear();
      return;
    }
    pending.swap(pending_spares_);
  }
  for (auto& [request, key] : pending) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || KeepOnlySpare(key)) continue;
    }
    absl::StatusOr<LaunchedWorker> launched = LaunchWorker(command_, request);
    if (!launched.ok()) {
      LAZ_LOG_WARNING << "no spare sidecar prepared: " << launched.status().message();
      continue;
    }
    absl::MutexLock lock(&mu_);
    Worker& w = workers_[Add(*launched)];
    w.spare_key = key;
    pb::StartRequest parsed;
    if (parsed.ParseFromString(request)) w.spare_workspace = parsed.workspace_dir();
    LAZ_LOG_INFO << "started spare worker " << launched->pid;
  }
}

std::optional<WorkerKey> WorkerTable::AdoptSpare(const std::string& key,
                                                 const std::string& request) {
  absl::MutexLock lock(&mu_);
  for (auto& [k, w] : workers_) {
    if (w.exited || !w.spare_key.has_value() || *w.spare_key != key || w.spare_id.empty()) {
      continue;
    }
    w.spare_key.reset();
    w.adopted = true;
    if (w.process.control_fd < 0) {
      SendSignal(w.process.pidfd, SIGTERM);
      return std::nullopt;
    }
    if (absl::Status s = SendPacket(w.process.control_fd, request); !s.ok()) {
      LAZ_LOG_WARNING << "spare worker " << w.process.pid << " could not be handed a request: "
                      << s.message() << "; ending it";
      SendSignal(w.process.pidfd, SIGTERM);
      return std::nullopt;
    }
    LAZ_LOG_INFO << "session worker " << w.process.pid << " adopted as spare " << w.spare_id;
    unused_spares_ = 0;
    return k;
  }
  return std::nullopt;
}

std::optional<pb::SpareInfo> WorkerTable::Spare() const {
  absl::MutexLock lock(&mu_);
  for (const auto& [k, w] : workers_) {
    if (w.exited || !w.spare_key.has_value()) continue;
    pb::SpareInfo info;
    info.set_id(w.spare_id);
    info.set_workspace(w.spare_workspace);
    info.set_ready(!w.spare_id.empty());
    return info;
  }
  return std::nullopt;
}

WorkerTable::StartProgress WorkerTable::TakeStartEvents(WorkerKey key, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = workers_.find(key);
    return it == workers_.end() || it->second.exited || it->second.declined ||
           !it->second.start_events.empty();
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  StartProgress p;
  auto it = workers_.find(key);
  if (it == workers_.end()) {
    p.exited = true;
    p.wait_status = -1;
    return p;
  }
  Worker& w = it->second;
  p.events.assign(std::make_move_iterator(w.start_events.begin()),
                  std::make_move_iterator(w.start_events.end()));
  w.start_events.clear();
  p.exited = w.exited;
  p.wait_status = w.wait_status;
  p.declined = w.declined;
  return p;
}

absl::Status WorkerTable::Signal(WorkerKey key, int signal) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(key);
  if (it == workers_.end() || it->second.exited) {
    return absl::NotFoundError("the session worker has exited");
  }
  if (SendSignal(it->second.process.pidfd, signal) != 0) {
    if (errno == ESRCH) return absl::NotFoundError("the session worker has exited");
    return ErrnoStatus(absl::StrCat("signalling session worker ", it->second.process.pid), errno);
  }
  return absl::OkStatus();
}

std::optional<WorkerKey> WorkerTable::FindLive(const std::string& session_id) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, w] : workers_) {
    if (w.exited) continue;
    if (w.info.has_value() && w.info->id() == session_id) return key;
    if (w.spare_id == session_id) return key;
  }
  return std::nullopt;
}

bool WorkerTable::WaitExited(WorkerKey key, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = workers_.find(key);
    return it == workers_.end() || it->second.exited;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
}

std::vector<pb::SessionInfo> WorkerTable::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<pb::SessionInfo> out;
  for (const auto& [key, w] : workers_) {
    if (!w.exited && w.info.has_value()) out.push_back(*w.info);
  }
  return out;
}

void WorkerTable::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_ = absl::Now() + grace;
      for (auto& [key, w] : workers_) {
        if (!w.exited) SendSignal(w.process.pidfd, SIGTERM);
      }
    }
  }
  Wake();
  if (thread_.joinable()) thread_.join();
}

}  // namespace lazaret::sessiond
