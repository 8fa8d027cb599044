#include "services/brokerd/pending.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

std::string KindName(pb::Approver::Kind kind) {
  switch (kind) {
    case pb::Approver::KIND_TERMINAL:
      return "terminal";
    case pb::Approver::KIND_INLINE:
      return "inline";
    case pb::Approver::KIND_SCRIPT:
      return "script";
    default:
      return "unspecified";
  }
}

RequestBookOptions Clamped(RequestBookOptions options) {
  // The entry just finished is never the one forgotten.
  options.kept_finished = std::max<size_t>(options.kept_finished, 1);
  options.watcher_queue = std::max<size_t>(options.watcher_queue, 1);
  return options;
}

}  // namespace

bool IsValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool IsValidBrokerId(std::string_view id) {
  if (id.size() < 2 || id.size() > 20 || id[0] != 'q') return false;
  return std::all_of(id.begin() + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string RequestHandle::id() const { return absl::StrCat("q", serial_); }

std::string DescribeApprover(const pb::Approver& approver) {
  std::vector<std::string> parts = {KindName(approver.kind())};
  if (!approver.tty().empty()) parts.push_back(approver.tty());
  if (approver.pid() > 0) parts.push_back(absl::StrCat("pid ", approver.pid()));
  std::string name = approver.name().empty() ? "an approver" : approver.name();
  return absl::StrCat(name, " (", absl::StrJoin(parts, ", "), ")");
}

RequestBook::RequestBook(RequestBookOptions options, EditCheck edit_check,
                         SessionAbort abort_session)
    : options_(Clamped(std::move(options))),
      edit_check_(std::move(edit_check)),
      abort_session_(std::move(abort_session)) {}

RequestBook::~RequestBook() { Close(); }

void RequestBook::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (const auto& w : watches_) w->cv.notify_all();
  cv_.notify_all();
}

absl::Status RequestBook::UseRequestId(const std::string& session_id,
                                       const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return UseRequestIdLocked(session_id, request_id);
}

absl::Status RequestBook::UseRequestIdLocked(const std::string& session_id,
                                             const std::string& request_id) {
  if (ended_.contains(session_id)) {
    return absl::FailedPreconditionError(absl::StrCat("session ", session_id, " has ended"));
  }
  SessionState& session = sessions_[session_id];
  if (session.used_ids.contains(request_id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("request_id '", request_id,
                     "' was used before in this session; a replay never runs anything"));
  }
  if (session.used_ids.size() >= options_.max_request_ids_per_session) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this session has used ", session.used_ids.size(), " request ids, the most"));
  }
  session.used_ids.insert(request_id);
  return absl::OkStatus();
}

absl::StatusOr<RequestHandle> RequestBook::Add(pb::PendingRequest request) {
  return Insert(std::move(request), Phase::kPending);
}

absl::StatusOr<RequestHandle> RequestBook::AddRunning(pb::PendingRequest request) {
  return Insert(std::move(request), Phase::kRunning);
}

absl::StatusOr<RequestHandle> RequestBook::Insert(pb::PendingRequest request, Phase phase) {
  const std::string id = request.request_id();
  const std::string session_id = request.session_id();
  std::lock_guard<std::mutex> lock(mu_);
  auto held = entries_.find(id);
  if (held != entries_.end() && held->second.request.session_id() != session_id) {
    return absl::AlreadyExistsError(
        absl::StrCat("request id '", id, "' is in use by another session"));
  }
  auto it = sessions_.find(session_id);
  if (phase == Phase::kPending && it != sessions_.end() &&
      it->second.pending >= options_.max_pending_per_session) {
    return absl::ResourceExhaustedError(absl::StrCat("this session has ", it->second.pending,
                                                     " requests waiting for a human, the most"));
  }
  // A replay of an id the book still holds is refused here too.
  LAZ_RETURN_IF_ERROR(UseRequestIdLocked(session_id, id));
  SessionState& session = sessions_[session_id];
  Entry& entry = entries_[id];
  if (entry.serial != 0) by_id_.erase(absl::StrCat("q", entry.serial));
  entry = Entry();
  entry.serial = next_serial_++;
  entry.request = std::move(request);
  // The book's id replaces anything the caller put there: only the book
  // names its requests.
  entry.request.set_id(absl::StrCat("q", entry.serial));
  by_id_[entry.request.id()] = id;
  entry.phase = phase;
  if (phase == Phase::kPending) {
    ++session.pending;
    Announce(pb::PendingEvent::KIND_ADDED, entry.request, "");
  } else {
    entry.taken = true;  // nothing to decide
  }
  return RequestHandle(id, session_id, entry.serial);
}

