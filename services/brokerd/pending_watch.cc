// The request book's watchers: WatchPending's view of it, and the counts
// ListSessions shows.
#include <algorithm>
#include <utility>

#include "services/brokerd/pending.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

pb::PendingEvent Event(pb::PendingEvent::Kind kind, const pb::PendingRequest& request,
                       const std::string& resolution) {
  pb::PendingEvent event;
  event.set_kind(kind);
  *event.mutable_request() = request;
  event.set_resolution(resolution);
  return event;
}

bool Covers(const std::string& filter, const std::string& session_id) {
  return filter.empty() || filter == session_id;
}

}  // namespace

PendingWatch::~PendingWatch() { book_->Unwatch(state_); }

PendingWatch::Next PendingWatch::Wait(pb::PendingEvent* event, absl::Time deadline) {
  std::unique_lock<std::mutex> lock(book_->mu_);
  state_->cv.wait_until(lock, absl::ToChronoTime(deadline), [this] {
    return book_->closed_ || state_->dropped || !state_->queue.empty();
  });
  if (state_->dropped) return Next::kDropped;
  if (!state_->queue.empty()) {
    *event = std::move(state_->queue.front());
    state_->queue.pop_front();
    return Next::kEvent;
  }
  return book_->closed_ ? Next::kClosed : Next::kTimeout;
}

void RequestBook::Announce(pb::PendingEvent::Kind kind, const pb::PendingRequest& request,
                           const std::string& resolution) {
  const pb::PendingEvent event = Event(kind, request, resolution);
  for (const auto& w : watches_) {
    if (w->dropped || !Covers(w->session_filter, event.request().session_id())) continue;
    if (w->queue.size() >= options_.watcher_queue) {
      // Dropped rather than grown: the stream ends and the approver
      // watches again, getting every pending request anew.
      w->dropped = true;
      w->queue.clear();
    } else {
      w->queue.push_back(event);
    }
    w->cv.notify_all();
  }
}

SessionCounts RequestBook::Counts(const std::string& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  SessionCounts counts;
  auto it = sessions_.find(session_id);
  if (it != sessions_.end()) counts.pending = it->second.pending;
  for (const auto& w : watches_) {
    if (w->dropped || !Covers(w->session_filter, session_id)) continue;
    switch (w->kind) {
      case pb::Approver::KIND_TERMINAL:
        ++counts.approvers_terminal;
        break;
      case pb::Approver::KIND_INLINE:
        ++counts.approvers_inline;
        break;
      default:
        ++counts.approvers_script;
        break;
    }
  }
  return counts;
}

std::unique_ptr<PendingWatch> RequestBook::Watch(const std::string& session_filter,
                                                 pb::Approver::Kind kind) {
  auto state = std::make_shared<PendingWatch::State>();
  state->session_filter = session_filter;
  state->kind = kind;
  std::lock_guard<std::mutex> lock(mu_);
  // Oldest first. The snapshot may exceed watcher_queue: it is bounded by
  // the pending cap.
  std::vector<const Entry*> pending;
  for (const auto& [id, entry] : entries_) {
    if (entry.phase == Phase::kPending && Covers(session_filter, entry.request.session_id())) {
      pending.push_back(&entry);
    }
  }
  std::sort(pending.begin(), pending.end(),
            [](const Entry* a, const Entry* b) { return a->serial < b->serial; });
  for (const Entry* entry : pending) {
    state->queue.push_back(Event(pb::PendingEvent::KIND_ADDED, entry->request, ""));
  }
  watches_.push_back(state);
  return std::unique_ptr<PendingWatch>(new PendingWatch(this, std::move(state)));
}

void RequestBook::Unwatch(const std::shared_ptr<PendingWatch::State>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  watches_.erase(std::remove(watches_.begin(), watches_.end(), state), watches_.end());
}

}  // namespace lazaret::brokerd
