// The attached terminals of one session, as its worker sees them: every
// client gets the session's output through a queue of its own, one client
// at a time holds the input, the pty's size follows that client, and a new
// client is shown what the session shows (the replay). AttachService
// (attach_service.h) moves these queues over gRPC; the sandbox's pty or
// pipes (sandbox_io.h) feed the output in and take the input out.
//
//   tty session:    the output, already filtered (services/terminal), is
//                   tracked for the terminal modes and kept as a replay of
//                   the last lines on the main screen (bounded: the oldest
//                   goes); nobody attached: nothing else is kept.
//   stream session: stdout and stderr apart and in order; nobody attached:
//                   kept (bounded), then the pump stops reading (the
//                   command blocks); a client's queue full: likewise, so a
//                   pipeline loses nothing.
//
// A tty session is paced to the terminal holding the input, as a terminal
// paces a program writing to it: while that client has more than a
// bounded amount waiting, the pump stops reading the pty (the agent's
// writes wait). Any other tty client whose queue outgrows its bound (a
// terminal that stopped reading), and the input holder when it has not
// caught up for a while, is detached with a notice, so none holds up the
// others for long.
//
// Runs in the session worker (lazaret-sessiond --session-worker, as the
// user), on the pump thread and on the attach RPCs' threads. Clients are of
// the session's own uid (the attach socket's peer check); what they send is
// still bounded and checked: sizes are clamped, input from a client that
// does not hold it is dropped. The output is the sandbox's: passed through
// (filtered before it gets here), never interpreted beyond the modes.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_HUB_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_HUB_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/session/v1/session.pb.h"
#include "services/terminal/terminal_modes.h"

namespace lazaret::cli::session {

// Whether terminals are attached, for the unattended-session rule.
struct Attendance {
  uint32_t attached = 0;
  bool ever_attached = false;
  // Since when none is attached (the hub's creation before the first).
  absl::Time detached_since = absl::InfinitePast();
};

// The profile's [session] settings as the worker enforces them.
struct UnattendedPolicy {
  // on_detach = "stop": stop as soon as the last terminal detached.
  bool stop_on_detach = false;
  // on_detach = "keep": how long a session may run with none attached.
  absl::Duration limit = absl::Hours(12);
  // A stream session (no terminal) ends when its last client is gone: its
  // client is the pipeline that started it.
  bool stream = false;
  // Before the first attach (the starting client died in between), "stop"
  // and stream sessions still wait this long for one.
  absl::Duration first_attach_grace = absl::Seconds(60);
};

// The policy from the profile: on_detach (unset: keep) and
// detached_limit_seconds (unset or 0: 12 h).
UnattendedPolicy UnattendedPolicyOf(const lazaret::config::v1::SessionSettings& settings,
                                    bool stream);

// When the session is to be stopped for being unattended;
// absl::InfiniteFuture() while a terminal is attached.
absl::Time UnattendedStopAt(const UnattendedPolicy& policy, const Attendance& attendance);

// Why, as the rest of "stopped ..." ("after 12h with no terminal
// attached (detached_limit)"), for the stop's notice and SessionExit.reason.
std::string UnattendedStopReason(const UnattendedPolicy& policy, const Attendance& attendance);

class AttachHub {
 public:
  enum class Mode { kTty, kStream };

  // The session's side the hub drives: the pty or the pipes. Called without
  // the hub's lock held, from the attach RPCs' threads.
  class Io {
   public:
    virtual ~Io() = default;
    // Keys (tty) or stdin bytes (stream), in order.
    virtual void WriteInput(std::string bytes) = 0;
    // Stream: stdin is at its end.
    virtual void CloseInput() = 0;
    // Tty: the pty's window size (the kernel signals the foreground job
    // when it changed). True when it changed.
    virtual bool Resize(uint32_t rows, uint32_t cols) = 0;
    // Tty: has the full-screen program redraw (a momentary resize).
    virtual void Redraw() = 0;
  };

  // What the worker is told. Called without the hub's lock held.
  class Events {
   public:
    virtual ~Events() = default;
    // A client asked for the clean stop (AttachInput.stop).
    virtual void StopRequested(const std::string& reason) = 0;
    // The attendance or the input holder changed (SessionInfo, and the
    // unattended rule).
    virtual void AttendanceChanged() = 0;
  };

  struct Options {
    Mode mode = Mode::kTty;
    std::string session_id;
    // Tty: the replay of the main screen's last lines.
    size_t max_replay_bytes = 64 << 10;
    // Stream: the output kept while no client is attached.
    size_t max_kept_bytes = 1 << 20;
    // Per client: what waits to be sent. Tty: beyond it the client is
    // detached; stream: beyond it the pump stops reading.
    size_t max_queue_bytes = 4 << 20;
    // Tty: beyond this much waiting for the input holder the pump stops
    // reading the pty; a holder that stays behind this long is detached.
    size_t max_holder_lag_bytes = 1 << 20;
    absl::Duration max_holder_stall = absl::Seconds(10);
    // Told to every client in its AttachState.
    bool inline_approver = false;
    bool clipboard_write = false;
  };

