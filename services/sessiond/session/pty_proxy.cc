#include "services/sessiond/session/pty_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "services/spawn/spawn.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// Keys not yet taken by the pty; beyond it the pump stops reading them.
constexpr size_t kMaxToChild = 64 << 10;
// At most this much is read from the pty before the pump looks at its other
// descriptors again.
constexpr size_t kMaxReadBurst = 256 << 10;
// Finish: the pty counts as drained once it was quiet this long, or at the
// latest after kFinishMax (something still in the sandbox keeps writing).
constexpr int kQuietMs = 100;
constexpr auto kFinishMax = std::chrono::seconds(2);
// Resume's redraw request: how long the window stays one row shorter, so
// that podman and the sandbox see two sizes, not one coalesced resize.
constexpr auto kRedrawGap = std::chrono::milliseconds(120);

// The write end of the live proxy's SIGWINCH self-pipe, for the handler.
std::atomic<int> g_winch_fd{-1};

void OnWinch(int) {
  const int saved = errno;
  const int fd = g_winch_fd.load(std::memory_order_relaxed);
  if (fd >= 0) (void)!write(fd, "w", 1);
  errno = saved;
}

absl::Status MakePipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoStatus("pipe", errno);
  return absl::OkStatus();
}

void DrainPipe(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

// Writes all of `data` to the developer's terminal; gives up when it is
// gone (EIO after a hangup).
void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      (void)poll(&p, 1, 100);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PtyProxy>> PtyProxy::Create(const Options& options) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return ErrnoStatus("posix_openpt", errno);
  char name[128];
  if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof(name)) != 0) {
    const int e = errno;
    close(master);
    return ErrnoStatus("setting up the pty", e);
  }
  std::unique_ptr<PtyProxy> p(new PtyProxy(options, master, name));
  if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl on the pty", errno);
  }
  LAZ_RETURN_IF_ERROR(MakePipe(p->wake_));
  LAZ_RETURN_IF_ERROR(MakePipe(p->winch_));
  int expected = -1;
  if (!g_winch_fd.compare_exchange_strong(expected, p->winch_[1])) {
    return absl::FailedPreconditionError("another pty proxy is running");
  }
  struct sigaction sa {};
  sa.sa_handler = OnWinch;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGWINCH, &sa, &p->old_winch_);
  p->CopyWindowSize();
  if (isatty(options.user_in) == 1 && tcgetattr(options.user_in, &p->saved_mode_) == 0) {
    termios raw = p->saved_mode_;
    cfmakeraw(&raw);
    if (tcsetattr(options.user_in, TCSADRAIN, &raw) != 0) {
      return ErrnoStatus("setting the terminal to raw mode", errno);
    }
    p->raw_ = true;
  }
  return p;
}

PtyProxy::~PtyProxy() {
  Finish();
  RestoreTerminal();
  if (winch_[1] >= 0) {
    int mine = winch_[1];
    if (g_winch_fd.compare_exchange_strong(mine, -1)) sigaction(SIGWINCH, &old_winch_, nullptr);
  }
  for (int fd : {wake_[0], wake_[1], winch_[0], winch_[1], master_}) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<pid_t> PtyProxy::Start(const std::vector<std::string>& argv) {
  if (pump_.joinable()) return absl::FailedPreconditionError("the pty proxy already started");
  const int slave = open(slave_path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return ErrnoStatus(absl::StrCat("opening ", slave_path_), errno);
  // The sandbox's terminal starts with the developer's settings (erase
  // character, flow control), as ssh and script do.
  if (raw_) (void)tcsetattr(slave, TCSANOW, &saved_mode_);
  ChildSpec spec;
  spec.argv = argv;
  spec.stdin_fd = ChildStdio::Fd(slave);
  spec.stdout_fd = ChildStdio::Fd(slave);
  spec.stderr_fd = ChildStdio::Fd(slave);
  spec.group = ChildGroup::kTerminalSession;
  spec.die_with_parent = true;
  absl::StatusOr<PreparedChild> prepared = PreparedChild::Create(std::move(spec));
  if (!prepared.ok()) {
    close(slave);
    return prepared.status();
  }
  absl::StatusOr<pid_t> pid = Spawn(*prepared);
  if (!pid.ok()) {
    close(slave);
    return pid.status();
  }
  // Held until Finish: Linux may drop what the child wrote last when the
  // slave's last holder closes before the pump read it; with this one open
  // the pty never hangs up and Finish drains until it is quiet.
  slave_ = slave;
  pump_ = std::thread(&PtyProxy::Pump, this);
  return *pid;
}

void PtyProxy::Finish() {
  {
    absl::MutexLock lock(&mu_);
    finishing_ = true;
  }
  Poke();
  if (pump_.joinable()) pump_.join();
  if (slave_ >= 0) {
    close(slave_);
    slave_ = -1;
  }
}

absl::StatusOr<int> PtyProxy::Run(const std::vector<std::string>& argv) {
  LAZ_ASSIGN_OR_RETURN(const pid_t pid, Start(argv));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      const int e = errno;
      Finish();
      return ErrnoStatus("waitpid", e);
    }
  }
  Finish();
  return ExitCodeOf(status);
}

