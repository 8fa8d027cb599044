// What the sandbox's output has switched on in the developer's terminal
// that an inline approver prompt (clients/lazaret/approve/inline_approver.h)
// switches off or would be disturbed by: the alternate screen, application
// cursor keys and keypad, a hidden cursor, mouse reporting, bracketed paste
// and focus events. PtyProxy feeds it every byte it writes to the terminal,
// so that after a prompt it can put back exactly what the agent had set.
//
// Runs in the `lazaret` CLI (the pty proxy's pump thread, under its lock).
// Its input is the sandbox's output, untrusted: it is only scanned, never
// answered, and the state it keeps is a fixed set of flags (a malformed or
// endless escape sequence costs nothing but the bytes it spans).
#ifndef LAZARET_SERVICES_TERMINAL_TERMINAL_MODES_H_
#define LAZARET_SERVICES_TERMINAL_TERMINAL_MODES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lazaret::terminal {

class TerminalModes {
 public:
  // Scans output about to reach the terminal (any chunking).
  void Feed(std::string_view bytes);

  // The DEC private mode number that switched the alternate screen on
  // (47, 1047 or 1049), 0 when the main screen shows.
  int alternate_screen() const { return alternate_; }

  // Before a prompt: switches off what would send the prompt input it does
  // not expect (mouse reports, focus events, paste brackets). Empty when
  // none of them is on.
  std::string QuietSequence() const;
  // After a prompt that used the alternate screen and restored the main
  // one: puts back every tracked mode the agent had set, alternate screen
  // first (entered afresh: the agent must redraw it). Empty when the agent
  // set none.
  std::string RestoreSequence() const;

 private:
  enum class State : uint8_t { kGround, kEsc, kCsi, kString, kStringEsc };
  enum Flag : uint32_t {
    kCursorKeys = 1u << 0,       // ?1: application cursor keys
    kHiddenCursor = 1u << 1,     // ?25 reset
    kKeypad = 1u << 2,           // ESC =
    kMouseX10 = 1u << 3,         // ?9
    kMouseNormal = 1u << 4,      // ?1000
    kMouseButton = 1u << 5,      // ?1002
    kMouseAny = 1u << 6,         // ?1003
    kFocus = 1u << 7,            // ?1004
    kMouseUtf8 = 1u << 8,        // ?1005
    kMouseSgr = 1u << 9,         // ?1006
    kMouseUrxvt = 1u << 10,      // ?1015
    kBracketedPaste = 1u << 11,  // ?2004
  };
  struct ModeFlag;
  // The DEC private modes whose set/reset this tracks, and their flags.
  static const ModeFlag* Modes(size_t* count);
  static uint32_t FlagOf(uint32_t mode);

  void OnCsi(char final_byte);
  void SetMode(uint32_t mode, bool on);
  void Reset();

  State state_ = State::kGround;
  // The CSI being read: private ('?'), intermediates seen, parameters.
  bool csi_private_ = false;
  bool csi_other_ = false;  // an intermediate or a private marker other than '?'
  bool csi_bang_ = false;   // the '!' of DECSTR
  static constexpr int kMaxParams = 16;
  uint32_t params_[kMaxParams] = {};
  int param_count_ = 0;

  uint32_t flags_ = 0;
  int alternate_ = 0;
};

}  // namespace lazaret::terminal

#endif  // LAZARET_SERVICES_TERMINAL_TERMINAL_MODES_H_
