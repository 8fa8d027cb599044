// The broker's request book: every escalation request of every live
// session, from the moment it is received until its result is kept, as a
// small state machine (STYLE 8). Runs in lazaret-brokerd, unprivileged.
// Requests come from the broker's own endpoint code, which has parsed and
// checked the sandbox's frame; decisions come from the approver API, whose
// peers are the user (the service checks their input before it gets here).
// The book trusts neither to keep order: a decision is consumed once, the
// first one wins, and anything out of phase is refused.
//
//   Add -> PENDING --Decide(approve|edit)--> RUNNING --Complete--> DONE
//                  --Decide(deny|abort), expiry, EndSession--> DONE
//   AddRunning (auto-approved) -> RUNNING --Complete--> DONE
//
// A network request (PendingRequest.network: a held DNS name) has no
// RUNNING phase: PENDING --Decide(allow_name|deny|abort), expiry--> DONE.
// allow_name is refused on a command request, approve and edit on a
// network request (FAILED_PRECONDITION), so an approver that does not know
// the kind cannot decide it the wrong way.
#ifndef LAZARET_SERVICES_BROKERD_PENDING_H_
#define LAZARET_SERVICES_BROKERD_PENDING_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/brokerd/command/checked_command.h"

namespace lazaret::brokerd {

// [A-Za-z0-9._-]{1,64}: the request ids the broker accepts, from a
// sandbox and from an approver alike.
bool IsValidRequestId(std::string_view id);

// "q" and 1 to 19 digits: the form of the ids the book assigns
// (PendingRequest.id), checked on what an approver sends.
bool IsValidBrokerId(std::string_view id);

// An approver's Edit once checked (split, argv[0] resolved on the fixed
// PATH) by the injected EditCheck.
struct EditedCommand {
  std::vector<std::string> argv;
  std::string binary;  // absolute host path argv[0] resolved to
  // What the executor runs; the book carries it to the connection thread
  // untouched. Null when the check produced nothing to run (tests).
  std::shared_ptr<const command::CheckedCommand> checked;
};

using EditCheck = std::function<absl::StatusOr<EditedCommand>(
    const lazaret::approver::v1::Edit&, const lazaret::approver::v1::PendingRequest&)>;
// Stops a session (the supervisor's StopSession). Called without the
// book's lock held.
using SessionAbort = std::function<void(const std::string& session_id)>;

// What WaitForDecision hands the connection thread, once.
struct Decision {
  enum class Kind { kApproved, kEdited, kDenied, kAborted, kExpired, kSessionEnded, kNameAllowed };
  Kind kind = Kind::kDenied;
  // kNameAllowed: the scope, and for SCOPE_PROFILE the file hash the
  // approver saw (AllowName.before_sha256).
  lazaret::approver::v1::AllowName::Scope scope =
      lazaret::approver::v1::AllowName::SCOPE_UNSPECIFIED;
  std::string before_sha256;
  // Who decided (kApproved, kEdited, kDenied, kAborted).
  lazaret::approver::v1::Approver approver;
  std::string reason;                   // kDenied, kAborted: the approver's reason
  std::optional<EditedCommand> edited;  // kEdited
  // How it was resolved, by whom: "approved by lazaret approve (terminal,
  // /dev/pts/3, pid 812)", "timed out", ... (the RESOLVED event's text).
  std::string resolution;
};

// The book's name for one request it holds. Copyable; stale once the
// request has been dropped from the book (calls with it then do nothing or
// answer NOT_FOUND).
class RequestHandle {
 public:
  const std::string& request_id() const { return request_id_; }
  const std::string& session_id() const { return session_id_; }
  // The book's own id of the request (PendingRequest.id).
  std::string id() const;

