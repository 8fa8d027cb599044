#include "clients/lazaret/approve/terminal_ui.h"

#include <curses.h>
#include <fcntl.h>
#include <langinfo.h>
#include <poll.h>
#include <signal.h>
#include <term.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/approve/model.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

constexpr char kApproverName[] = "lazaret approve";
constexpr short kMarkPair = 1;  // NOLINT(runtime/int): ncurses' type

// Written by the signal handler: the write end of the self-pipe.
volatile sig_atomic_t g_wake_fd = -1;

void OnSignal(int) {
  const int fd = g_wake_fd;
  if (fd >= 0) {
    const char c = 's';
    [[maybe_unused]] ssize_t n = write(fd, &c, 1);
  }
}

// What the reader thread hands the UI thread.
class Inbox {
 public:
  explicit Inbox(int wake_fd) : wake_fd_(wake_fd) {}

  void Push(const pb::PendingEvent& event) {
    {
      std::lock_guard<std::mutex> l(mu_);
      events_.push_back(event);
    }
    Wake();
  }
  void End(const absl::Status& status) {
    {
      std::lock_guard<std::mutex> l(mu_);
      ended_ = status;
    }
    Wake();
  }
  // Everything so far; `*ended` set once the stream ended.
  std::deque<pb::PendingEvent> Take(std::optional<absl::Status>* ended) {
    std::lock_guard<std::mutex> l(mu_);
    std::deque<pb::PendingEvent> out;
    out.swap(events_);
    if (ended_.has_value()) {
      *ended = ended_;
      ended_.reset();
    }
    return out;
  }

 private:
  void Wake() {
    const char c = 'e';
    [[maybe_unused]] ssize_t n = write(wake_fd_, &c, 1);
  }

  const int wake_fd_;
  std::mutex mu_;
  std::deque<pb::PendingEvent> events_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
};

int ExtendedKey(const char* capability) {
  char* seq = tigetstr(const_cast<char*>(capability));
  if (seq == nullptr || seq == reinterpret_cast<char*>(-1)) return 0;
  const int code = key_defined(seq);
  return code > 0 ? code : 0;
}

class Screen {
 public:
  Screen(FILE* tty, bool color) {
    screen_ = newterm(nullptr, tty, tty);
    if (screen_ == nullptr) return;
    set_term(screen_);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    if (color && has_colors() && start_color() == OK) {
      use_default_colors();
      init_pair(kMarkPair, COLOR_YELLOW, -1);
      mark_ = A_REVERSE | COLOR_PAIR(kMarkPair);
    }
    ctrl_left_ = ExtendedKey("kLFT5");
    ctrl_right_ = ExtendedKey("kRIT5");
  }
  ~Screen() {
    if (screen_ == nullptr) return;
    endwin();
    delscreen(screen_);
  }
  bool ok() const { return screen_ != nullptr; }

  void Draw(const Model& model) {
    const size_t width = COLS > 0 ? static_cast<size_t>(COLS) : 0;
    const size_t height = LINES > 0 ? static_cast<size_t>(LINES) : 0;
    erase();
    const std::vector<Line> rows = model.Render(width, height);
    for (size_t i = 0; i < rows.size(); ++i) {
      move(static_cast<int>(i), 0);
      for (const Run& run : rows[i]) {
        if (run.marked) attron(mark_);
        addnstr(run.text.data(), static_cast<int>(run.text.size()));
        if (run.marked) attroff(mark_);
      }
    }
    if (std::optional<CursorPos> c = model.Cursor(width, height)) {
      curs_set(1);
      move(static_cast<int>(c->row), static_cast<int>(c->col));
    } else {
      curs_set(0);
      move(height > 0 ? static_cast<int>(height) - 1 : 0, 0);
    }
    refresh();
  }

  // The next key, if one is waiting.
  std::optional<Key> Next() {
    wint_t ch = 0;
    const int r = get_wch(&ch);
    if (r == ERR) return std::nullopt;
    if (r == KEY_CODE_YES) return FromCode(static_cast<int>(ch));
    if (ch == 27) {
      wint_t next = 0;
      if (get_wch(&next) == OK && next >= 0x20 && next < 0x7F) {
        return Key::Alt(static_cast<char>(next));
      }
      return Key::Of(Key::kEscape);
    }
    if (ch == '\r' || ch == '\n') return Key::Of(Key::kEnter);
    if (ch == 0x7F || ch == 0x08) return Key::Of(Key::kBackspace);
    if (ch >= 1 && ch <= 26) return Key::Ctrl(static_cast<char>('a' + ch - 1));
    if (ch == 0x1F) return Key::Ctrl('_');
    if (ch < 0x20) return Key{Key::kCtrl, 0};  // ignored by everyone
    return Key::Char(static_cast<char32_t>(ch));
  }

 private:
  std::optional<Key> FromCode(int code) {
    switch (code) {
      case KEY_UP:
        return Key::Of(Key::kUp);
      case KEY_DOWN:
        return Key::Of(Key::kDown);
      case KEY_LEFT:
        return Key::Of(Key::kLeft);
      case KEY_RIGHT:
        return Key::Of(Key::kRight);
      case KEY_HOME:
        return Key::Of(Key::kHome);
      case KEY_END:
        return Key::Of(Key::kEnd);
      case KEY_BACKSPACE:
        return Key::Of(Key::kBackspace);
      case KEY_DC:
        return Key::Of(Key::kDelete);
      case KEY_ENTER:
        return Key::Of(Key::kEnter);
      case KEY_PPAGE:
        return Key::Of(Key::kPageUp);
      case KEY_NPAGE:
        return Key::Of(Key::kPageDown);
      case KEY_RESIZE:
        return std::nullopt;  // the next Draw reads the new size
      default:
        break;
    }
    if (code != 0 && code == ctrl_left_) return Key::Of(Key::kCtrlLeft);
    if (code != 0 && code == ctrl_right_) return Key::Of(Key::kCtrlRight);
    return std::nullopt;
  }

  SCREEN* screen_ = nullptr;
  attr_t mark_ = A_REVERSE;
  int ctrl_left_ = 0;
  int ctrl_right_ = 0;
};

// UTF-8 output needs a UTF-8 locale; the user's if it is one.
void UseUtf8Locale() {
  std::setlocale(LC_CTYPE, "");
  const char* codeset = nl_langinfo(CODESET);
  if (codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0) return;
  std::setlocale(LC_CTYPE, "C.UTF-8");
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
  approver.set_name(kApproverName);
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
        screen.Draw(model);
        pollfd fds[2] = {{tty_fd, POLLIN, 0}, {pipe_fds[0], POLLIN, 0}};
        const int n = poll(fds, 2, 1000);
        if (n < 0 && errno != EINTR) break;
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
        while (!quit) {
          std::optional<Key> key = screen.Next();
          if (!key.has_value()) {
            // A key ncurses does not pass on (a resize) still ends here;
            // stop once nothing is waiting.
            pollfd more = {tty_fd, POLLIN, 0};
            if (poll(&more, 1, 0) <= 0) break;
            continue;
          }
          for (Action& a : model.OnKey(*key)) {
            switch (a.kind) {
              case Action::kQuit:
                quit = true;
                break;
              case Action::kDecide:
                *a.decide.mutable_approver() = approver;
                model.OnDecided(a.decide, client.Decide(a.decide));
                break;
              case Action::kParseCommand:
                model.OnParsed(client.ParseCommand(a.parse));
                break;
              case Action::kGetRequest:
                model.OnRequestState(client.GetRequest(a.request_id));
                break;
            }
          }
          if (!quit) screen.Draw(model);
        }
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
