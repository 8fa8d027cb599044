#include "clients/lazaret/attach/attach_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "clients/lazaret/approve/inline_approver.h"
#include "clients/lazaret/attach/detach_keys.h"
#include "clients/lazaret/attach/terminal_io.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session/attach_frames.h"
#include "services/terminal/output_filter.h"
#include "services/terminal/terminal_modes.h"

namespace lazaret::cli::attach {
namespace {

namespace pb = ::lazaret::session::v1;

// Keys or stdin bytes read at once.
constexpr size_t kReadChunk = 64 << 10;
// Output held while the inline approver's prompt shows; beyond it the
// client stops reading the session (which then holds it, bounded).
constexpr size_t kMaxHeld = 4 << 20;
// Exit code when the session is lost (no SessionExit): Lazaret failed.
constexpr int kLost = 125;

sigset_t AttachSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&set, s);
  return set;
}

pb::WindowSize SizeOf(int in_fd, int out_fd) {
  pb::WindowSize size;
  winsize ws{};
  if (ioctl(in_fd, TIOCGWINSZ, &ws) == 0 || ioctl(out_fd, TIOCGWINSZ, &ws) == 0) {
    size.set_rows(ws.ws_row);
    size.set_cols(ws.ws_col);
  }
  return size;
}

// What carries one attachment: AttachService's gRPC call, or for a
// terminal the framed socket beside it (services/sessiond/session/
// attach_frames.h), where a key and its echo cost no RPC machinery.
class Channel {
 public:
  virtual ~Channel() = default;
  virtual bool Write(const pb::AttachInput& in) = 0;
  virtual bool Read(pb::AttachOutput* out) = 0;
  // No more input: the worker reads the end.
  virtual void WritesDone() = 0;
  // Makes a Read blocked on the channel return false.
  virtual void Cancel() = 0;
  // After Read returned false: empty when the worker closed cleanly, else
  // what broke.
  virtual std::string Finish() = 0;
};

class GrpcChannel final : public Channel {
 public:
  explicit GrpcChannel(const std::string& socket)
      : stub_(pb::AttachService::NewStub(DialUnix(socket))), stream_(stub_->Attach(&context_)) {}
  bool Write(const pb::AttachInput& in) override { return stream_->Write(in); }
  bool Read(pb::AttachOutput* out) override { return stream_->Read(out); }
  void WritesDone() override { (void)stream_->WritesDone(); }
  void Cancel() override { context_.TryCancel(); }
  std::string Finish() override {
    const grpc::Status s = stream_->Finish();
    return s.ok() ? std::string() : s.error_message();
  }

 private:
  std::unique_ptr<pb::AttachService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AttachInput, pb::AttachOutput>> stream_;
};

class FramedClientChannel final : public Channel {
 public:
  explicit FramedClientChannel(std::unique_ptr<session::FramedChannel> channel)
      : channel_(std::move(channel)) {}
  bool Write(const pb::AttachInput& in) override { return channel_->Write(in); }
  bool Read(pb::AttachOutput* out) override { return channel_->Read(out); }
  void WritesDone() override { channel_->ShutdownWrite(); }
  void Cancel() override { channel_->Shutdown(); }
  std::string Finish() override { return std::string(); }

 private:
  std::unique_ptr<session::FramedChannel> channel_;
};

// The framed socket beside a session's attach socket, for a terminal; the
// gRPC call otherwise, and when the framed socket cannot be reached.
std::unique_ptr<Channel> OpenChannel(const std::string& attach_socket, bool terminal) {
  if (terminal) {
    const size_t slash = attach_socket.rfind('/');
    if (slash != std::string::npos) {
      absl::StatusOr<std::unique_ptr<session::FramedChannel>> framed = session::ConnectFramed(
          absl::StrCat(attach_socket.substr(0, slash + 1), session::kAttachFramesSocketName));
      if (framed.ok()) return std::make_unique<FramedClientChannel>(*std::move(framed));
    }
  }
  return std::make_unique<GrpcChannel>(attach_socket);
}