RequestBook::Entry* RequestBook::Find(const RequestHandle& handle) {
  auto it = entries_.find(handle.request_id_);
  if (it == entries_.end() || it->second.serial != handle.serial_) return nullptr;
  return &it->second;
}

void RequestBook::Resolve(Entry& entry, Decision decision) {
  const bool runs =
      decision.kind == Decision::Kind::kApproved || decision.kind == Decision::Kind::kEdited;
  auto session = sessions_.find(entry.request.session_id());
  if (session != sessions_.end() && session->second.pending > 0) --session->second.pending;
  Announce(pb::PendingEvent::KIND_RESOLVED, entry.request, decision.resolution);
  entry.decision = std::move(decision);
  entry.phase = runs ? Phase::kRunning : Phase::kDone;
  if (!runs) Finished(entry);
  cv_.notify_all();
}

void RequestBook::Finished(Entry& entry) {
  finished_.emplace_back(entry.request.request_id(), entry.serial);
  while (finished_.size() > options_.kept_finished) {
    auto [id, serial] = finished_.front();
    finished_.pop_front();
    auto it = entries_.find(id);
    if (it != entries_.end() && it->second.serial == serial) {
      by_id_.erase(it->second.request.id());
      entries_.erase(it);
    }
  }
}

absl::StatusOr<Decision> RequestBook::WaitForDecision(const RequestHandle& handle,
                                                      absl::Time expiry,
                                                      const std::function<bool()>& gone) {
  std::unique_lock<std::mutex> lock(mu_);
  Entry* entry = Find(handle);
  if (entry == nullptr) return absl::NotFoundError("the request is no longer held");
  if (entry->request.deadline_unix() > 0) {
    expiry = std::min(expiry, absl::FromUnixSeconds(entry->request.deadline_unix()));
  }
  // The wait runs on the steady clock: a step of the wall clock (NTP, a
  // resumed VM) neither expires a request early nor keeps it past its time.
  const auto until =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          absl::ToChronoNanoseconds(std::max(expiry - absl::Now(), absl::ZeroDuration())));
  auto decided = [&] {
    entry = Find(handle);
    return entry == nullptr || entry->decision.has_value() || closed_;
  };
  bool asker_gone = false;
  if (gone == nullptr) {
    cv_.wait_until(lock, until, decided);
  } else {
    const auto slice = absl::ToChronoNanoseconds(kGoneCheck);
    while (!decided() && std::chrono::steady_clock::now() < until) {
      cv_.wait_until(lock, std::min(until, std::chrono::steady_clock::now() + slice), decided);
      if (decided()) break;
      lock.unlock();
      asker_gone = gone();
      lock.lock();
      if (asker_gone) break;
    }
    decided();
  }
  if (entry == nullptr) return absl::NotFoundError("the request is no longer held");
  if (!entry->decision.has_value()) {
    Decision expired;
    expired.kind = closed_ ? Decision::Kind::kSessionEnded : Decision::Kind::kExpired;
    expired.resolution = closed_      ? "the broker is stopping"
                         : asker_gone ? "the asker went away"
                                      : "timed out";
    Resolve(*entry, std::move(expired));
  }
  if (entry->taken) {
    return absl::FailedPreconditionError(
        absl::StrCat("the decision on request '", handle.request_id_, "' was taken already"));
  }
  entry->taken = true;
  return *entry->decision;
}

std::string RequestBook::RequestIdOf(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? std::string() : it->second;
}