  // A client's connection that the hub may write to itself, without
  // blocking, while nothing waits in that client's queue (the framed
  // socket, attach_frames.h): the echo of a key then leaves the worker from
  // the pump thread that read it, with no hand-off to the connection's
  // writer. Called with the client's lock held, never while the writer
  // writes (Next's caller between two calls of Next).
  class DirectOutput {
   public:
    virtual ~DirectOutput() = default;
    // Without blocking: nullopt when nothing of `out` could be sent (the
    // socket is full, or gone); otherwise how many bytes of its frame are
    // left for FlushRest (0: all of it went).
    virtual std::optional<size_t> TrySend(const lazaret::session::v1::AttachOutput& out) = 0;
    // Blocking: the rest of the frame TrySend began. False when the
    // connection is gone.
    virtual bool FlushRest() = 0;
  };

  // One attached client: its queue of AttachOutput messages.
  class Client {
   public:
    // Waits for the next message; false once nothing more will come (the
    // client was detached, or its last message was taken). With a
    // DirectOutput, the caller writes the message before it calls Next
    // again, and Next first finishes a frame the hub began.
    bool Next(lazaret::session::v1::AttachOutput* out);
    // Without waiting: false when the queue is empty.
    bool TryNext(lazaret::session::v1::AttachOutput* out);

   private:
    friend class AttachHub;
    // Precondition: mu_ held.
    void Push(lazaret::session::v1::AttachOutput out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
    size_t queued_bytes() const;

    mutable absl::Mutex mu_;
    std::deque<lazaret::session::v1::AttachOutput> queue_ ABSL_GUARDED_BY(mu_);
    size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
    bool ending_ ABSL_GUARDED_BY(mu_) = false;  // nothing more is queued
    // Set at Attach, then constant.
    DirectOutput* direct_ = nullptr;
    // The writer holds a message taken by Next (the hub must not write).
    bool writing_ ABSL_GUARDED_BY(mu_) = false;
    // Bytes of a frame the hub began that FlushRest still has to send.
    size_t unflushed_ ABSL_GUARDED_BY(mu_) = 0;

    // The hub's, under the hub's lock.
    bool attached_ = true;
    bool wants_input_ = false;
    uint32_t rows_ = 0;
    uint32_t cols_ = 0;
  };

  AttachHub(Options options, Io* io, Events* events);
  AttachHub(const AttachHub&) = delete;
  AttachHub& operator=(const AttachHub&) = delete;

  // A new client from its hello: the state, the replay when asked for, the
  // output kept while none was attached (stream), or, after the session
  // ended, only its exit. `direct` (may be null) outlives the client's
  // Detach.
  std::shared_ptr<Client> Attach(const lazaret::session::v1::AttachHello& hello,
                                 DirectOutput* direct = nullptr);
  // Everything a client sends after its hello.
  void Input(const std::shared_ptr<Client>& client, const lazaret::session::v1::AttachInput& in);
  // The client is gone (its stream ended or broke). Idempotent.
  void Detach(const std::shared_ptr<Client>& client);

  // From the pump: tty output (filtered), stream output.
  void TerminalOutput(std::string_view bytes);
  void StreamOutput(bool is_stderr, std::string_view bytes);
  // Stream: whether the pump may read more now.
  bool WantsStreamOutput() const;
  // Tty: whether the pump may read more now (the input holder keeps up).
  bool WantsTerminalOutput();

  // A line of Lazaret's own to every attached client.
  void Notice(const std::string& line);
  // The session ended: the last message to every client (and to any that
  // attaches later).
  void Exit(int exit_code, const std::string& reason);
  // After Exit: waits (at most `timeout`) until every client has been sent
  // its messages and detached. True when all have.
  bool WaitAllDetached(absl::Duration timeout);

  Attendance attendance() const;
  Mode mode() const { return options_.mode; }
  // Tty: the modes the output has set so far.
  int alternate_screen() const;

  // The replay of the main screen: the last lines of `output`, at most
  // `max_bytes`, starting at a line start when there is one in that span.
  static std::string_view ReplayTail(std::string_view output, size_t max_bytes);

 private:
  void PushLocked(Client* c, lazaret::session::v1::AttachOutput out, bool bounded)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `c` from the clients; true when it held the input.
  bool RemoveLocked(Client* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the input to the last attached client that wants it; returns it.
  Client* ReassignInputLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BroadcastStateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  lazaret::session::v1::AttachOutput StateFor(const Client* c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendToAllLocked(const lazaret::session::v1::AttachOutput& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Empties `c`'s queue but for the notice that it fell behind, and ends it.
  void MarkTooSlowLocked(Client* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tty clients detached meanwhile for being too slow.
  void DropSlowLocked(bool* changed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  Io* const io_;
  Events* const events_;

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Client>> clients_ ABSL_GUARDED_BY(mu_);
  Client* holder_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool ever_attached_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time detached_since_ ABSL_GUARDED_BY(mu_);
  // Tty.
  terminal::TerminalModes modes_ ABSL_GUARDED_BY(mu_);
  std::string replay_ ABSL_GUARDED_BY(mu_);
  // Since when the input holder has been too far behind.
  absl::Time holder_stalled_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Stream: output while no client was attached.
  std::deque<lazaret::session::v1::AttachOutput> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool exited_ ABSL_GUARDED_BY(mu_) = false;
  lazaret::session::v1::AttachOutput exit_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_HUB_H_
