#include "services/sessiond/session/sandbox_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// Input not yet taken by the pty or stdin; beyond it WriteInput waits.
constexpr size_t kMaxToChild = 256 << 10;
// At most this much is read before the pump looks at its other
// descriptors again.
constexpr size_t kMaxReadBurst = 256 << 10;
// Finish: drained once quiet this long, or at the latest after kFinishMax.
constexpr int kQuietMs = 100;
constexpr auto kFinishMax = std::chrono::seconds(2);
// While the hub takes no output, how often the pump looks again.
constexpr int kBlockedPollMs = 20;
// Redraw: how long the window stays one row shorter, so that podman and
// the sandbox see two sizes, not one coalesced resize.
constexpr auto kRedrawGap = std::chrono::milliseconds(120);

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void DrainPipe(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

absl::Status NonBlocking(int fd) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl O_NONBLOCK", errno);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SandboxIo>> SandboxIo::Create(const Options& options) {
  std::unique_ptr<SandboxIo> io(new SandboxIo(options));
  if (pipe2(io->wake_, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoStatus("pipe", errno);
  if (options.tty) {
    io->master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (io->master_ < 0) return ErrnoStatus("posix_openpt", errno);
    char name[128];
    if (grantpt(io->master_) != 0 || unlockpt(io->master_) != 0 ||
        ptsname_r(io->master_, name, sizeof(name)) != 0) {
      return ErrnoStatus("setting up the pty", errno);
    }
    io->slave_path_ = name;
    LAZ_RETURN_IF_ERROR(NonBlocking(io->master_));
    io->SetSize(options.rows, options.cols);
    return io;
  }
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  io->child_ends_[0] = in[0];
  io->stdin_w_ = in[1];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  io->stdout_r_ = out[0];
  io->child_ends_[1] = out[1];
  if (pipe2(err, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  io->stderr_r_ = err[0];
  io->child_ends_[2] = err[1];
  for (int fd : {io->stdin_w_, io->stdout_r_, io->stderr_r_}) LAZ_RETURN_IF_ERROR(NonBlocking(fd));
  return io;
}

SandboxIo::~SandboxIo() {
  Finish();
  for (int* fd : {&master_, &stdin_w_, &stdout_r_, &stderr_r_, &child_ends_[0], &child_ends_[1],
                  &child_ends_[2], &wake_[0], &wake_[1]}) {
    CloseFd(fd);
  }
}

absl::StatusOr<pid_t> SandboxIo::Start(const std::vector<std::string>& argv) {
  if (pump_.joinable()) return absl::FailedPreconditionError("the sandbox already started");
  if (hub_ == nullptr) return absl::FailedPreconditionError("the sandbox's output has no hub");
  ChildSpec spec;
  spec.argv = argv;
  spec.die_with_parent = true;
  if (options_.tty) {
    slave_ = open(slave_path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave_ < 0) return ErrnoStatus(absl::StrCat("opening ", slave_path_), errno);
    // The settings a terminal starts with (a cooked line discipline with
    // the usual erase and interrupt characters), as a login gets them.
    termios mode{};
    if (tcgetattr(slave_, &mode) == 0) {
      mode.c_iflag |= IUTF8;
      (void)tcsetattr(slave_, TCSANOW, &mode);
    }
    spec.stdin_fd = ChildStdio::Fd(slave_);
    spec.stdout_fd = ChildStdio::Fd(slave_);
    spec.stderr_fd = ChildStdio::Fd(slave_);
    spec.group = ChildGroup::kTerminalSession;
  } else {
    spec.stdin_fd = ChildStdio::Fd(child_ends_[0]);
    spec.stdout_fd = ChildStdio::Fd(child_ends_[1]);
    spec.stderr_fd = ChildStdio::Fd(child_ends_[2]);
    spec.group = ChildGroup::kOwnGroup;
  }
  LAZ_ASSIGN_OR_RETURN(PreparedChild prepared, PreparedChild::Create(std::move(spec)));
  LAZ_ASSIGN_OR_RETURN(const pid_t pid, Spawn(prepared));
  // The child's ends are the child's alone: the pipes reach EOF when it
  // (and whatever it gave them to) is done. The pty's slave stays held
  // until Finish: Linux may drop what the child wrote last when the slave's
  // last holder closes before the pump read it.
  for (int& fd : child_ends_) CloseFd(&fd);
  pump_ = std::thread(&SandboxIo::Pump, this);
  return pid;
}

void SandboxIo::Finish() {
  {
    absl::MutexLock lock(&mu_);
    finishing_ = true;
  }
  Poke();
  if (pump_.joinable()) pump_.join();
  CloseFd(&slave_);
  absl::MutexLock lock(&mu_);
  input_gone_ = true;  // a waiting WriteInput gives up
}

void SandboxIo::WriteInput(std::string bytes) {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](SandboxIo* io) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return io->to_child_.size() < kMaxToChild || io->input_gone_;
        },
        this));
    if (input_gone_ || input_closing_) return;
    if (options_.tty && to_child_.empty()) {
      // A key goes into the (nonblocking) pty at once: no wake-up of the
      // pump on the echo path. What the pty does not take is queued.
      const ssize_t put = write(master_, bytes.data(), bytes.size());
      if (put > 0) bytes.erase(0, static_cast<size_t>(put));
      if (bytes.empty()) return;
    }
    to_child_.append(bytes);
  }
  Poke();
}

