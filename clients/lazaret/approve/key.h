// A key press as the terminal approver's pure parts see it. Runs in the
// `lazaret` CLI; the front-end (terminal_ui.h) makes these from what the
// terminal sent, so everything below it is tested without a terminal.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_KEY_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_KEY_H_

namespace lazaret::cli::approve {

struct Key {
  enum Code {
    kChar,  // a typed character: `ch` (control characters arrive as kCtrl)
    kCtrl,  // Ctrl-<ch>, `ch` a lowercase letter or '_' (Ctrl-_ is 0x1f)
    kAlt,   // Alt-<ch> (ESC then ch)
    kEnter,
    kEscape,
    kBackspace,
    kDelete,
    kLeft,
    kRight,
    kUp,
    kDown,
    kHome,
    kEnd,
    kPageUp,
    kPageDown,
    kCtrlLeft,
    kCtrlRight,
  };
  Code code = kChar;
  char32_t ch = 0;

  static Key Char(char32_t c) { return Key{kChar, c}; }
  static Key Ctrl(char c) { return Key{kCtrl, static_cast<char32_t>(c)}; }
  static Key Alt(char c) { return Key{kAlt, static_cast<char32_t>(c)}; }
  static Key Of(Code code) { return Key{code, 0}; }

  bool Is(Code c, char32_t with = 0) const { return code == c && ch == with; }
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_KEY_H_