absl::StatusOr<pb::DecideResponse> RequestBook::Decide(const pb::DecideRequest& request) {
  std::unique_lock<std::mutex> lock(mu_);
  // Named by the book's id when the approver gives one (what is shown to
  // the human), by the agent's id otherwise.
  const std::string id = request.id().empty() ? request.request_id() : RequestIdOf(request.id());
  const std::string& shown = request.id().empty() ? request.request_id() : request.id();
  auto not_pending = [&](const Entry& entry) {
    if (entry.decision.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("request '", shown, "' is not pending: ", entry.decision->resolution));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("request '", shown, "' is not pending: it was auto-approved"));
  };
  auto it = id.empty() ? entries_.end() : entries_.find(id);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no request with id '", shown, "'"));
  }
  if (it->second.phase != Phase::kPending) return not_pending(it->second);
  const uint64_t serial = it->second.serial;
  const RequestHandle handle(id, it->second.request.session_id(), serial);
  const std::string who = DescribeApprover(request.approver());
  const bool network = it->second.request.has_network();
  const bool network_decision = request.decision_case() == pb::DecideRequest::kAllowName;
  if (network && (request.decision_case() == pb::DecideRequest::kApprove ||
                  request.decision_case() == pb::DecideRequest::kEdit)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "request '", shown, "' is a network request: allow the name (allow_name) or deny it"));
  }
  if (!network && network_decision) {
    return absl::FailedPreconditionError(
        absl::StrCat("request '", shown, "' is a command request: approve, edit or deny it"));
  }

  Decision decision;
  decision.approver = request.approver();
  switch (request.decision_case()) {
    case pb::DecideRequest::kApprove:
      decision.kind = Decision::Kind::kApproved;
      decision.resolution = absl::StrCat("approved by ", who);
      break;
    case pb::DecideRequest::kDeny:
      decision.kind = Decision::Kind::kDenied;
      decision.reason = request.deny().reason();
      decision.resolution = absl::StrCat("denied by ", who);
      break;
    case pb::DecideRequest::kAbort:
      decision.kind = Decision::Kind::kAborted;
      decision.reason = request.abort().reason();
      decision.resolution = absl::StrCat("aborted by ", who);
      break;
    case pb::DecideRequest::kAllowName: {
      const pb::AllowName& allow = request.allow_name();
      decision.kind = Decision::Kind::kNameAllowed;
      decision.scope = allow.scope();
      decision.before_sha256 = allow.before_sha256();
      switch (allow.scope()) {
        case pb::AllowName::SCOPE_ONCE:
          decision.resolution = absl::StrCat("allowed once by ", who);
          break;
        case pb::AllowName::SCOPE_SESSION:
          decision.resolution = absl::StrCat("allowed for this session by ", who);
          break;
        case pb::AllowName::SCOPE_PROFILE:
          if (it->second.request.network().profile_diff().empty()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "request '", shown, "': allowing for the profile is not offered for this name"));
          }
          decision.resolution = absl::StrCat("allowed for the profile by ", who);
          break;
        default:
          return absl::InvalidArgumentError("allow_name needs a scope: once, session or profile");
      }
      break;
    }
    case pb::DecideRequest::kEdit: {
      pb::PendingRequest pending = it->second.request;
      lock.unlock();  // the check reads the filesystem
      absl::StatusOr<EditedCommand> edited = edit_check_(request.edit(), pending);
      if (!edited.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the edited command cannot run: ", edited.status().message()));
      }
      lock.lock();
      decision.kind = Decision::Kind::kEdited;
      decision.resolution = absl::StrCat("edited by ", who);
      decision.edited = *std::move(edited);
      break;
    }
    default:
      return absl::InvalidArgumentError("no decision given");
  }
  Entry* entry = Find(handle);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("no request with id '", shown, "'"));
  }
  if (entry->phase != Phase::kPending) return not_pending(*entry);

  pb::DecideResponse response;
  if (decision.kind == Decision::Kind::kApproved) {
    *response.mutable_argv() = entry->request.argv();
    response.set_binary(entry->request.binary());
  } else if (decision.kind == Decision::Kind::kEdited) {
    for (const auto& a : decision.edited->argv) response.add_argv(a);
    response.set_binary(decision.edited->binary);
  }
  const Decision::Kind kind = decision.kind;
  const std::string session_id = entry->request.session_id();
  const std::string resolution = decision.resolution;
  Resolve(*entry, std::move(decision));

  if (kind == Decision::Kind::kAborted) {
    for (const std::string& other_id : PendingOf(session_id)) {
      Entry& other = entries_.at(other_id);
      Decision with_session;
      with_session.kind = Decision::Kind::kAborted;
      with_session.approver = request.approver();
      with_session.reason = request.abort().reason();
      with_session.resolution = absl::StrCat(resolution, " (request ", handle.id(), ")");
      Resolve(other, std::move(with_session));
    }
    MarkEnded(session_id);
    lock.unlock();
    if (abort_session_) abort_session_(session_id);
    return response;
  }
  if (kind == Decision::Kind::kApproved || kind == Decision::Kind::kEdited) {
    cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.decide_wait), [&] {
      Entry* e = Find(handle);
      return e == nullptr || e->started || e->phase == Phase::kDone || closed_;
    });
  }
  return response;
}