void SandboxIo::CloseInput() {
  {
    absl::MutexLock lock(&mu_);
    input_closing_ = true;
  }
  Poke();
}

bool SandboxIo::SetSize(uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || master_ < 0) return false;
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  bool changed;
  {
    absl::MutexLock lock(&mu_);
    changed = rows_ != rows || cols_ != cols;
    rows_ = rows;
    cols_ = cols;
  }
  // The kernel sends SIGWINCH to the pty's foreground process group: podman
  // passes the new size on to the sandbox's terminal.
  (void)ioctl(master_, TIOCSWINSZ, &ws);
  return changed;
}

bool SandboxIo::Resize(uint32_t rows, uint32_t cols) {
  absl::MutexLock lock(&redraw_mu_);
  return SetSize(rows, cols);
}

void SandboxIo::Redraw() {
  if (master_ < 0) return;
  absl::MutexLock lock(&redraw_mu_);
  uint32_t rows, cols;
  {
    absl::MutexLock l(&mu_);
    rows = rows_;
    cols = cols_;
  }
  if (rows < 2 || cols == 0) return;
  winsize shorter{};
  shorter.ws_row = static_cast<unsigned short>(rows - 1);
  shorter.ws_col = static_cast<unsigned short>(cols);
  (void)ioctl(master_, TIOCSWINSZ, &shorter);
  std::this_thread::sleep_for(kRedrawGap);
  SetSize(rows, cols);
}

void SandboxIo::Poke() {
  if (wake_[1] >= 0) (void)!write(wake_[1], "p", 1);
}

bool SandboxIo::ReadSome(int fd, std::string* out) {
  char buf[65536];
  while (out->size() < kMaxReadBurst) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;  // EIO: every holder of the slave closed it
  }
  return true;
}

