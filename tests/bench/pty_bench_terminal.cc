#include "tests/bench/pty_bench_terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lazaret::test::bench {
namespace {

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int MsUntil(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BenchTerminal>> BenchTerminal::Start(
    const std::string& cwd, const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  int master = -1;
  int slave = -1;
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 80;
  if (openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
    return absl::InternalError(absl::StrCat("openpty: ", strerror(errno)));
  }
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(master);
    close(slave);
    return absl::InternalError(absl::StrCat("fork: ", strerror(err)));
  }
  if (pid == 0) {
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) _exit(125);
    if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0) _exit(125);
    if (slave > 2) close(slave);
    if (chdir(cwd.c_str()) != 0) _exit(126);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  // The slave stays open here until the end: Linux may drop what the
  // program wrote last when its side closes before the master read it
  // (measured: "no END after 0 fill bytes (closed)"); holding it, nothing is
  // lost and reads end with the marker or the deadline, never EIO.
  fcntl(slave, F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<BenchTerminal>(new BenchTerminal(master, slave, pid));
}

BenchTerminal::~BenchTerminal() {
  if (pid_ > 0) {
    kill(-pid_, SIGTERM);  // its whole process group (it leads its session)
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    int status = 0;
    while (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      // Keeps the program's writes from blocking its teardown.
      if (eof_ || !ReadMore(Clock::now() + std::chrono::milliseconds(20))) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      pending_.clear();
    }
  }
  close(slave_);
  close(master_);
}

bool BenchTerminal::ReadMore(Clock::time_point deadline) {
  char buf[65536];
  while (true) {
    const ssize_t n = read(master_, buf, sizeof(buf));
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      eof_ = true;  // EIO: no process has the slave open any more
      return false;
    }
    if (errno == EINTR) continue;
    // Nothing to read: a program that has exited writes no more (the slave
    // held here never hangs up, so that is how its end shows).
    if (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = ExitCode(status);
        pid_ = -1;
        continue;  // one more read for what it wrote last
      }
    } else {
      eof_ = true;
      return false;
    }
    if (Clock::now() >= deadline) return false;
    pollfd p{master_, POLLIN, 0};
    poll(&p, 1, std::min(MsUntil(deadline), 50));
  }
}

absl::StatusOr<Clock::time_point> BenchTerminal::AwaitMarker(std::string_view marker,
                                                             Clock::time_point deadline) {
  while (true) {
    const size_t at = pending_.find(marker);
    if (at != std::string::npos) {
      pending_.erase(0, at + marker.size());
      return Clock::now();
    }
    if (pending_.size() >= marker.size()) pending_.erase(0, pending_.size() - marker.size() + 1);
    if (!ReadMore(deadline)) {
      return absl::DeadlineExceededError(absl::StrCat("no \"", std::string(marker),
                                                      "\" on the terminal",
                                                      eof_ ? " before it was closed" : " in time"));
    }
  }
}

absl::StatusOr<BenchTerminal::Flood> BenchTerminal::CountUntil(char fill,
                                                               std::string_view end_marker,
                                                               Clock::time_point deadline) {
  Flood f;
  while (true) {
    const size_t at = pending_.find(end_marker);
    // Without the marker, its first bytes may be at the end: kept.
    const size_t upto = at != std::string::npos ? at
                        : pending_.size() >= end_marker.size()
                            ? pending_.size() - end_marker.size() + 1
                            : 0;
    for (size_t i = 0; i < upto; ++i) {
      const char c = pending_[i];
      if (c == fill) {
        ++f.fill;
      } else if (c == '\r' || c == '\n') {
        ++f.newline;
      } else {
        ++f.other;
      }
    }
    if (at != std::string::npos) {
      f.end = Clock::now();
      pending_.erase(0, at + end_marker.size());
      return f;
    }
    pending_.erase(0, upto);
    if (!ReadMore(deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("no \"", std::string(end_marker), "\" on the terminal after ", f.fill,
                       " fill bytes", eof_ ? " (closed)" : " (timeout)"));
    }
  }
}

absl::StatusOr<Clock::duration> BenchTerminal::EchoRoundTrip(char c, Clock::duration timeout) {
  if (!pending_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(pending_.size(), " unexpected bytes before a key"));
  }
  const Clock::time_point start = Clock::now();
  if (write(master_, &c, 1) != 1) {
    return absl::InternalError(absl::StrCat("writing a key: ", strerror(errno)));
  }
  while (pending_.empty()) {
    if (!ReadMore(start + timeout)) {
      return absl::DeadlineExceededError(absl::StrCat("no echo of '", std::string(1, c), "'"));
    }
  }
  const Clock::duration rtt = Clock::now() - start;
  if (pending_[0] != c) {
    return absl::DataLossError(
        absl::StrCat("the echo of '", std::string(1, c), "' began with byte ",
                     static_cast<int>(static_cast<unsigned char>(pending_[0]))));
  }
  // What follows the echo (after the last key, the script's next output)
  // stays for the next read; before another key it is an error.
  pending_.erase(0, 1);
  return rtt;
}

bool BenchTerminal::OuterPtyEchoes() const {
  termios t{};
  return tcgetattr(master_, &t) != 0 || (t.c_lflag & ECHO) != 0;
}

absl::StatusOr<int> BenchTerminal::Wait(Clock::time_point deadline) {
  while (pid_ > 0) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = ExitCode(status);
      pid_ = -1;
      break;
    }
    if (Clock::now() >= deadline) return absl::DeadlineExceededError("the program did not exit");
    if (eof_ || !ReadMore(std::min(deadline, Clock::now() + std::chrono::milliseconds(50)))) {
      if (eof_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pending_.clear();
  }
  return exit_code_;
}

}  // namespace lazaret::test::bench