 private:
  friend class RequestBook;
  RequestHandle(std::string request_id, std::string session_id, uint64_t serial)
      : request_id_(std::move(request_id)), session_id_(std::move(session_id)), serial_(serial) {}
  std::string request_id_;
  std::string session_id_;
  uint64_t serial_;
};

struct RequestBookOptions {
  // Requests waiting for a human, per session (the 9th is refused).
  size_t max_pending_per_session = 8;
  // Finished requests kept with their output for GetRequest (older ones
  // are forgotten).
  size_t kept_finished = 64;
  // Request ids remembered per session (each is used once for the
  // session's life).
  size_t max_request_ids_per_session = 100000;
  // Unread events per watcher before it is dropped.
  size_t watcher_queue = 256;
  // How long an approving Decide waits for the command to start.
  absl::Duration decide_wait = absl::Seconds(5);
  // Ended sessions remembered so a late Add for one is refused.
  size_t remembered_ended_sessions = 4096;
};

class RequestBook;

// One WatchPending stream's view of the book. Created by
// RequestBook::Watch; unregisters itself when destroyed. The book must
// outlive it.
class PendingWatch {
 public:
  enum class Next {
    kEvent,    // *event is set
    kTimeout,  // nothing before the deadline
    kDropped,  // the watcher fell behind (more than watcher_queue unread)
    kClosed,   // the book is shutting down
  };
  ~PendingWatch();
  PendingWatch(const PendingWatch&) = delete;
  PendingWatch& operator=(const PendingWatch&) = delete;

  Next Wait(lazaret::approver::v1::PendingEvent* event, absl::Time deadline);

 private:
  friend class RequestBook;
  struct State {
    std::string session_filter;  // empty: every session
    lazaret::approver::v1::Approver::Kind kind;
    std::deque<lazaret::approver::v1::PendingEvent> queue;
    bool dropped = false;
    std::condition_variable cv;  // waits on the book's mutex
  };
  PendingWatch(RequestBook* book, std::shared_ptr<State> state)
      : book_(book), state_(std::move(state)) {}
  RequestBook* book_;
  std::shared_ptr<State> state_;
};

// Open watchers and pending requests of one session, for ListSessions.
struct SessionCounts {
  uint32_t pending = 0;
  uint32_t approvers_terminal = 0;
  uint32_t approvers_inline = 0;
  uint32_t approvers_script = 0;  // KIND_SCRIPT and KIND_UNSPECIFIED
};

class RequestBook {
 public:
  RequestBook(RequestBookOptions options, EditCheck edit_check, SessionAbort abort_session);
  ~RequestBook();  // Close()
  RequestBook(const RequestBook&) = delete;
  RequestBook& operator=(const RequestBook&) = delete;

  // Marks `request_id` used by `session_id` for the session's life.
  // ALREADY_EXISTS when it was used before (a replay); RESOURCE_EXHAUSTED
  // past max_request_ids_per_session; FAILED_PRECONDITION for an ended or
  // aborted session. Add and AddRunning call it; the endpoint calls it
  // itself for a request it refuses before either, so a refused id stays
  // used too. Both ids must be valid (checked by the caller).
  absl::Status UseRequestId(const std::string& session_id, const std::string& request_id);

  // A request that waits for a human: PENDING, announced to the watchers
  // with the id the book gives it (PendingRequest.id: "q" and a number
  // never reused while the broker runs; whatever the caller put there is
  // replaced). Approvers name the request by that id: the agent chose
  // request_id, and it must not be what a human reads as the request's
  // name. Refused as UseRequestId does, and with ALREADY_EXISTS while another
  // session's request the book holds has the same id, RESOURCE_EXHAUSTED
  // when the session has max_pending_per_session pending already.
  absl::StatusOr<RequestHandle> Add(lazaret::approver::v1::PendingRequest request);
  // An auto-approved request: RUNNING at once, never announced or
  // decidable; GetRequest shows it.
  absl::StatusOr<RequestHandle> AddRunning(lazaret::approver::v1::PendingRequest request);

  // For the connection thread, once per request: blocks until the request
  // is decided, its session ends, or the approval timeout passes: `expiry`
  // or the request's deadline_unix (when set), whichever comes first - then
  // it is DONE as expired, unless a decision won the race.
  // FAILED_PRECONDITION when the decision was taken already; NOT_FOUND for
  // a stale handle. The connection thread waits even when its peer has gone
  // (or Completes the handle), so that nothing stays pending for ever.
  // `gone`, when set, is asked every kGoneCheck while waiting: true (the
  // asker went away) ends the wait as expired.
  absl::StatusOr<Decision> WaitForDecision(const RequestHandle& handle, absl::Time expiry,
                                           const std::function<bool()>& gone = nullptr);
  static constexpr absl::Duration kGoneCheck = absl::Milliseconds(200);