void SandboxIo::Pump() {
  if (!options_.tty) {
    PumpStream();
    return;
  }
  Clock::time_point finish_by = Clock::time_point::max();
  std::string filtered;
  while (true) {
    bool finishing, has_input;
    {
      absl::MutexLock lock(&mu_);
      finishing = finishing_;
      has_input = !to_child_.empty();
    }
    if (finishing && finish_by == Clock::time_point::max()) finish_by = Clock::now() + kFinishMax;
    if (finishing && Clock::now() >= finish_by) return;
    // The terminal holding the input is behind: the pty waits, and so do
    // the agent's writes, as on a terminal of its own.
    const bool read = finishing || hub_->WantsTerminalOutput();
    const short events = static_cast<short>((read ? POLLIN : 0) | (has_input ? POLLOUT : 0));
    pollfd fds[2] = {{events != 0 ? master_ : -1, events, 0}, {wake_[0], POLLIN, 0}};
    const int n = poll(fds, 2, finishing ? kQuietMs : (read ? -1 : kBlockedPollMs));
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (n == 0 && finishing) return;  // quiet: drained
    if (fds[1].revents != 0) DrainPipe(wake_[0]);
    if (has_input && (fds[0].revents & POLLOUT) != 0) {
      absl::MutexLock lock(&mu_);
      const ssize_t put = write(master_, to_child_.data(), to_child_.size());
      if (put > 0) to_child_.erase(0, static_cast<size_t>(put));
      if (put < 0 && errno != EAGAIN && errno != EINTR) to_child_.clear();
    }
    if (read && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      std::string got;
      const bool open = ReadSome(master_, &got);
      if (!got.empty()) {
        filtered.clear();
        filter_.Filter(got, &filtered);
        hub_->TerminalOutput(filtered);
      }
      if (!open) return;
    }
  }
}

void SandboxIo::PumpStream() {
  Clock::time_point finish_by = Clock::time_point::max();
  bool out_open = true, err_open = true;
  while (out_open || err_open || stdin_w_ >= 0) {
    bool finishing, has_input, closing;
    {
      absl::MutexLock lock(&mu_);
      finishing = finishing_;
      has_input = !to_child_.empty();
      closing = input_closing_;
    }
    if (finishing && finish_by == Clock::time_point::max()) finish_by = Clock::now() + kFinishMax;
    if (finishing && Clock::now() >= finish_by) return;
    if (stdin_w_ >= 0 && !has_input && (closing || finishing)) {
      // stdin's end: the command reads EOF once what it was sent is taken.
      CloseFd(&stdin_w_);
      absl::MutexLock lock(&mu_);
      input_gone_ = true;
    }
    if (finishing && !out_open && !err_open) return;
    // Nobody to take more (a full queue, or nobody attached and the kept
    // output full): the pipes wait, and so does the command.
    const bool read = hub_->WantsStreamOutput() || finishing;
    pollfd fds[4] = {{read && out_open ? stdout_r_ : -1, POLLIN, 0},
                     {read && err_open ? stderr_r_ : -1, POLLIN, 0},
                     {has_input ? stdin_w_ : -1, POLLOUT, 0},
                     {wake_[0], POLLIN, 0}};
    const int timeout = finishing ? kQuietMs : (read ? -1 : kBlockedPollMs);
    const int n = poll(fds, 4, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (n == 0 && finishing) return;  // quiet: drained
    if (fds[3].revents != 0) DrainPipe(wake_[0]);
    if ((fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      absl::MutexLock lock(&mu_);
      const ssize_t put = write(stdin_w_, to_child_.data(), to_child_.size());
      if (put > 0) {
        to_child_.erase(0, static_cast<size_t>(put));
      } else if (put < 0 && errno != EAGAIN && errno != EINTR) {
        // The command closed its stdin (EPIPE): what it did not take is
        // dropped, as a pipe drops it.
        to_child_.clear();
        close(stdin_w_);
        stdin_w_ = -1;
        input_gone_ = true;
      }
    }
    // stdout before stderr within one wakeup: the order the two kept apart
    // can show is the order each was read in.
    for (int i = 0; i < 2; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const int fd = i == 0 ? stdout_r_ : stderr_r_;
      std::string got;
      const bool open = ReadSome(fd, &got);
      hub_->StreamOutput(/*is_stderr=*/i == 1, got);
      if (!open) (i == 0 ? out_open : err_open) = false;
    }
  }
}

}  // namespace lazaret::cli::session
