#include "services/sessiond/session/attach_hub.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

// A window size from a client, clamped to what a pty takes (0: unknown).
constexpr uint32_t kMaxWindowSide = 4096;
// Output of one kind is appended to the message waiting in a queue up to
// this size, so a busy session is a few large messages, not many small.
constexpr size_t kCoalesceBytes = 64 << 10;

uint32_t Clamp(uint32_t v) { return std::min(v, kMaxWindowSide); }

size_t SizeOf(const sv1::AttachOutput& out) {
  switch (out.output_case()) {
    case sv1::AttachOutput::kTerminal:
      return out.terminal().size();
    case sv1::AttachOutput::kStdout:
      return out.stdout().size();
    case sv1::AttachOutput::kStderr:
      return out.stderr().size();
    case sv1::AttachOutput::kNotice:
      return out.notice().size();
    default:
      return 16;
  }
}

// Appends `next` to `last` when both carry bytes of the same kind.
bool Coalesce(sv1::AttachOutput* last, const sv1::AttachOutput& next) {
  if (last->output_case() != next.output_case()) return false;
  std::string* into = nullptr;
  const std::string* from = nullptr;
  switch (next.output_case()) {
    case sv1::AttachOutput::kTerminal:
      into = last->mutable_terminal();
      from = &next.terminal();
      break;
    case sv1::AttachOutput::kStdout:
      into = last->mutable_stdout();
      from = &next.stdout();
      break;
    case sv1::AttachOutput::kStderr:
      into = last->mutable_stderr();
      from = &next.stderr();
      break;
    default:
      return false;
  }
  if (into->size() + from->size() > kCoalesceBytes) return false;
  into->append(*from);
  return true;
}

std::string Hours(absl::Duration d) {
  if (d >= absl::Hours(1) && d % absl::Hours(1) == absl::ZeroDuration()) {
    return absl::StrCat(absl::ToInt64Hours(d), "h");
  }
  if (d >= absl::Minutes(1) && d % absl::Minutes(1) == absl::ZeroDuration()) {
    return absl::StrCat(absl::ToInt64Minutes(d), "m");
  }
  return absl::StrCat(absl::ToInt64Seconds(d), "s");
}

}  // namespace

UnattendedPolicy UnattendedPolicyOf(const lazaret::config::v1::SessionSettings& settings,
                                    bool stream) {
  UnattendedPolicy p;
  p.stop_on_detach = settings.on_detach() == lazaret::config::v1::ON_DETACH_STOP;
  if (settings.detached_limit_seconds() != 0) {
    p.limit = absl::Seconds(settings.detached_limit_seconds());
  }
  p.stream = stream;
  return p;
}

absl::Time UnattendedStopAt(const UnattendedPolicy& p, const Attendance& a) {
  if (a.attached > 0) return absl::InfiniteFuture();
  absl::Time at = a.detached_since + p.limit;
  if (p.stream || p.stop_on_detach) {
    at = std::min(at, a.ever_attached ? a.detached_since : a.detached_since + p.first_attach_grace);
  }
  return at;
}

std::string UnattendedStopReason(const UnattendedPolicy& p, const Attendance& a) {
  if (a.ever_attached && p.stream) return "when its client was gone";
  if (a.ever_attached && p.stop_on_detach) {
    return "when the last terminal detached (on_detach = \"stop\")";
  }
  if (!a.ever_attached && (p.stream || p.stop_on_detach) &&
      p.first_attach_grace <= p.limit) {
    return absl::StrCat("with no terminal attached within ", Hours(p.first_attach_grace));
  }
  return absl::StrCat("after ", Hours(p.limit), " with no terminal attached (detached_limit)");
}

bool AttachHub::Client::Next(sv1::AttachOutput* out) {
  absl::MutexLock lock(&mu_);
  writing_ = false;  // the caller wrote what the last call returned
  while (true) {
    mu_.Await(absl::Condition(
        +[](Client* c) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return !c->queue_.empty() || c->unflushed_ > 0 || c->ending_;
        },
        this));
    if (unflushed_ == 0) break;
    // A frame the hub began goes out whole before anything else.
    writing_ = true;
    mu_.Unlock();
    const bool sent = direct_->FlushRest();
    mu_.Lock();
    writing_ = false;
    queued_bytes_ -= std::min(queued_bytes_, unflushed_);
    unflushed_ = 0;
    if (!sent) return false;
  }
  if (queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= std::min(queued_bytes_, SizeOf(*out));
  writing_ = direct_ != nullptr;
  return true;
}

bool AttachHub::Client::TryNext(sv1::AttachOutput* out) {
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= std::min(queued_bytes_, SizeOf(*out));
  return true;
}