  // The approver API's Decide; `request` checked by the service. The
  // request is named by DecideRequest.id (the book's id) when it is set,
  // else by request_id (scripts written before the book's ids). NOT_FOUND:
  // unknown id. FAILED_PRECONDITION: not PENDING (naming who decided and
  // how, or why it stopped waiting). An Edit runs the EditCheck; its error
  // is INVALID_ARGUMENT and the request stays PENDING. Abort also resolves
  // every other pending request of the session, refuses its new ones and
  // calls the SessionAbort. Approve and Edit return once the connection
  // thread has called Started or Complete, or after decide_wait.
  absl::StatusOr<lazaret::approver::v1::DecideResponse> Decide(
      const lazaret::approver::v1::DecideRequest& request);

  // The command of a RUNNING request has been started (Decide returns).
  void Started(const RequestHandle& handle);
  // The request is finished, whatever the outcome: DONE with its audit
  // record and output. Every handle ends here (for a denied, aborted or
  // expired request too, which is DONE already and gets its record).
  void Complete(const RequestHandle& handle, lazaret::approver::v1::AuditRecord record,
                std::string stdout_bytes, std::string stderr_bytes);

  // The session is gone: its pending requests are DONE (session ended), its
  // request ids forgotten, and a later Add for it refused.
  void EndSession(const std::string& session_id);

  // GetRequest by the agent's request id: NOT_FOUND when unknown or
  // forgotten.
  absl::StatusOr<lazaret::approver::v1::RequestState> Get(const std::string& request_id) const;
  // The same by the book's id (PendingRequest.id).
  absl::StatusOr<lazaret::approver::v1::RequestState> GetById(const std::string& id) const;

  SessionCounts Counts(const std::string& session_id) const;

  // A watcher of `session_filter` (empty: every session): ADDED for every
  // request pending now, then ADDED and RESOLVED as they happen.
  std::unique_ptr<PendingWatch> Watch(const std::string& session_filter,
                                      lazaret::approver::v1::Approver::Kind kind);

  // Ends every watcher (their Wait returns kClosed). Idempotent.
  void Close();

 private:
  friend class PendingWatch;
  enum class Phase { kPending, kRunning, kDone };
  struct Entry {
    uint64_t serial = 0;
    lazaret::approver::v1::PendingRequest request;
    Phase phase = Phase::kPending;
    std::optional<Decision> decision;
    bool taken = false;    // WaitForDecision returned the decision
    bool started = false;  // Started or Complete was called
    bool has_record = false;
    lazaret::approver::v1::AuditRecord record;
    std::string stdout_bytes;
    std::string stderr_bytes;
  };
  struct SessionState {
    std::set<std::string> used_ids;
    uint32_t pending = 0;
  };

  absl::StatusOr<RequestHandle> Insert(lazaret::approver::v1::PendingRequest request, Phase phase);
  absl::Status UseRequestIdLocked(const std::string& session_id, const std::string& request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Entry* Find(const RequestHandle& handle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The agent's request id of the entry the book's `id` names; empty when
  // none is held.
  std::string RequestIdOf(const std::string& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<lazaret::approver::v1::RequestState> GetLocked(const std::string& request_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::string> PendingOf(const std::string& session_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PENDING -> decided: sets the decision and phase, counts, announces.
  void Resolve(Entry& entry, Decision decision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that `entry` reached DONE; forgets the oldest finished ones.
  void Finished(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // To every watcher covering the request's session (pending_watch.cc).
  void Announce(lazaret::approver::v1::PendingEvent::Kind kind,
                const lazaret::approver::v1::PendingRequest& request, const std::string& resolution)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkEnded(const std::string& session_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unwatch(const std::shared_ptr<PendingWatch::State>& state);

  const RequestBookOptions options_;
  const EditCheck edit_check_;
  const SessionAbort abort_session_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a decision, a start or a completion
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by request id
  // The book's id of each entry held -> its request id.
  std::map<std::string, std::string> by_id_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, SessionState> sessions_ ABSL_GUARDED_BY(mu_);
  // Request ids of DONE entries, oldest first.
  std::deque<std::pair<std::string, uint64_t>> finished_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> ended_order_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<PendingWatch::State>> watches_ ABSL_GUARDED_BY(mu_);
};

// "lazaret approve (terminal, /dev/pts/3, pid 812)".
std::string DescribeApprover(const lazaret::approver::v1::Approver& approver);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_PENDING_H_
