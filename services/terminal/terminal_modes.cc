#include "services/terminal/terminal_modes.h"

#include "absl/strings/str_cat.h"

namespace lazaret::terminal {
namespace {

constexpr char kEscChar = '\x1b';
// A parameter is capped here: larger numbers name no mode this tracks.
constexpr uint32_t kModeParamCap = 100000;

}  // namespace

struct TerminalModes::ModeFlag {
  uint32_t mode;
  uint32_t flag;
  bool quiet;  // switched off while a prompt shows (it would send input)
};

// The DEC private modes tracked by set/reset, in the order they are put back.
const TerminalModes::ModeFlag* TerminalModes::Modes(size_t* count) {
  static constexpr ModeFlag kModes[] = {
      {1, kCursorKeys, false},       {9, kMouseX10, true},    {1000, kMouseNormal, true},
      {1002, kMouseButton, true},    {1003, kMouseAny, true}, {1004, kFocus, true},
      {1005, kMouseUtf8, true},      {1006, kMouseSgr, true}, {1015, kMouseUrxvt, true},
      {2004, kBracketedPaste, true},
  };
  *count = sizeof(kModes) / sizeof(kModes[0]);
  return kModes;
}

uint32_t TerminalModes::FlagOf(uint32_t mode) {
  size_t n = 0;
  const ModeFlag* modes = Modes(&n);
  for (size_t i = 0; i < n; ++i) {
    if (modes[i].mode == mode) return modes[i].flag;
  }
  return 0;
}

void TerminalModes::Reset() {
  flags_ = 0;
  alternate_ = 0;
}

void TerminalModes::SetMode(uint32_t mode, bool on) {
  if (mode == 47 || mode == 1047 || mode == 1049) {
    // The mode that left the main screen is the one to put back.
    if (!on) {
      alternate_ = 0;
    } else if (alternate_ == 0) {
      alternate_ = static_cast<int>(mode);
    }
    return;
  }
  if (mode == 25) {
    flags_ = on ? flags_ & ~kHiddenCursor : flags_ | kHiddenCursor;
    return;
  }
  const uint32_t flag = FlagOf(mode);
  flags_ = on ? flags_ | flag : flags_ & ~flag;
}

void TerminalModes::OnCsi(char final_byte) {
  if (csi_bang_ && !csi_private_ && final_byte == 'p') {
    // DECSTR, the soft reset: cursor keys, keypad and the cursor back to
    // their defaults (the screen and the mouse stay).
    flags_ &= ~(kCursorKeys | kKeypad | kHiddenCursor);
    return;
  }
  if (!csi_private_ || csi_other_ || (final_byte != 'h' && final_byte != 'l')) return;
  for (int i = 0; i < param_count_; ++i) SetMode(params_[i], final_byte == 'h');
}

void TerminalModes::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    switch (state_) {
      case State::kGround:
        if (c == kEscChar) state_ = State::kEsc;
        break;
      case State::kEsc:
        state_ = State::kGround;
        if (c == '[') {
          state_ = State::kCsi;
          csi_private_ = csi_other_ = csi_bang_ = false;
          param_count_ = 0;
          params_[0] = 0;
        } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
          state_ = State::kString;  // OSC, DCS, SOS, PM, APC: up to ST or BEL
        } else if (c == '=') {
          flags_ |= kKeypad;
        } else if (c == '>') {
          flags_ &= ~kKeypad;
        } else if (c == 'c') {
          Reset();  // RIS
        } else if (c == kEscChar) {
          state_ = State::kEsc;
        }
        break;
      case State::kCsi:
        if (c >= '0' && c <= '9') {
          if (param_count_ == 0) param_count_ = 1;
          if (param_count_ <= kMaxParams) {
            uint32_t& p = params_[param_count_ - 1];
            p = p >= kModeParamCap ? kModeParamCap : p * 10 + static_cast<uint32_t>(c - '0');
          }
        } else if (c == ';') {
          if (param_count_ == 0) param_count_ = 1;
          if (param_count_ < kMaxParams) params_[param_count_] = 0;
          ++param_count_;
        } else if (c == '?' && param_count_ == 0 && !csi_private_) {
          csi_private_ = true;
        } else if (c >= 0x3C && c <= 0x3F) {
          csi_other_ = true;  // another private marker
        } else if (c >= 0x20 && c <= 0x2F) {
          if (c == '!')
            csi_bang_ = true;
          else
            csi_other_ = true;
        } else if (c >= 0x40 && c <= 0x7E) {
          if (param_count_ > kMaxParams) param_count_ = kMaxParams;
          OnCsi(c);
          state_ = State::kGround;
        } else if (c == kEscChar) {
          state_ = State::kEsc;  // a new sequence cancels this one
        } else if (c == 0x18 || c == 0x1A) {
          state_ = State::kGround;  // CAN, SUB
        }
        // Other C0 controls inside a CSI act and the CSI goes on.
        break;
      case State::kString:
        if (c == '\a' || c == 0x18 || c == 0x1A) {
          state_ = State::kGround;
        } else if (c == kEscChar) {
          state_ = State::kStringEsc;
        }
        break;
      case State::kStringEsc:
        // ESC \ ends the string; ESC anything else ends it too, and the
        // byte is read as that escape's.
        state_ = State::kGround;
        if (c != '\\') {
          state_ = State::kEsc;
          Feed(std::string_view(&c, 1));
        }
        break;
    }
  }
}

std::string TerminalModes::QuietSequence() const {
  std::string out;
  size_t n = 0;
  const ModeFlag* modes = Modes(&n);
  for (size_t i = 0; i < n; ++i) {
    if (modes[i].quiet && (flags_ & modes[i].flag) != 0) {
      absl::StrAppend(&out, "\x1b[?", modes[i].mode, "l");
    }
  }
  return out;
}

std::string TerminalModes::RestoreSequence() const {
  std::string out;
  if (alternate_ != 0) absl::StrAppend(&out, "\x1b[?", alternate_, "h");
  size_t n = 0;
  const ModeFlag* modes = Modes(&n);
  for (size_t i = 0; i < n; ++i) {
    if ((flags_ & modes[i].flag) != 0) absl::StrAppend(&out, "\x1b[?", modes[i].mode, "h");
  }
  if ((flags_ & kKeypad) != 0) out += "\x1b=";
  if ((flags_ & kHiddenCursor) != 0) out += "\x1b[?25l";
  return out;
}

}  // namespace lazaret::terminal