void AttachHub::Client::Push(sv1::AttachOutput out) {
  if (ending_) return;
  // Nothing waits and nobody writes: the connection takes it now. The exit
  // always goes through the queue (the writer sees it was sent).
  if (direct_ != nullptr && queue_.empty() && unflushed_ == 0 && !writing_ && !out.has_exit()) {
    if (std::optional<size_t> left = direct_->TrySend(out)) {
      unflushed_ = *left;
      queued_bytes_ += *left;
      return;
    }
  }
  queued_bytes_ += SizeOf(out);
  if (!queue_.empty() && Coalesce(&queue_.back(), out)) return;
  queue_.push_back(std::move(out));
}

size_t AttachHub::Client::queued_bytes() const {
  absl::MutexLock lock(&mu_);
  return queued_bytes_;
}

AttachHub::AttachHub(Options options, Io* io, Events* events)
    : options_(std::move(options)), io_(io), events_(events), detached_since_(absl::Now()) {}

sv1::AttachOutput AttachHub::StateFor(const Client* c) const {
  sv1::AttachOutput out;
  sv1::AttachState* st = out.mutable_state();
  st->set_has_input(c == holder_);
  st->set_attached(static_cast<uint32_t>(clients_.size()));
  st->set_session_id(options_.session_id);
  st->set_tty(options_.mode == Mode::kTty);
  st->set_inline_approver(options_.inline_approver);
  st->set_clipboard_write(options_.clipboard_write);
  return out;
}

void AttachHub::MarkTooSlowLocked(Client* c) {
  absl::MutexLock lock(&c->mu_);
  // A terminal that stopped reading: it is detached (what it missed is
  // gone), never allowed to hold up the session or the other terminals.
  c->queue_.clear();
  c->queued_bytes_ = c->unflushed_;  // the rest of a begun frame still goes
  sv1::AttachOutput notice;
  notice.set_notice(absl::StrCat("lazaret: this terminal fell too far behind session ",
                                 options_.session_id, " and was detached; lazaret attach ",
                                 options_.session_id, " shows it again"));
  c->Push(std::move(notice));
  c->ending_ = true;
  c->attached_ = false;
}

void AttachHub::PushLocked(Client* c, sv1::AttachOutput out, bool bounded) {
  {
    absl::MutexLock lock(&c->mu_);
    if (!(bounded && options_.mode == Mode::kTty &&
          c->queued_bytes_ + SizeOf(out) > options_.max_queue_bytes)) {
      c->Push(std::move(out));
      return;
    }
  }
  MarkTooSlowLocked(c);
}

void AttachHub::SendToAllLocked(const sv1::AttachOutput& out) {
  for (const auto& c : clients_) PushLocked(c.get(), out, /*bounded=*/true);
}

void AttachHub::BroadcastStateLocked() {
  for (const auto& c : clients_) PushLocked(c.get(), StateFor(c.get()), /*bounded=*/false);
}

bool AttachHub::RemoveLocked(Client* c) {
  auto it = std::find_if(clients_.begin(), clients_.end(),
                         [c](const std::shared_ptr<Client>& p) { return p.get() == c; });
  if (it == clients_.end()) return false;
  clients_.erase(it);
  c->attached_ = false;
  if (clients_.empty()) detached_since_ = absl::Now();
  if (holder_ != c) return false;
  holder_ = nullptr;
  return true;
}

AttachHub::Client* AttachHub::ReassignInputLocked() {
  for (auto it = clients_.rbegin(); it != clients_.rend(); ++it) {
    if ((*it)->wants_input_) {
      holder_ = it->get();
      return holder_;
    }
  }
  return nullptr;
}

void AttachHub::DropSlowLocked(bool* changed) {
  std::vector<Client*> slow;
  for (const auto& c : clients_) {
    if (!c->attached_) slow.push_back(c.get());
  }
  for (Client* c : slow) {
    if (RemoveLocked(c)) (void)ReassignInputLocked();
    *changed = true;
  }
  if (!slow.empty()) BroadcastStateLocked();
}

