// The inline approver of `lazaret run`: watches the session's requests -
// host commands (escalation) and names asked for (egress = "ask") - with
// WatchPending, KIND_INLINE, for the whole session and, when one
// arrives while no `lazaret approve` or script approver watches the session,
// takes the developer's terminal from the pty proxy, shows the approver's
// prompt on the alternate screen and gives the terminal back once nothing
// is pending (decided here or elsewhere: the first decision wins) or the
// developer presses q. When the prompt opens, whatever the developer typed
// and the proxy has not read is discarded and keys are ignored until the
// typing stops (Model's guard): a word being typed to the agent never
// decides anything. Runs in the `lazaret` CLI, as the user, on two
// threads of its own (the watch and the prompt); the sandbox's text is
// shown only through display_text.h.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_INLINE_APPROVER_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_INLINE_APPROVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "clients/lazaret/approve/approver_client.h"
#include "clients/lazaret/approve/inbox.h"
#include "clients/lazaret/approve/model.h"

namespace lazaret::cli::approve {

struct InlineOptions {
  std::string broker_socket;  // <runtime_dir>/brokerd.sock
  std::string session_id;
  // The developer's terminal (not owned): keys are read from it and the
  // prompt drawn on it while the proxy is paused.
  int tty_fd = -1;
  bool color = true;  // false for NO_COLOR
  // Take the terminal from the sandbox and give it back (PtyProxy::Pause,
  // PtyProxy::Resume).
  std::function<void()> pause;
  std::function<void()> resume;
};

class InlineApprover {
 public:
  // Starts watching. Call on the main thread before the prompt may show
  // (it sets the locale's LC_CTYPE to a UTF-8 one).
  static absl::StatusOr<std::unique_ptr<InlineApprover>> Start(InlineOptions options);
  // Stop.
  ~InlineApprover();
  InlineApprover(const InlineApprover&) = delete;
  InlineApprover& operator=(const InlineApprover&) = delete;

  // Closes a prompt that is showing (the terminal back to the proxy first),
  // ends the watch and joins the threads. Idempotent.
  void Stop();

 private:
  explicit InlineApprover(InlineOptions options);

  void Watch();
  void Ui();
  // Shows the prompt until nothing is pending, q, or Stop.
  void Prompt(Model& model);
  // Takes the events waiting; true when one of them is a request not seen
  // before.
  bool TakeEvents(Model& model);
  // Whether a terminal or script approver watches this session now.
  bool RemoteApproverAttached();
  bool Stopping() const { return stopping_.load(); }

  const InlineOptions options_;
  ApproverClient client_;
  ::lazaret::approver::v1::Approver approver_;
  int wake_[2] = {-1, -1};  // events and Stop wake the UI thread
  std::unique_ptr<Inbox> inbox_;
  std::set<std::string> seen_;  // broker ids announced so far (UI thread)
  std::atomic<bool> stopping_{false};
  std::thread watch_;
  std::thread ui_;
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_INLINE_APPROVER_H_
