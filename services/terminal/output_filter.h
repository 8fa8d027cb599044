// The filter between the sandbox's terminal output and a developer's
// terminal emulator. A terminal is a channel to the host: besides drawing
// the screen, escape sequences can set the host's clipboard (OSC 52),
// open notifications, move and resize windows, send files (kitty graphics,
// iTerm2), change the terminal's encoding, and make the terminal type an
// answer into its input, which, once the session is gone or detached, is
// the developer's host shell. The filter passes an allow-list of what a
// program needs to draw the screen and removes everything else
// (docs/threat-model.md "The terminal" has the table, class by class):
//
// passed:  printable ASCII and well-formed UTF-8 (no C1 code points); the C0
//          controls BEL BS HT LF VT FF CR SO SI; ESC sequences for the
//          cursor, keypad, index, reset and character sets; CSI cursor,
//          erase, scroll, SGR, tab and insert-mode sequences; DEC private
//          modes (cursor keys, cursor, wrap, alternate screen, mouse, focus,
//          bracketed paste, synchronized output) and their save/restore and
//          DECRQM queries; cursor style; keyboard protocol modes; the
//          status, cursor position, device attribute and size reports
//          (fixed-format answers: numbers and the terminal's own name);
//          title stack push/pop (CSI 22/23 t); OSC 0/1/2 titles (text, at
//          most 2 KiB); OSC 4/10-19/104/110-119 colours; OSC 8 hyperlinks;
//          OSC 133 prompt marks; OSC 52 clipboard writes only with
//          policy.clipboard_write.
// removed: every other C0 control (ENQ: answerback) and DEL; C1 controls as
//          raw bytes or UTF-8 code points U+0080-U+009F; OSC 52 reads always
//          and writes by default; every other OSC (7 cwd, 9/777/99
//          notifications, 50 font, 51, 1337, 5113, 5522, ...); every DCS
//          (tmux passthrough, DECRQSS, XTGETTCAP, sixel), APC, PM and SOS;
//          CSI t window operations other than 14/16/18/19 and 22/23 (20/21
//          report the icon label and the title: text the sandbox chose);
//          media copy (CSI i), LEDs, conformance level, rectangle checksums
//          and every CSI not listed; ESC % (leaving UTF-8) and ESC SP (8-bit
//          controls).
//
// The terminal is assumed to decode UTF-8 (as the session's locale says):
// the filter re-validates every character, replaces a malformed byte with
// U+FFFD, and removes the sequence that would switch the terminal out of
// UTF-8 (ESC %), so a byte the terminal could read as a C1 control never
// reaches it.
//
// Streaming: a sequence split across chunks at any byte is held until it
// is complete and then passed or removed whole; every byte emitted leaves
// the terminal's parser in its ground state. State is bounded: a sequence
// to be removed is skipped without being stored, and an allowed OSC or CSI
// longer than its bound is removed whole, never passed truncated.
//
// Runs in the session worker (lazaret-sessiond --session-worker, as the
// user who ran `lazaret up`), on the pty pump thread. Its input is the
// sandbox's output: untrusted. Not thread-safe; one filter per pty.
#ifndef LAZARET_SERVICES_TERMINAL_OUTPUT_FILTER_H_
#define LAZARET_SERVICES_TERMINAL_OUTPUT_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lazaret::terminal {

// What the sandbox's output may do beyond the screen (the profile's
// [terminal] table, ResolvedProfile.terminal).
struct OutputPolicy {
  // OSC 52 clipboard writes reach the terminal (reads never do).
  bool clipboard_write = false;
};

class OutputFilter {
 public:
  // Bounds on an allowed sequence that is held until its end.
  static constexpr size_t kMaxCsi = 256;
  static constexpr size_t kMaxTitle = 2048;
  static constexpr size_t kMaxOsc = 8192;
  static constexpr size_t kMaxClipboard = 1 << 20;

  explicit OutputFilter(OutputPolicy policy) : policy_(policy) {}

  // Appends to *out what of `bytes` may reach the terminal (any chunking;
  // an incomplete sequence at the end is held for the next call).
  void Filter(std::string_view bytes, std::string* out);
  std::string Filter(std::string_view bytes) {
    std::string out;
    Filter(bytes, &out);
    return out;
  }

  // Sequences and controls removed so far (each counted once).
  uint64_t removed() const { return removed_; }

 private:
  enum class State : uint8_t {
    kGround,
    kUtf8,            // inside a multi-byte character (utf8_ holds it)
    kEsc,             // after ESC
    kEscIntermediate, // ESC and intermediates (seq_ holds them)
    kCsi,             // ESC [ and parameters/intermediates (seq_)
    kCsiSkip,         // a CSI being removed, skipped up to its final byte
    kOsc,             // ESC ] and its payload so far (seq_)
    kOscEsc,          // an ESC inside an OSC being held
    kStringSkip,      // an OSC/DCS/APC/PM/SOS being removed
    kStringSkipEsc,   // an ESC inside one
  };
  // What an OSC's number makes of it, once known.
  enum class Osc : uint8_t { kUnknown, kTitle, kColour, kHyperlink, kMark, kClipboard };

  // One byte in the given state; false when it must be read again in the
  // state it left (the byte ended a sequence without belonging to it).
  bool Step(unsigned char c, std::string* out);
  void Ground(unsigned char c, std::string* out);
  // Sets *again when the byte ended a malformed character and must be read
  // in the ground state.
  void Utf8(unsigned char c, std::string* out, bool* again);
  void EscFinal(unsigned char c, std::string* out);
  void CsiFinal(unsigned char c, std::string* out);
  void OscEnd(std::string_view terminator, std::string* out);
  // Decides an OSC from its number (the digits in seq_); false: remove it.
  bool OscKind();
  // Drops the sequence held (counted as removed) and goes to `next`.
  void Remove(State next);
  void ClearSequence();

  OutputPolicy policy_;
  State state_ = State::kGround;
  std::string seq_;        // the sequence held (without its introducer)
  char utf8_[4] = {};      // the character being read
  int utf8_have_ = 0;
  int utf8_need_ = 0;
  Osc osc_ = Osc::kUnknown;
  // A BEL ends the string being skipped (an OSC) or not (DCS, APC, PM,
  // SOS end only at ST).
  bool skip_bel_ends_ = true;
  size_t osc_limit_ = 0;
  uint64_t removed_ = 0;
};

}  // namespace lazaret::terminal

#endif  // LAZARET_SERVICES_TERMINAL_OUTPUT_FILTER_H_
