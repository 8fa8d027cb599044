#include "clients/lazaret/approve/terminal_ui.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/approve/inbox.h"
#include "clients/lazaret/approve/model.h"
#include "clients/lazaret/approve/screen.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

constexpr char kTerminalApproverName[] = "lazaret approve";

// Written by the signal handler: the write end of the self-pipe.
volatile sig_atomic_t g_wake_fd = -1;

void OnSignal(int) {
  const int fd = g_wake_fd;
  if (fd >= 0) {
    const char c = 's';
    [[maybe_unused]] ssize_t n = write(fd, &c, 1);
  }
}

class SignalGuard {
 public:
  explicit SignalGuard(int fd) {
    g_wake_fd = fd;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalGuard() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    g_wake_fd = -1;
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

}  // namespace

absl::Status RunTerminalUi(ApproverClient& client, const TerminalOptions& options) {
  const int tty_fd = open(options.tty_path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty_fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "lazaret approve needs a terminal: cannot open ", options.tty_path, ": ", strerror(errno)));
  }
  FILE* tty = fdopen(tty_fd, "r+");
  if (tty == nullptr) {
    close(tty_fd);
    return absl::InternalError("fdopen of the terminal failed");
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fclose(tty);
    return absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  UseUtf8Locale();

  pb::Approver approver;
  approver.set_kind(pb::Approver::KIND_TERMINAL);
  approver.set_name(kTerminalApproverName);
  approver.set_tty(options.tty_name);
  approver.set_pid(static_cast<int32_t>(getpid()));

  absl::Status result = absl::OkStatus();
  {
    Screen screen(tty, options.color);
    if (!screen.ok()) {
      result = absl::FailedPreconditionError(
          "cannot start the terminal (is TERM set to a terminal this host knows?)");
    } else {
      SignalGuard signals(pipe_fds[1]);
      Inbox inbox(pipe_fds[1]);
      pb::WatchPendingRequest watch;
      watch.set_session_id(options.session_id);
      *watch.mutable_approver() = approver;
      std::thread reader([&] {
        inbox.End(client.Watch(watch, [&](const pb::PendingEvent& e) { inbox.Push(e); }));
      });
      Model model;
      bool quit = false;
      while (!quit) {
        model.SetNow(static_cast<int64_t>(std::time(nullptr)));
        model.SetClockMs(MonotonicMs());
        if (model.TakeDiscard()) screen.DiscardInput();
        screen.Draw(model);
        pollfd fds[2] = {{tty_fd, POLLIN, 0}, {pipe_fds[0], POLLIN, 0}};
        const int n = poll(fds, 2, RedrawWithinMs(model, 1000));
        if (n < 0 && errno != EINTR) break;
        model.SetClockMs(MonotonicMs());
        if (fds[1].revents & POLLIN) {
          char buf[64];
          ssize_t got;
          while ((got = read(pipe_fds[0], buf, sizeof(buf))) > 0) {
            if (std::memchr(buf, 's', static_cast<size_t>(got)) != nullptr) quit = true;
          }
          std::optional<absl::Status> ended;
          for (const pb::PendingEvent& e : inbox.Take(&ended)) model.OnEvent(e);
          if (ended.has_value()) model.OnWatchEnded(*ended);
        }
        if (fds[0].revents & (POLLHUP | POLLERR)) quit = true;
        if (!quit) quit = screen.HandleKeys(model, client, approver);
      }
      client.Cancel();
      reader.join();
    }
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  std::fclose(tty);
  return result;
}

}  // namespace lazaret::cli::approve
