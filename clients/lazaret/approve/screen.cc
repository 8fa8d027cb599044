#include "clients/lazaret/approve/screen.h"

#include <curses.h>
#include <langinfo.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <term.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cstring>
#include <vector>

namespace lazaret::cli::approve {
namespace {

constexpr short kMarkPair = 1;  // NOLINT(runtime/int): ncurses' type

int ExtendedKey(const char* capability) {
  char* seq = tigetstr(const_cast<char*>(capability));
  if (seq == nullptr || seq == reinterpret_cast<char*>(-1)) return 0;
  const int code = key_defined(seq);
  return code > 0 ? code : 0;
}

}  // namespace

Screen::Screen(FILE* tty, bool color) : tty_(tty), mark_(A_REVERSE) {
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

Screen::~Screen() {
  if (screen_ == nullptr) return;
  endwin();
  delscreen(screen_);
}

void Screen::Draw(const Model& model) {
  FollowSize();
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

void Screen::DiscardInput() {
  tcflush(fileno(tty_), TCIFLUSH);
  flushinp();
}

int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int RedrawWithinMs(const Model& model, int tick_ms) {
  const int64_t left = model.GuardLeftMs();
  if (left <= 0) return tick_ms;
  // Often enough for the countdown's tenths, and once just after it ends.
  return static_cast<int>(std::min<int64_t>({tick_ms, left + 5, 100}));
}

void Screen::FollowSize() {
  winsize ws{};
  if (ioctl(fileno(tty_), TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return;
  if (ws.ws_row != LINES || ws.ws_col != COLS) resize_term(ws.ws_row, ws.ws_col);
}

bool Screen::HandleKeys(Model& model, ApproverClient& client,
                        const ::lazaret::approver::v1::Approver& approver) {
  const int fd = fileno(tty_);
  bool quit = false;
  if (model.TakeDiscard()) DiscardInput();
  while (!quit) {
    std::optional<Key> key = Next();
    if (!key.has_value()) {
      // A key ncurses does not pass on (a resize) still ends here; stop
      // once nothing is waiting.
      pollfd more = {fd, POLLIN, 0};
      if (poll(&more, 1, 0) <= 0) break;
      continue;
    }
    model.SetClockMs(MonotonicMs());
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
          model.OnRequestState(client.GetRequest(a.get));
          break;
      }
    }
    model.SetClockMs(MonotonicMs());
    if (model.TakeDiscard()) DiscardInput();
    if (!quit) Draw(model);
  }
  return quit;
}

std::optional<Key> Screen::Next() {
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

std::optional<Key> Screen::FromCode(int code) {
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

// UTF-8 output needs a UTF-8 locale; the user's if it is one.
void UseUtf8Locale() {
  std::setlocale(LC_CTYPE, "");
  const char* codeset = nl_langinfo(CODESET);
  if (codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0) return;
  std::setlocale(LC_CTYPE, "C.UTF-8");
}

}  // namespace lazaret::cli::approve