void PtyProxy::Pause() {
  {
    absl::MutexLock lock(&mu_);
    if (paused_) return;
    paused_ = true;
    paused_on_alternate_ = modes_.alternate_screen() != 0;
    WriteAll(options_.user_out, modes_.QuietSequence());
  }
  Poke();
}

void PtyProxy::Resume() {
  bool redraw = false;
  {
    absl::MutexLock lock(&mu_);
    if (!paused_) return;
    paused_ = false;
    WriteAll(options_.user_out, modes_.RestoreSequence());
    modes_.Feed(held_);
    WriteAll(options_.user_out, held_);
    held_.clear();
    held_.shrink_to_fit();
    // The prompt drew over the agent's alternate screen, which no terminal
    // keeps a copy of: the agent must draw it again.
    redraw = paused_on_alternate_ && modes_.alternate_screen() != 0;
  }
  Poke();
  if (redraw) RequestRedraw();
}

void PtyProxy::RequestRedraw() {
  winsize ws{};
  if (ioctl(master_, TIOCGWINSZ, &ws) != 0 || ws.ws_row < 2) return;
  winsize shorter = ws;
  --shorter.ws_row;
  (void)ioctl(master_, TIOCSWINSZ, &shorter);
  std::this_thread::sleep_for(kRedrawGap);
  CopyWindowSize();
}

void PtyProxy::RestoreTerminal() {
  if (!raw_) return;
  raw_ = false;
  tcsetattr(options_.user_in, TCSADRAIN, &saved_mode_);
}

void PtyProxy::Poke() {
  if (wake_[1] >= 0) (void)!write(wake_[1], "p", 1);
}

void PtyProxy::CopyWindowSize() {
  winsize ws{};
  if (ioctl(options_.user_in, TIOCGWINSZ, &ws) != 0 &&
      ioctl(options_.user_out, TIOCGWINSZ, &ws) != 0) {
    return;
  }
  // The kernel sends SIGWINCH to the pty's foreground process group.
  (void)ioctl(master_, TIOCSWINSZ, &ws);
}

bool PtyProxy::ReadPty(std::string* out) {
  char buf[65536];
  while (out->size() < kMaxReadBurst) {
    const ssize_t n = read(master_, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;  // EIO: every holder of the slave closed it
  }
  return true;
}

void PtyProxy::Emit(std::string&& bytes) {
  if (paused_) {
    held_.append(bytes);
  } else {
    modes_.Feed(bytes);
    WriteAll(options_.user_out, bytes);
  }
}

void PtyProxy::Pump() {
  std::string to_child;
  bool user_in_open = true;
  Clock::time_point finish_by = Clock::time_point::max();
  while (true) {
    bool paused, finishing, held_full;
    {
      absl::MutexLock lock(&mu_);
      paused = paused_;
      finishing = finishing_;
      held_full = held_.size() >= options_.max_paused_bytes;
    }
    if (finishing && finish_by == Clock::time_point::max()) finish_by = Clock::now() + kFinishMax;
    if (finishing && Clock::now() >= finish_by) return;
    short pty_events = 0;
    if (!(paused && held_full)) pty_events |= POLLIN;
    if (!to_child.empty()) pty_events |= POLLOUT;
    const bool want_keys = user_in_open && !paused && to_child.size() < kMaxToChild;
    pollfd fds[4] = {{pty_events != 0 ? master_ : -1, pty_events, 0},
                     {want_keys ? options_.user_in : -1, POLLIN, 0},
                     {winch_[0], POLLIN, 0},
                     {wake_[0], POLLIN, 0}};
    const int n = poll(fds, 4, finishing ? kQuietMs : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (n == 0 && finishing) return;  // quiet: drained
    if (fds[3].revents != 0) DrainPipe(wake_[0]);
    if (fds[2].revents != 0) {
      DrainPipe(winch_[0]);
      CopyWindowSize();
    }
    if (fds[1].revents != 0) {
      char buf[4096];
      absl::MutexLock lock(&mu_);
      if (!paused_) {  // Pause may have come between poll and here
        const ssize_t got = read(options_.user_in, buf, sizeof(buf));
        if (got > 0) {
          to_child.append(buf, static_cast<size_t>(got));
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
          user_in_open = false;
        }
      }
    }
    if (!to_child.empty()) {
      const ssize_t put = write(master_, to_child.data(), to_child.size());
      if (put > 0) to_child.erase(0, static_cast<size_t>(put));
      if (put < 0 && errno != EAGAIN && errno != EINTR) to_child.clear();
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && (pty_events & POLLIN) != 0) {
      std::string got;
      const bool open = ReadPty(&got);
      if (!got.empty()) {
        absl::MutexLock lock(&mu_);
        Emit(std::move(got));
      }
      if (!open) return;
    }
  }
}

}  // namespace lazaret::cli::session