std::shared_ptr<AttachHub::Client> AttachHub::Attach(const sv1::AttachHello& hello,
                                                    DirectOutput* direct) {
  auto c = std::make_shared<Client>();
  c->direct_ = direct;
  bool redraw = false;
  bool resize = false;
  {
    absl::MutexLock lock(&mu_);
    if (exited_) {
      absl::MutexLock client_lock(&c->mu_);
      c->Push(exit_);
      c->ending_ = true;
      c->attached_ = false;
      return c;
    }
    c->wants_input_ = hello.take_input();
    c->rows_ = Clamp(hello.size().rows());
    c->cols_ = Clamp(hello.size().cols());
    clients_.push_back(c);
    ever_attached_ = true;
    if (hello.take_input()) holder_ = c.get();
    resize = holder_ == c.get() && options_.mode == Mode::kTty && c->rows_ > 0 && c->cols_ > 0;
    BroadcastStateLocked();
    if (options_.mode == Mode::kTty && hello.replay()) {
      sv1::AttachOutput out;
      if (modes_.alternate_screen() != 0) {
        // No copy of a full-screen program's screen is kept: the client
        // enters the alternate screen and the program draws it again.
        out.set_terminal(modes_.RestoreSequence());
        redraw = true;
      } else {
        std::string shown(ReplayTail(replay_, options_.max_replay_bytes));
        shown += modes_.RestoreSequence();
        out.set_terminal(std::move(shown));
      }
      if (!out.terminal().empty()) PushLocked(c.get(), std::move(out), /*bounded=*/false);
    }
    if (options_.mode == Mode::kStream) {
      // What was written while nobody was attached goes to this client.
      while (!kept_.empty()) {
        PushLocked(c.get(), std::move(kept_.front()), /*bounded=*/false);
        kept_.pop_front();
      }
      kept_bytes_ = 0;
    }
  }
  const bool resized = resize && io_->Resize(c->rows_, c->cols_);
  // A new size has the program draw itself; the same size signals nobody,
  // so a redraw is asked for. Never both: a second round of resizes while
  // the first is drawn only widens the moment in which a key meets the
  // program between two sizes.
  if (redraw && !resized) io_->Redraw();
  events_->AttendanceChanged();
  return c;
}

void AttachHub::Input(const std::shared_ptr<Client>& c, const sv1::AttachInput& in) {
  switch (in.input_case()) {
    case sv1::AttachInput::kStdin: {
      {
        absl::MutexLock lock(&mu_);
        if (holder_ != c.get() || exited_) return;
      }
      io_->WriteInput(in.stdin());
      return;
    }
    case sv1::AttachInput::kStdinEof: {
      if (!in.stdin_eof() || options_.mode != Mode::kStream) return;
      {
        absl::MutexLock lock(&mu_);
        if (holder_ != c.get() || exited_) return;
      }
      io_->CloseInput();
      return;
    }
    case sv1::AttachInput::kResize: {
      bool apply = false;
      uint32_t rows = 0, cols = 0;
      {
        absl::MutexLock lock(&mu_);
        c->rows_ = rows = Clamp(in.resize().rows());
        c->cols_ = cols = Clamp(in.resize().cols());
        apply = holder_ == c.get() && options_.mode == Mode::kTty && rows > 0 && cols > 0;
      }
      if (apply) (void)io_->Resize(rows, cols);
      return;
    }
    case sv1::AttachInput::kTakeInput: {
      if (!in.take_input()) return;
      bool resize = false;
      {
        absl::MutexLock lock(&mu_);
        if (!c->attached_ || exited_) return;
        c->wants_input_ = true;
        if (holder_ == c.get()) return;
        holder_ = c.get();
        resize = options_.mode == Mode::kTty && c->rows_ > 0 && c->cols_ > 0;
        BroadcastStateLocked();
      }
      if (resize) (void)io_->Resize(c->rows_, c->cols_);
      events_->AttendanceChanged();
      return;
    }
    case sv1::AttachInput::kStop:
      if (in.stop()) events_->StopRequested("from an attached terminal");
      return;
    case sv1::AttachInput::kRedraw:
      if (in.redraw() && options_.mode == Mode::kTty) io_->Redraw();
      return;
    default:
      return;  // a second hello, or a field this worker does not know
  }
}

void AttachHub::Detach(const std::shared_ptr<Client>& c) {
  Client* resize_to = nullptr;
  uint32_t rows = 0, cols = 0;
  {
    absl::MutexLock lock(&mu_);
    {
      absl::MutexLock client_lock(&c->mu_);
      c->ending_ = true;
    }
    const bool was_attached = std::find(clients_.begin(), clients_.end(), c) != clients_.end();
    if (!was_attached) return;
    if (RemoveLocked(c.get())) {
      resize_to = ReassignInputLocked();
      if (resize_to != nullptr) {
        rows = resize_to->rows_;
        cols = resize_to->cols_;
      }
    }
    BroadcastStateLocked();
  }
  if (resize_to != nullptr && options_.mode == Mode::kTty && rows > 0 && cols > 0) {
    (void)io_->Resize(rows, cols);
  }
  events_->AttendanceChanged();
}

