// The terminal approver's state machine and screen, pure: pending-request
// events and keys in, the calls to make on lazaret-brokerd's ApproverService
// out, and the screen as rows of display runs. Runs in the `lazaret` CLI
// (lazaret approve; the inline prompt of lazaret run). Every string of a
// request is the sandbox's and is shown only through display_text.h; the
// broker's answers are trusted to be the broker's (the broker's socket is
// the user's own) but are escaped all the same.
//
// Nothing a stray key does decides a request (docs/escalation.md
// "Deciding"):
// - approving, running an edited command and allowing a name take a
//   confirmation: a random code of kCodeDigits digits shown on the screen,
//   typed, then Enter; any other key cancels. Denying stays one key and
//   Enter.
// - the list and every prompt name a request by the broker's id
//   (PendingRequest.id), never by the agent's request_id.
// - a view stays on its request: once the request in the detail (or a
//   prompt about it) is resolved, expires or its session ends, the detail
//   says so and takes no decision until the user goes back to the list.
//   The list's selection follows its request id; when it must move to
//   another request (its own left the list, or the first one arrived), the
//   guard starts.
// - the guard: for kGuardMs after it starts, and until no key has come for
//   kGuardMs, keys are ignored and the input already typed is discarded
//   (TakeDiscard: the front-end flushes the terminal). The front-end starts
//   it when the inline prompt opens (OnPromptOpen).
//
// A network request (PendingRequest.network: a name the sandbox asked for
// that no list allows) is decided with its own keys: o allow once, s for
// this session, p for this profile, d deny (Q aborts as for a command).
// Every allow takes the same code as approving; p first shows the change to
// the user's configuration file, and only then the code. a and e do nothing
// on a network row, and s and p nothing on a command row.
//
// Keys:
//   list     Up/Down or k/j select, Enter details, a approve (asks for the
//            code), d deny, e edit, Q abort, o output of the last
//            approved (on a network row: allow once), s and p allow a
//            network row's name, ? help, q or Ctrl-C quit
//   detail   Up/Down, k/j, PageUp/PageDown, Home/End scroll; a, d, e, Q, o,
//            s, p as in the list, for this request; Esc, Left or q back to
//            the list
//   approve  type the code, Enter approves; PageUp/PageDown scroll; Esc or
//            any other key cancels
//   allow    (o, s, p) as approve, Enter allows the name
//   profile  (p) the file and the change; Enter shows the code, PageUp/
//            PageDown scroll, Esc or any other key cancels
//   deny     type a reason (optional), Enter sends, Esc cancels
//   edit     line editor (line_editor.h), Enter checks the command with the
//            broker, then the new argv and the code: typed and Enter runs
//            the edited command; Esc edits again
//   abort    y aborts the session, n or Esc cancels
//   output   Up/Down or k/j, PageUp/PageDown scroll, Esc or q back
//   help     any key back
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/approve/display_text.h"
#include "clients/lazaret/approve/key.h"
#include "clients/lazaret/approve/line_editor.h"
#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::cli::approve {

// A call for the front-end to make; its answer goes back through the
// matching Model::On* method.
struct Action {
  enum Kind {
    kDecide,        // decide (the front-end fills in decide.approver)
    kParseCommand,  // parse -> OnParsed
    kGetRequest,    // get -> OnRequestState
    kQuit,
  };
  Kind kind = kQuit;
  ::lazaret::approver::v1::DecideRequest decide;
  ::lazaret::approver::v1::ParseCommandRequest parse;
  ::lazaret::approver::v1::GetRequestRequest get;
};

enum class Mode {
  kList,
  kDetail,
  kConfirmApprove,  // the code for approving the request in view
  kProfileDiff,     // the change "for this profile" writes, before its code
  kConfirmAllow,    // the code for allowing the network request in view
  kDenyReason,
  kEdit,
  kEditConfirm,  // the edited argv and the code for running it
  kConfirmAbort,
  kOutput,
  kHelp,
};

// How long keys are ignored once the guard starts (and after each key
// that comes while it holds).
inline constexpr int64_t kGuardMs = 1000;
// Digits of the approval code.
inline constexpr size_t kCodeDigits = 4;

// Where the terminal cursor goes (a line editor is open), in screen cells.
struct CursorPos {
  size_t row = 0;
  size_t col = 0;
};

class Model {
 public:
  // kInline: the prompt inside `lazaret run`, where q and Ctrl-C give the
  // terminal back to the sandbox instead of quitting.
  enum class Style { kStandalone, kInline };
  // `make_code`: the approval codes (kCodeDigits digits); default: random.
  explicit Model(Style style = Style::kStandalone,
                 std::function<std::string()> make_code = nullptr);

  // A WatchPending event.
  void OnEvent(const ::lazaret::approver::v1::PendingEvent& event);
  // The stream ended (the broker went away): said on the screen.
  void OnWatchEnded(const absl::Status& status);

  // A key; the calls to make now, in order (usually none or one).
  std::vector<Action> OnKey(const Key& key);

  // Answers to the actions.
  void OnDecided(const ::lazaret::approver::v1::DecideRequest& request,
                 const absl::StatusOr<::lazaret::approver::v1::DecideResponse>& response);
  void OnParsed(const absl::StatusOr<::lazaret::approver::v1::ParseCommandResponse>& response);
  void OnRequestState(const absl::StatusOr<::lazaret::approver::v1::RequestState>& state);

