// The terminal approver's state machine and screen, pure: pending-request
// events and keys in, the calls to make on lazaret-brokerd's ApproverService
// out, and the screen as rows of display runs. Runs in the `lazaret` CLI
// (lazaret approve; the inline prompt of lazaret run). Every string of a
// request is the sandbox's and is shown only through display_text.h; the
// broker's answers are trusted to be the broker's (the broker's socket is
// the user's own) but are escaped all the same.
//
// Keys (docs/escalation.md):
//   list     Up/Down or k/j select, Enter details, a approve, d deny,
//            e edit, Q abort, o output of the last approved, ? help,
//            q or Ctrl-C quit
//   detail   the same; PageUp/PageDown scroll, Esc or Left back to the list
//   deny     type a reason (optional), Enter sends, Esc cancels
//   edit     line editor (line_editor.h), Enter checks the command with the
//            broker, then y runs the edited command, n edits again; Esc
//            cancels
//   abort    y aborts the session, n or Esc cancels
//   output   Up/Down or k/j, PageUp/PageDown scroll, Esc or q back
//   help     any key back
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_

#include <cstddef>
#include <cstdint>
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
    kGetRequest,    // request_id -> OnRequestState
    kQuit,
  };
  Kind kind = kQuit;
  ::lazaret::approver::v1::DecideRequest decide;
  ::lazaret::approver::v1::ParseCommandRequest parse;
  std::string request_id;
};

enum class Mode { kList, kDetail, kDenyReason, kEdit, kEditConfirm, kConfirmAbort, kOutput, kHelp };

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
  explicit Model(Style style = Style::kStandalone) : style_(style) {}

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

  // The screen: at most `height` rows, none wider than `width`.
  std::vector<Line> Render(size_t width, size_t height) const;
  // Where the cursor is drawn; none when no editor is open.
  std::optional<CursorPos> Cursor(size_t width, size_t height) const;

  Mode mode() const { return mode_; }
  size_t pending() const { return queue_.size(); }
  const std::string& notice() const { return notice_; }
  void ClearNotice() { notice_.clear(); }

 private:
  const ::lazaret::approver::v1::PendingRequest* Selected() const;
  std::vector<Action> ListKey(const Key& key);
  std::vector<Action> Decide(::lazaret::approver::v1::DecideRequest request);
  void Remove(size_t index);
  void BackToQueue();

  std::vector<Line> Layout(size_t width, size_t height, std::optional<CursorPos>* cursor) const;
  std::vector<Line> Body(size_t width) const;
  std::vector<Line> ListBody(size_t width, size_t height) const;
  std::vector<Line> DetailBody(const ::lazaret::approver::v1::PendingRequest& r,
                               size_t width) const;
  std::vector<Line> OutputBody(size_t width) const;
  // The question or editor label of deny/edit/abort, under the detail.
  std::vector<Line> Prompt(size_t width) const;
  std::string Footer() const;

  std::vector<::lazaret::approver::v1::PendingRequest> queue_;
  size_t selected_ = 0;
  Mode mode_ = Mode::kList;
  Mode back_ = Mode::kList;  // where help and the editors return to
  // The request the open deny/edit/abort is about.
  std::string target_;
  LineEditor editor_;
  std::optional<::lazaret::approver::v1::ParseCommandResponse> parsed_;
  bool parsing_ = false;
  // Requests this approver decided (their RESOLVED event is not news).
  std::set<std::string> decided_here_;
  std::string last_approved_;
  std::optional<::lazaret::approver::v1::RequestState> output_;
  size_t output_scroll_ = 0;
  size_t detail_scroll_ = 0;
  // How far the last screen drawn could scroll (Render keeps it so that
  // scrolling stops at the end).
  mutable size_t max_scroll_ = 0;
  std::string notice_;
  int64_t now_ = 0;
  Style style_ = Style::kStandalone;
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_MODEL_H_