void AttachHub::TerminalOutput(std::string_view bytes) {
  if (bytes.empty()) return;
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    const bool alternate_before = modes_.alternate_screen() != 0;
    modes_.Feed(bytes);
    const bool alternate_after = modes_.alternate_screen() != 0;
    // The replay is of the main screen: a chunk drawn wholly on the
    // alternate screen is not kept (it is redrawn on attach instead).
    if (!alternate_before || !alternate_after) {
      replay_.append(bytes);
      if (replay_.size() > 2 * options_.max_replay_bytes) {
        replay_ = std::string(ReplayTail(replay_, options_.max_replay_bytes));
      }
    }
    if (clients_.empty()) return;
    sv1::AttachOutput out;
    out.set_terminal(std::string(bytes));
    SendToAllLocked(out);
    DropSlowLocked(&changed);
  }
  if (changed) events_->AttendanceChanged();
}

void AttachHub::StreamOutput(bool is_stderr, std::string_view bytes) {
  if (bytes.empty()) return;
  sv1::AttachOutput out;
  if (is_stderr) {
    out.set_stderr(std::string(bytes));
  } else {
    out.set_stdout(std::string(bytes));
  }
  absl::MutexLock lock(&mu_);
  if (clients_.empty()) {
    kept_bytes_ += bytes.size();
    if (!kept_.empty() && Coalesce(&kept_.back(), out)) return;
    kept_.push_back(std::move(out));
    return;
  }
  // Never dropped: the pump stops reading instead (WantsStreamOutput).
  for (const auto& c : clients_) PushLocked(c.get(), out, /*bounded=*/false);
}

bool AttachHub::WantsStreamOutput() const {
  absl::MutexLock lock(&mu_);
  if (clients_.empty()) return kept_bytes_ < options_.max_kept_bytes;
  for (const auto& c : clients_) {
    if (c->queued_bytes() >= options_.max_queue_bytes) return false;
  }
  return true;
}

bool AttachHub::WantsTerminalOutput() {
  bool changed = false;
  bool want = true;
  {
    absl::MutexLock lock(&mu_);
    if (holder_ == nullptr || holder_->queued_bytes() < options_.max_holder_lag_bytes) {
      holder_stalled_since_ = absl::InfiniteFuture();
    } else {
      const absl::Time now = absl::Now();
      if (holder_stalled_since_ == absl::InfiniteFuture()) holder_stalled_since_ = now;
      if (now - holder_stalled_since_ >= options_.max_holder_stall) {
        MarkTooSlowLocked(holder_);
        DropSlowLocked(&changed);
        holder_stalled_since_ = absl::InfiniteFuture();
      } else {
        want = false;
      }
    }
  }
  if (changed) events_->AttendanceChanged();
  return want;
}

void AttachHub::Notice(const std::string& line) {
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    sv1::AttachOutput out;
    out.set_notice(line);
    SendToAllLocked(out);
    DropSlowLocked(&changed);
  }
  if (changed) events_->AttendanceChanged();
}

void AttachHub::Exit(int exit_code, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (exited_) return;
  exited_ = true;
  exit_.mutable_exit()->set_exit_code(exit_code);
  exit_.mutable_exit()->set_reason(reason);
  for (const auto& c : clients_) {
    absl::MutexLock client_lock(&c->mu_);
    c->Push(exit_);
    c->ending_ = true;
  }
}

bool AttachHub::WaitAllDetached(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](AttachHub* h) ABSL_NO_THREAD_SAFETY_ANALYSIS { return h->clients_.empty(); }, this),
      timeout);
}

Attendance AttachHub::attendance() const {
  absl::MutexLock lock(&mu_);
  Attendance a;
  a.attached = static_cast<uint32_t>(clients_.size());
  a.ever_attached = ever_attached_;
  a.detached_since = clients_.empty() ? detached_since_ : absl::InfinitePast();
  return a;
}

int AttachHub::alternate_screen() const {
  absl::MutexLock lock(&mu_);
  return modes_.alternate_screen();
}

std::string_view AttachHub::ReplayTail(std::string_view output, size_t max_bytes) {
  if (output.size() <= max_bytes) return output;
  std::string_view tail = output.substr(output.size() - max_bytes);
  // From the first line start in the span: never half a line, and so never
  // half an escape sequence of one (the filter passes none with a newline
  // inside but OSC text, which a line start after it leaves out whole).
  const size_t nl = tail.find('\n');
  if (nl != std::string_view::npos && nl + 1 < tail.size()) return tail.substr(nl + 1);
  return tail;
}

}  // namespace lazaret::cli::session