// One attachment, from hello to the end.
class Attachment {
 public:
  explicit Attachment(const AttachOptions& o) : o_(o) {}
  ~Attachment();

  int Run(bool tty_session);

 private:
  // How the main loop ended.
  enum class End { kSession, kDetach };

  // The reader thread: every AttachOutput until the stream ends.
  void ReadOutput();
  void OnTerminalOutput(const std::string& bytes);
  void WriteNotice(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Send(const pb::AttachInput& in);
  // No more input (WritesDone): after a detach, or the session's exit.
  void CloseInput();
  void SendResize();
  void Poke();

  // The inline approver's hold on the terminal (any thread).
  void Pause();
  void Resume();
  void StartInlineApprover();

  // Keys read in a tty session; false when they detach.
  bool OnKeys(std::string_view keys);
  // Leaves the terminal as the developer had it (after a detach, or the
  // session's end).
  void LeaveTerminal(bool detaching);

  bool HoldRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !paused_ || held_.size() < kMaxHeld || detaching_;
  }

  const AttachOptions o_;
  std::unique_ptr<Channel> stream_;
  absl::Mutex write_mu_;  // one Write at a time (main loop, approver resume)
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  std::thread reader_;
  int wake_[2] = {-1, -1};
  bool tty_session_ = false;
  std::unique_ptr<RawMode> raw_;  // the developer's terminal while attached
  DetachKeys keys_;
  std::unique_ptr<approve::InlineApprover> approver_;
  // Stream sessions: the terminal policy (clipboard writes blocked) on
  // stdout and stderr where they are a terminal; null elsewhere.
  std::unique_ptr<terminal::OutputFilter> stdout_filter_;
  std::unique_ptr<terminal::OutputFilter> stderr_filter_;

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // the stream ended
  bool detaching_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_on_alternate_ ABSL_GUARDED_BY(mu_) = false;
  bool output_broken_ ABSL_GUARDED_BY(mu_) = false;  // stdout is gone (EPIPE)
  bool raw_active_ ABSL_GUARDED_BY(mu_) = false;     // raw_ holds the terminal
  std::string held_ ABSL_GUARDED_BY(mu_);
  terminal::TerminalModes modes_ ABSL_GUARDED_BY(mu_);
  bool got_exit_ ABSL_GUARDED_BY(mu_) = false;
  // The session's AttachState said its requests may be decided here.
  bool approver_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool approver_tried_ = false;  // the main loop's
  pb::SessionExit exit_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> notices_ ABSL_GUARDED_BY(mu_);
};

Attachment::~Attachment() {
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

void Attachment::Poke() {
  if (wake_[1] >= 0) (void)!write(wake_[1], "w", 1);
}

bool Attachment::Send(const pb::AttachInput& in) {
  absl::MutexLock lock(&write_mu_);
  return !writes_done_ && stream_->Write(in);
}

void Attachment::CloseInput() {
  absl::MutexLock lock(&write_mu_);
  if (writes_done_) return;
  writes_done_ = true;
  stream_->WritesDone();
}

void Attachment::SendResize() {
  pb::AttachInput in;
  *in.mutable_resize() = SizeOf(o_.in_fd, o_.out_fd);
  if (in.resize().rows() != 0) (void)Send(in);
}

void Attachment::WriteNotice(const std::string& line) {
  notices_.insert(line);
  // In raw mode a line feed does not return the carriage.
  const bool raw = raw_active_ && isatty(o_.err_fd) == 1;
  WriteAll(o_.err_fd, absl::StrCat(line, raw ? "\r\n" : "\n"));
}

void Attachment::OnTerminalOutput(const std::string& bytes) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Attachment::HoldRoom));
  if (detaching_) return;
  if (paused_) {
    held_.append(bytes);
    return;
  }
  modes_.Feed(bytes);
  WriteAll(o_.out_fd, bytes);
}

