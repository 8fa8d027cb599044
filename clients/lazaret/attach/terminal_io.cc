#include "clients/lazaret/attach/terminal_io.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::cli::attach {

absl::StatusOr<std::unique_ptr<RawMode>> RawMode::Enter(int fd) {
  termios saved{};
  if (tcgetattr(fd, &saved) != 0) return ErrnoStatus("reading the terminal's mode", errno);
  termios raw = saved;
  cfmakeraw(&raw);
  if (tcsetattr(fd, TCSADRAIN, &raw) != 0) {
    return ErrnoStatus("setting the terminal to raw mode", errno);
  }
  return std::unique_ptr<RawMode>(new RawMode(fd, saved));
}

RawMode::~RawMode() { (void)tcsetattr(fd_, TCSADRAIN, &saved_); }

std::string LeaveSequence(const terminal::TerminalModes& modes, bool detaching) {
  std::string out = modes.QuietSequence();
  if (modes.alternate_screen() != 0) absl::StrAppend(&out, "\x1b[?", modes.alternate_screen(), "l");
  if (detaching) {
    // Normal cursor keys and keypad, the cursor shown, default colours,
    // then a fresh line.
    absl::StrAppend(&out, "\x1b[?1l\x1b>\x1b[?25h\x1b[0m\r\n");
  }
  return out;
}

bool HasDeviceAttributesAnswer(std::string_view seen) {
  size_t at = 0;
  while ((at = seen.find("\x1b[?", at)) != std::string_view::npos) {
    size_t i = at + 3;
    while (i < seen.size() && ((seen[i] >= '0' && seen[i] <= '9') || seen[i] == ';')) ++i;
    if (i < seen.size() && seen[i] == 'c') return true;
    at += 3;
  }
  return false;
}

void DrainAnswers(int in_fd, int out_fd, std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  if (!WriteAll(out_fd, "\x1b[c")) return;
  const auto deadline = Clock::now() + limit;
  std::string seen;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return;
    pollfd p{in_fd, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    char buf[256];
    const ssize_t got = read(in_fd, buf, sizeof(buf));
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return;
    seen.append(buf, static_cast<size_t>(got));
    if (HasDeviceAttributesAnswer(seen)) return;
    // Bounded: only the tail can still hold the start of the answer.
    if (seen.size() > 4096) seen.erase(0, seen.size() - 64);
  }
}

bool WriteAll(int fd, std::string_view data) {
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
      return false;
    }
  }
  return true;
}

void DrainPipe(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

}  // namespace lazaret::cli::attach