  // The wall clock, for "time left" (seconds since the epoch).
  void SetNow(int64_t unix_seconds) { now_ = unix_seconds; }
  // A monotonic clock in milliseconds, for the guard; set before each key.
  void SetClockMs(int64_t ms) { clock_ms_ = ms; }

  // The inline prompt opened: back to the list (the request that brought
  // it is there), and the guard starts.
  void OnPromptOpen();
  // Starts the guard (see above).
  void StartGuard();
  // Milliseconds the guard still holds; 0 when keys count.
  int64_t GuardLeftMs() const;
  // True once after the guard started: the front-end discards the input
  // typed so far.
  bool TakeDiscard();

  // The screen: at most `height` rows, none wider than `width`.
  std::vector<Line> Render(size_t width, size_t height) const;
  // Where the cursor is drawn; none when no editor is open.
  std::optional<CursorPos> Cursor(size_t width, size_t height) const;

  Mode mode() const { return mode_; }
  size_t pending() const { return queue_.size(); }
  // The code a confirmation asks for now (empty when none is open).
  const std::string& code() const { return code_; }
  // The broker id of the request in view (the detail, a prompt).
  std::string viewing() const;
  const std::string& notice() const { return notice_; }
  void ClearNotice() { notice_.clear(); }

 private:
  using PendingRequest = ::lazaret::approver::v1::PendingRequest;

  int Index(const std::string& key) const;  // -1 when not queued
  const PendingRequest* Selected() const;
  std::vector<Action> ListKey(const Key& key);
  std::vector<Action> DetailKey(const Key& key);
  // a, d, e, Q on the request `r` (a copy becomes the view).
  std::vector<Action> Open(const Key& key, const PendingRequest& r, Mode back);
  std::vector<Action> ConfirmKey(const Key& key);
  std::vector<Action> OutputKey();
  // Scrolls the view for Up/Down, PageUp/PageDown, Home/End (and j/k and
  // space when `letters`); false for any other key.
  bool ScrollKey(const Key& key, bool letters);
  std::vector<Action> Decide(::lazaret::approver::v1::DecideRequest request);
  // The request left the queue (`how`: the RESOLVED event's words).
  void Remove(const std::string& key, const std::string& how);
  // Why the request in view can no longer be decided; empty if it can.
  std::string ViewClosed() const;
  void CloseConfirm(Mode to, const std::string& why);
  // The list, with no view, confirmation, edit or parse in progress.
  void BackToList();

  std::vector<Line> Layout(size_t width, size_t height, std::optional<CursorPos>* cursor) const;
  std::vector<Line> Body(size_t width) const;
  std::vector<Line> ListBody(size_t width, size_t height) const;
  // The request line and, once it is no longer pending, why: the top of
  // both detail views.
  void DetailHead(std::vector<Line>& out, const PendingRequest& r, size_t width) const;
  std::vector<Line> DetailBody(const PendingRequest& r, size_t width) const;
  std::vector<Line> NetworkBody(const PendingRequest& r, size_t width) const;
  // The request, the user's file and the change "for this profile" makes.
  std::vector<Line> ProfileBody(const PendingRequest& r, size_t width) const;
  // Allows the network request in view at `scope_` (its code was typed).
  std::vector<Action> Allow();
  std::vector<Line> EditBody(size_t width) const;
  std::vector<Line> OutputBody(size_t width) const;
  // The question or editor label of a prompt, under the body.
  std::vector<Line> Prompt(size_t width) const;
  std::string Footer() const;

  std::vector<PendingRequest> queue_;
  // The key (Key()) of the selected row; empty when the list is.
  std::string selected_;
  Mode mode_ = Mode::kList;
  Mode back_ = Mode::kList;  // where help, the output and a cancel return to
  // The request the detail and the prompts show: a copy, so that the view
  // stays on it when it leaves the queue.
  std::optional<PendingRequest> view_;
  // How it left the queue (empty while it is pending).
  std::string view_gone_;
  LineEditor editor_;
  std::optional<::lazaret::approver::v1::ParseCommandResponse> parsed_;
  bool parsing_ = false;
  std::function<std::string()> make_code_;
  std::string code_;   // the confirmation's code
  // What kProfileDiff and kConfirmAllow would allow.
  ::lazaret::approver::v1::AllowName::Scope scope_ =
      ::lazaret::approver::v1::AllowName::SCOPE_UNSPECIFIED;
  std::string typed_;  // what was typed of it
  // Keys (Key()) of requests this approver decided (their RESOLVED event
  // is not news).
  std::set<std::string> decided_here_;
  ::lazaret::approver::v1::GetRequestRequest last_approved_;
  std::string last_approved_label_;
  std::optional<::lazaret::approver::v1::RequestState> output_;
  size_t output_scroll_ = 0;
  size_t detail_scroll_ = 0;
  // How far the last screen drawn could scroll (Render keeps it so that
  // scrolling stops at the end) and how many body rows it showed.
  mutable size_t max_scroll_ = 0;
  mutable size_t page_rows_ = 10;
  std::string notice_;
  int64_t now_ = 0;
  int64_t clock_ms_ = 0;
  int64_t guard_until_ms_ = 0;
  bool discard_ = false;
  Style style_ = Style::kStandalone;
};

// The screen a fresh approver shows once `added` (a KIND_ADDED event) has
// arrived: the work between a request reaching the approver and its row on
// the screen (tests/bench/dns_ask_bench.cc times it).
std::vector<Line> RenderAdded(const ::lazaret::approver::v1::PendingEvent& added, size_t width,
                              size_t height);

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_