void Attachment::ReadOutput() {
  pb::AttachOutput out;
  while (stream_->Read(&out)) {
    switch (out.output_case()) {
      case pb::AttachOutput::kTerminal:
        OnTerminalOutput(out.terminal());
        break;
      case pb::AttachOutput::kStdout:
      case pb::AttachOutput::kStderr: {
        const bool is_stdout = out.output_case() == pb::AttachOutput::kStdout;
        const std::string& bytes = is_stdout ? out.stdout() : out.stderr();
        const int fd = is_stdout ? o_.out_fd : o_.err_fd;
        // A stream the worker does not filter (it may be data for a file)
        // that lands on a terminal here gets the terminal policy too.
        std::unique_ptr<terminal::OutputFilter>& filter = is_stdout ? stdout_filter_ : stderr_filter_;
        const std::string filtered = filter != nullptr ? filter->Filter(bytes) : std::string();
        if (!WriteAll(fd, filter != nullptr ? std::string_view(filtered) : std::string_view(bytes)) &&
            errno == EPIPE) {
          absl::MutexLock lock(&mu_);
          output_broken_ = true;
          Poke();
        }
        break;
      }
      case pb::AttachOutput::kNotice: {
        absl::MutexLock lock(&mu_);
        WriteNotice(out.notice());
        break;
      }
      case pb::AttachOutput::kExit: {
        {
          absl::MutexLock lock(&mu_);
          got_exit_ = true;
          exit_ = out.exit();
        }
        // The last message: the worker ends the call once this side is
        // closed too (it would otherwise wait out its grace).
        CloseInput();
        break;
      }
      case pb::AttachOutput::kState: {
        if (out.state().clipboard_write()) {
          // The profile lets clipboard writes through; so does the filter
          // of a stream shown on a terminal (this thread is its only user).
          terminal::OutputPolicy policy;
          policy.clipboard_write = true;
          if (stdout_filter_ != nullptr) stdout_filter_ = std::make_unique<terminal::OutputFilter>(policy);
          if (stderr_filter_ != nullptr) stderr_filter_ = std::make_unique<terminal::OutputFilter>(policy);
        }
        absl::MutexLock lock(&mu_);
        if (out.state().inline_approver() && !approver_wanted_) {
          approver_wanted_ = true;
          Poke();  // the main loop starts it
        }
        break;
      }
      case pb::AttachOutput::OUTPUT_NOT_SET:
        break;
    }
  }
  absl::MutexLock lock(&mu_);
  done_ = true;
  Poke();
}

void Attachment::Pause() {
  {
    absl::MutexLock lock(&mu_);
    if (paused_) return;
    paused_ = true;
    paused_on_alternate_ = modes_.alternate_screen() != 0;
    WriteAll(o_.out_fd, modes_.QuietSequence());
  }
  Poke();
}

void Attachment::Resume() {
  bool redraw = false;
  {
    absl::MutexLock lock(&mu_);
    if (!paused_) return;
    paused_ = false;
    WriteAll(o_.out_fd, modes_.RestoreSequence());
    modes_.Feed(held_);
    WriteAll(o_.out_fd, held_);
    held_.clear();
    held_.shrink_to_fit();
    // The prompt drew over the agent's alternate screen, which no terminal
    // keeps a copy of: the agent must draw it again.
    redraw = paused_on_alternate_ && modes_.alternate_screen() != 0;
  }
  Poke();
  if (redraw) {
    pb::AttachInput in;
    in.set_redraw(true);
    (void)Send(in);
  }
}

// In every attached tty terminal, unless the developer chose the remote
// approver: brokerd shows it only the requests of this session, and it
// takes the terminal only when one arrives while no `lazaret approve`
// watches the session.
void Attachment::StartInlineApprover() {
  approve::InlineOptions a;
  a.broker_socket = escalation::BrokerSocket(o_.runtime_dir);
  a.session_id = o_.session_id;
  a.tty_fd = o_.in_fd;
  const char* no_color = std::getenv("NO_COLOR");
  a.color = no_color == nullptr || *no_color == '\0';
  a.pause = [this] { Pause(); };
  a.resume = [this] { Resume(); };
  absl::StatusOr<std::unique_ptr<approve::InlineApprover>> started =
      approve::InlineApprover::Start(std::move(a));
  if (!started.ok()) {
    // Requests then wait for `lazaret approve` (or expire, denied).
    absl::MutexLock lock(&mu_);
    WriteNotice(absl::StrCat(o_.program, ": no inline approver (", started.status().message(),
                             "); use lazaret approve"));
    return;
  }
  approver_ = *std::move(started);
}