void RequestBook::Started(const RequestHandle& handle) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* entry = Find(handle);
  if (entry == nullptr) return;
  entry->started = true;
  cv_.notify_all();
}

void RequestBook::Complete(const RequestHandle& handle, pb::AuditRecord record,
                           std::string stdout_bytes, std::string stderr_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* entry = Find(handle);
  if (entry == nullptr) return;
  if (entry->phase == Phase::kPending) {
    // Finished without a decision (the endpoint gave up on it).
    Decision refused;
    refused.kind = Decision::Kind::kSessionEnded;
    refused.resolution = "refused by the broker";
    Resolve(*entry, std::move(refused));
    entry->taken = true;
  }
  entry->has_record = true;
  entry->record = std::move(record);
  entry->stdout_bytes = std::move(stdout_bytes);
  entry->stderr_bytes = std::move(stderr_bytes);
  entry->started = true;
  if (entry->phase == Phase::kRunning) {
    entry->phase = Phase::kDone;
    Finished(*entry);
  }
  cv_.notify_all();
}

std::vector<std::string> RequestBook::PendingOf(const std::string& session_id) const {
  // Ids, not references: resolving one may forget finished entries.
  std::vector<std::string> ids;
  for (const auto& [id, entry] : entries_) {
    if (entry.phase == Phase::kPending && entry.request.session_id() == session_id) {
      ids.push_back(id);
    }
  }
  return ids;
}

void RequestBook::MarkEnded(const std::string& session_id) {
  if (ended_.insert(session_id).second) {
    ended_order_.push_back(session_id);
    if (ended_order_.size() > options_.remembered_ended_sessions) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
}

void RequestBook::EndSession(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& id : PendingOf(session_id)) {
    Decision ended;
    ended.kind = Decision::Kind::kSessionEnded;
    ended.resolution = "the session ended";
    Resolve(entries_.at(id), std::move(ended));
  }
  sessions_.erase(session_id);
  MarkEnded(session_id);
}

absl::StatusOr<pb::RequestState> RequestBook::Get(const std::string& request_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return GetLocked(request_id);
}

absl::StatusOr<pb::RequestState> RequestBook::GetById(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string request_id = RequestIdOf(id);
  if (request_id.empty()) return absl::NotFoundError(absl::StrCat("no request with id '", id, "'"));
  return GetLocked(request_id);
}

absl::StatusOr<pb::RequestState> RequestBook::GetLocked(const std::string& request_id) const {
  auto it = entries_.find(request_id);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no request with id '", request_id, "'"));
  }
  const Entry& entry = it->second;
  pb::RequestState state;
  *state.mutable_request() = entry.request;
  switch (entry.phase) {
    case Phase::kPending:
      state.set_phase(pb::RequestState::PHASE_PENDING);
      break;
    case Phase::kRunning:
      state.set_phase(pb::RequestState::PHASE_RUNNING);
      break;
    case Phase::kDone:
      state.set_phase(pb::RequestState::PHASE_DONE);
      break;
  }
  if (entry.has_record) *state.mutable_record() = entry.record;
  state.set_stdout(entry.stdout_bytes);
  state.set_stderr(entry.stderr_bytes);
  return state;
}

}  // namespace lazaret::brokerd