bool Attachment::OnKeys(std::string_view keys) {
  while (!keys.empty()) {
    const DetachKeys::Result r = keys_.Feed(keys);
    if (!r.send.empty()) {
      pb::AttachInput in;
      in.set_stdin(r.send);
      (void)Send(in);
    }
    keys.remove_prefix(r.consumed);
    switch (r.action) {
      case DetachKeys::Action::kNone:
        break;
      case DetachKeys::Action::kDetach:
        return false;
      case DetachKeys::Action::kTakeInput: {
        pb::AttachInput in;
        in.set_take_input(true);
        (void)Send(in);
        SendResize();
        break;
      }
    }
  }
  return true;
}

void Attachment::LeaveTerminal(bool detaching) {
  if (raw_ == nullptr) return;
  std::string leave;
  {
    absl::MutexLock lock(&mu_);
    detaching_ = true;  // no more output reaches the terminal
    raw_active_ = false;
    leave = LeaveSequence(modes_, detaching);
  }
  WriteAll(o_.out_fd, leave);
  // Answers the terminal owes the agent (a cursor report, a device
  // attribute) would otherwise arrive at the developer's shell as typed
  // text.
  if (detaching) DrainAnswers(o_.in_fd, o_.out_fd);
  raw_.reset();
}

int Attachment::Run(bool tty_session) {
  tty_session_ = tty_session;
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    dprintf(o_.err_fd, "%s: pipe2: %s\n", o_.program.c_str(), std::strerror(errno));
    return kLost;
  }
  const sigset_t signals = AttachSignals();
  const int sigfd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    dprintf(o_.err_fd, "%s: signalfd: %s\n", o_.program.c_str(), std::strerror(errno));
    return kLost;
  }

  if (!tty_session_) {
    if (isatty(o_.out_fd) == 1) {
      stdout_filter_ = std::make_unique<terminal::OutputFilter>(terminal::OutputPolicy());
    }
    if (isatty(o_.err_fd) == 1) {
      stderr_filter_ = std::make_unique<terminal::OutputFilter>(terminal::OutputPolicy());
    }
  }
  stream_ = OpenChannel(o_.attach_socket, tty_session_);
  pb::AttachInput hello;
  hello.mutable_hello()->set_take_input(o_.take_input);
  hello.mutable_hello()->set_replay(o_.replay);
  if (tty_session_) *hello.mutable_hello()->mutable_size() = SizeOf(o_.in_fd, o_.out_fd);
  if (!Send(hello)) {
    const std::string error = stream_->Finish();
    dprintf(o_.err_fd, "%s: cannot attach to session %s on %s: %s\n", o_.program.c_str(),
                 o_.session_id.c_str(), o_.attach_socket.c_str(),
                 error.empty() ? "its worker closed the connection" : error.c_str());
    close(sigfd);
    return kLost;
  }
  if (tty_session_ && isatty(o_.in_fd) == 1) {
    absl::StatusOr<std::unique_ptr<RawMode>> raw = RawMode::Enter(o_.in_fd);
    if (raw.ok()) {
      raw_ = *std::move(raw);
      absl::MutexLock lock(&mu_);
      raw_active_ = true;
    }
  }
  reader_ = std::thread(&Attachment::ReadOutput, this);

  End end = End::kSession;
  int stop_signal = 0;
  bool stdin_open = true;
  auto stop = [&](int sig) {
    if (stop_signal != 0) return;
    stop_signal = sig;
    pb::AttachInput in;
    in.set_stop(true);
    (void)Send(in);
  };
  bool looping = true;
  while (looping) {
    bool paused, broken, approver_wanted;
    {
      absl::MutexLock lock(&mu_);
      if (done_) break;
      paused = paused_;
      broken = output_broken_;
      approver_wanted = approver_wanted_;
    }
    if (broken) stop(SIGPIPE);
    if (approver_wanted && !approver_tried_ && tty_session_ && raw_ != nullptr &&
        o_.inline_approver) {
      approver_tried_ = true;  // started, or said why not: once
      StartInlineApprover();
    }
    pollfd fds[3] = {{stdin_open && !paused ? o_.in_fd : -1, POLLIN, 0},
                     {sigfd, POLLIN, 0},
                     {wake_[0], POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) DrainPipe(wake_[0]);
    if (fds[1].revents != 0) {
      signalfd_siginfo si{};
      while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGWINCH) {
          if (tty_session_) SendResize();
        } else if (tty_session_ && (sig == SIGHUP || sig == SIGTERM)) {
          // The terminal is gone or the client was told to go: the
          // session stays.
          end = End::kDetach;
          looping = false;
        } else {
          stop(sig);
        }
      }
      if (!looping) break;
    }
    if (fds[0].revents != 0) {
      char buf[kReadChunk];
      ssize_t got;
      {
        absl::MutexLock lock(&mu_);
        if (paused_) continue;  // the prompt took the terminal meanwhile
        got = read(o_.in_fd, buf, sizeof(buf));
      }
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        stdin_open = false;
        if (tty_session_) {
          // The developer's terminal closed: a detach. Without a terminal
          // of its own (a pipe), the client keeps watching.
          if (raw_ != nullptr) {
            end = End::kDetach;
            break;
          }
        } else {
          pb::AttachInput in;
          in.set_stdin_eof(true);
          (void)Send(in);
        }
        continue;
      }
      const std::string_view keys(buf, static_cast<size_t>(got));
      if (tty_session_) {
        if (!OnKeys(keys)) {
          end = End::kDetach;
          break;
        }
      } else {
        pb::AttachInput in;
        in.set_stdin(std::string(keys));
        (void)Send(in);
      }
    }
  }
  close(sigfd);

  // The prompt, if one shows, gives the terminal back first.
  if (approver_ != nullptr) approver_->Stop();
  LeaveTerminal(end == End::kDetach);
  if (end == End::kDetach) {
    CloseInput();
    stream_->Cancel();
  }
  reader_.join();
  approver_.reset();
  const std::string error = stream_->Finish();
  if (end == End::kDetach) {
    dprintf(o_.err_fd, "detached from session %s (lazaret attach %s)\n", o_.session_id.c_str(),
                 o_.session_id.c_str());
    return 0;
  }
  absl::MutexLock lock(&mu_);
  if (!got_exit_) {
    dprintf(o_.err_fd,
                 "%s: lost session %s before it ended (%s); lazaret ps shows whether it still "
                 "runs, lazaret attach %s attaches again\n",
                 o_.program.c_str(), o_.session_id.c_str(),
                 error.empty() ? "its worker closed the stream" : error.c_str(),
                 o_.session_id.c_str());
    return kLost;
  }
  // The reason, unless a notice of the teardown said it already.
  bool said = exit_.reason().empty();
  for (const std::string& n : notices_) said = said || n.find(exit_.reason()) != std::string::npos;
  if (!said) {
    dprintf(o_.err_fd, "lazaret: %s\n", exit_.reason().c_str());
  }
  // Stopped by a signal to this client: 128+signal, as the session runner
  // always returned.
  if (stop_signal != 0 && stop_signal != SIGPIPE) return 128 + stop_signal;
  return exit_.exit_code();
}

}  // namespace

void BlockAttachSignals() {
  const sigset_t set = AttachSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A closed stdout (`lazaret run ... | head`) is a write error, not death:
  // the session is then stopped cleanly.
  signal(SIGPIPE, SIG_IGN);
}

int RunAttached(const AttachOptions& options) {
  Attachment a(options);
  return a.Run(options.tty_session);
}

}  // namespace lazaret::cli::attach
