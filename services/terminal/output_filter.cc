#include "services/terminal/output_filter.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lazaret::terminal {
namespace {

constexpr unsigned char kBel = 0x07;
constexpr unsigned char kEsc = 0x1b;
constexpr unsigned char kCan = 0x18;
constexpr unsigned char kSub = 0x1a;
constexpr unsigned char kDel = 0x7f;
// What a malformed UTF-8 byte becomes (as a UTF-8 terminal shows it).
constexpr std::string_view kReplacement = "\xef\xbf\xbd";
// A parameter is capped here: no allowed decision needs a larger number.
constexpr uint32_t kParamCap = 1000000;
// Parameters looked at; a CSI with more is judged on these (only SGR,
// which takes any, ever has this many).
constexpr size_t kMaxParams = 32;
// A held ESC sequence's intermediates; more than 2 is never allowed.
constexpr size_t kMaxEscIntermediates = 4;
// The digits of an OSC number.
constexpr size_t kMaxOscNumber = 6;

// The C0 controls a program needs on a screen: BEL, BS, HT, LF, VT, FF,
// CR, SO, SI. Not ENQ (the terminal types its answerback), not the rest
// (no screen effect, and some terminals give them one).
bool PassedControl(unsigned char c) { return c >= 0x07 && c <= 0x0f; }

bool IsFinal(unsigned char c) { return c >= 0x40 && c <= 0x7e; }
bool IsIntermediate(unsigned char c) { return c >= 0x20 && c <= 0x2f; }
bool IsParam(unsigned char c) { return c >= 0x30 && c <= 0x3f; }

// DEC private modes (CSI ? Pm h/l/s/r) that act on the screen, the cursor,
// or which keys, mouse and focus reports the terminal sends; none makes it
// send text the sandbox chose. Not: 1001 (highlight tracking needs an
// answer), 1034 (8-bit meta input), 1035, 1040-1044 (clipboard selection
// targets, urgency and raise on bell), 3/40 (132 columns resizes the
// window), 42 (national character sets), 1050-1061 (function-key emulation).
constexpr uint32_t kDecModes[] = {1,    5,    6,    7,    8,    9,    12,   25,
                                  45,   47,   66,   69,   1000, 1002, 1003, 1004,
                                  1005, 1006, 1007, 1015, 1016, 1036, 1039, 1047,
                                  1048, 1049, 2004, 2026, 2027, 2031, 2048};

// ANSI modes (CSI Pm h/l): insert mode only. Not KAM (2: locks the
// keyboard), SRM (12: local echo) or LNM (20: what Enter sends).
constexpr uint32_t kAnsiModes[] = {4};

// DEC device status reports (CSI ? Ps n): fixed-format answers.
constexpr uint32_t kDecReports[] = {6, 15, 25, 26, 53, 55, 56, 62, 63, 75, 85, 996};

// CSI Ps t window operations that are allowed: text area size in pixels
// (14), cell size (16), text area and screen size in characters (18, 19):
// numbers only; push and pop of the title stack (22, 23). Not 20/21 (the
// icon label and title as answers), not the moves, resizes, raises,
// iconifies and reports of position and state.
constexpr uint32_t kWindowOps[] = {14, 16, 18, 19, 22, 23};

template <size_t N>
bool Contains(const uint32_t (&set)[N], uint32_t v) {
  return std::find(set, set + N, v) != set + N;
}

struct Csi {
  char marker = 0;          // '<', '=', '>' or '?', 0 for none
  std::string_view inter;   // intermediates
  uint32_t params[kMaxParams] = {};
  size_t count = 0;         // parameters given (0 for none)
  bool colon = false;       // a sub-parameter (':') was used
};

// Splits a CSI's bytes (without ESC [ and the final byte); false when they
// are out of order (ECMA-48: private marker, parameters, intermediates).
bool ParseCsi(std::string_view seq, Csi* csi) {
  size_t i = 0;
  if (!seq.empty() && seq[0] >= 0x3c && seq[0] <= 0x3f) {
    csi->marker = seq[0];
    i = 1;
  }
  size_t end = i;
  while (end < seq.size() && IsParam(static_cast<unsigned char>(seq[end]))) ++end;
  csi->inter = seq.substr(end);
  for (char c : csi->inter) {
    if (!IsIntermediate(static_cast<unsigned char>(c))) return false;
  }
  if (end > i) csi->count = 1;
  for (size_t k = i; k < end; ++k) {
    const char c = seq[k];
    if (c >= '0' && c <= '9') {
      if (csi->count <= kMaxParams) {
        uint32_t& p = csi->params[csi->count - 1];
        p = p >= kParamCap ? kParamCap : p * 10 + static_cast<uint32_t>(c - '0');
      }
    } else if (c == ';') {
      ++csi->count;
    } else if (c == ':') {
      csi->colon = true;
    } else {
      return false;  // a private marker after the first byte
    }
  }
  return true;
}

// The parameters looked at (the first kMaxParams).
size_t Looked(const Csi& csi) { return std::min(csi.count, kMaxParams); }

bool NoParamsOrZero(const Csi& csi) {
  return csi.count == 0 || (csi.count == 1 && csi.params[0] == 0);
}

template <size_t N>
bool AllIn(const Csi& csi, const uint32_t (&set)[N]) {
  if (csi.count == 0 || csi.count > kMaxParams || csi.colon) return false;
  for (size_t i = 0; i < Looked(csi); ++i) {
    if (!Contains(set, csi.params[i])) return false;
  }
  return true;
}

bool CsiAllowed(const Csi& csi, unsigned char final_byte) {
  if (!csi.inter.empty()) {
    if (csi.inter == " " && csi.marker == 0) return final_byte == 'q';  // DECSCUSR
    if (csi.inter == "!" && csi.marker == 0) return final_byte == 'p' && csi.count == 0;  // DECSTR
    if (csi.inter == "$" && (csi.marker == 0 || csi.marker == '?')) {
      return final_byte == 'p' && csi.count == 1 && !csi.colon;  // DECRQM
    }
    return false;
  }
  switch (csi.marker) {
    case 0:
      switch (final_byte) {
        // Cursor, erase, insert/delete, scroll, tabs, repeat, SGR, margins,
        // cursor save/restore: the screen only.
        case '@': case 'A': case 'B': case 'C': case 'D': case 'E': case 'F':
        case 'G': case 'H': case 'I': case 'J': case 'K': case 'L': case 'M':
        case 'P': case 'S': case 'T': case 'X': case 'Z': case '`': case 'a':
        case 'b': case 'd': case 'e': case 'f': case 'g': case 'm': case 'r':
        case 's':
          return true;
        case 'u':
          return csi.count == 0;  // SCORC
        case 'h':
        case 'l':
          return AllIn(csi, kAnsiModes);
        case 'n':
          return csi.count == 1 && (csi.params[0] == 5 || csi.params[0] == 6);
        case 'c':
          return NoParamsOrZero(csi);  // DA1
        case 't':
          return csi.count >= 1 && !csi.colon && Contains(kWindowOps, csi.params[0]);
        default:
          return false;
      }
    case '?':
      switch (final_byte) {
        case 'h': case 'l': case 's': case 'r':
          return AllIn(csi, kDecModes);
        case 'J': case 'K':
          return true;  // selective erase
        case 'n':
          return csi.count == 1 && Contains(kDecReports, csi.params[0]);
        case 'u':
          return csi.count == 0;  // keyboard protocol flags query
        case 'm':
          return true;  // XTQMODKEYS
        default:
          return false;
      }
    case '>':
      // DA2, XTVERSION (the terminal's own name), modifyOtherKeys set and
      // reset, keyboard protocol push.
      switch (final_byte) {
        case 'c': return NoParamsOrZero(csi);
        case 'q': return NoParamsOrZero(csi);
        case 'm': case 'n': case 'u': return true;
        default: return false;
      }
    case '=':
      // DA3 (a fixed unit id), keyboard protocol set.
      return (final_byte == 'c' && NoParamsOrZero(csi)) || final_byte == 'u';
    case '<':
      return final_byte == 'u';  // keyboard protocol pop
    default:
      return false;
  }
}

// The length of the well-formed UTF-8 character (2 to 4 bytes) `s` starts
// with, 0 when it is malformed or not all in `s`.
size_t Utf8Length(std::string_view s) {
  const unsigned char c = static_cast<unsigned char>(s[0]);
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    need = 1;
  } else if (c >= 0xe0 && c <= 0xef) {
    need = 2;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 3;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() <= need) return 0;
  const unsigned char c1 = static_cast<unsigned char>(s[1]);
  if (c1 < lo || c1 > hi) return 0;
  for (size_t k = 2; k <= need; ++k) {
    const unsigned char ck = static_cast<unsigned char>(s[k]);
    if (ck < 0x80 || ck > 0xbf) return 0;
  }
  return need + 1;
}

// Printable ASCII and well-formed UTF-8 with no C0 or C1 code point,
// throughout.
bool IsText(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      ++i;
      continue;
    }
    const size_t len = Utf8Length(s.substr(i));
    if (len == 0) return false;
    if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return false;  // C1
    i += len;
  }
  return true;
}

bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// OSC 52's payload after "52;": a selection (c, p, q, s, 0-7, possibly
// empty) and base64 data. "?" (a read: the terminal would type the
// clipboard) is never base64, so never passes.
bool IsClipboardWrite(std::string_view payload) {
  const size_t semi = payload.find(';');
  if (semi == std::string_view::npos) return false;
  for (char c : payload.substr(0, semi)) {
    if (std::string_view("cpqs01234567").find(c) == std::string_view::npos) return false;
  }
  for (char c : payload.substr(semi + 1)) {
    const bool b64 = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '+' || c == '/' || c == '=';
    if (!b64) return false;
  }
  return true;
}

}  // namespace

void OutputFilter::Filter(std::string_view bytes, std::string* out) {
  size_t i = 0;
  const size_t n = bytes.size();
  auto at = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  while (i < n) {
    if (state_ == State::kGround) {
      // Printable ASCII, the bulk of any output, in one append.
      size_t j = i;
      while (j < n && at(j) >= 0x20 && at(j) < kDel) ++j;
      if (j > i) {
        out->append(bytes.data() + i, j - i);
        i = j;
        continue;
      }
      // A whole CSI or UTF-8 character within this chunk, decided at once:
      // the same result as byte by byte (the fuzzer checks that splitting
      // the input changes nothing), without the per-byte state.
      if (at(i) == kEsc && i + 1 < n && bytes[i + 1] == '[') {
        size_t k = i + 2;
        bool after_intermediate = false;
        bool in_order = true;
        while (k < n && k - (i + 2) < kMaxCsi && (IsParam(at(k)) || IsIntermediate(at(k)))) {
          if (IsIntermediate(at(k))) after_intermediate = true;
          if (IsParam(at(k)) && after_intermediate) in_order = false;
          ++k;
        }
        if (in_order && k < n && IsFinal(at(k))) {
          seq_.assign(bytes.data() + i + 2, k - (i + 2));
          CsiFinal(at(k), out);
          i = k + 1;
          continue;
        }
      } else if (at(i) >= 0xc2 && at(i) <= 0xf4) {
        const size_t len = Utf8Length(bytes.substr(i));
        if (len > 0) {
          if (!(at(i) == 0xc2 && at(i + 1) <= 0x9f)) {
            out->append(bytes.data() + i, len);
          } else {
            ++removed_;  // U+0080-U+009F: a C1 control
          }
          i += len;
          continue;
        }
      }
    }
    if (Step(at(i), out)) ++i;
  }
}

void OutputFilter::Remove(State next) {
  ++removed_;
  ClearSequence();
  state_ = next;
}

void OutputFilter::ClearSequence() {
  // An allowed clipboard write may have grown the buffer to its bound.
  if (seq_.capacity() > kMaxOsc) {
    std::string().swap(seq_);
  } else {
    seq_.clear();
  }
}

void OutputFilter::Ground(unsigned char c, std::string* out) {
  if (c == kEsc) {
    state_ = State::kEsc;
  } else if (c >= 0x20 && c < kDel) {
    out->push_back(static_cast<char>(c));
  } else if (PassedControl(c)) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x80) {
    ++removed_;  // another C0 control, or DEL
  } else if (c >= 0xc2 && c <= 0xf4) {
    utf8_[0] = static_cast<char>(c);
    utf8_have_ = 1;
    utf8_need_ = c <= 0xdf ? 2 : c <= 0xef ? 3 : 4;
    state_ = State::kUtf8;
  } else {
    // A continuation byte with no lead (0x80-0xbf: among them the 8-bit
    // C1 controls), an overlong lead (0xc0, 0xc1) or no lead at all.
    if (c <= 0x9f) ++removed_;
    out->append(kReplacement);
  }
}

void OutputFilter::Utf8(unsigned char c, std::string* out, bool* again) {
  const unsigned char lead = static_cast<unsigned char>(utf8_[0]);
  unsigned char lo = 0x80, hi = 0xbf;
  if (utf8_have_ == 1) {
    if (lead == 0xe0) lo = 0xa0;       // overlong
    if (lead == 0xed) hi = 0x9f;       // surrogates
    if (lead == 0xf0) lo = 0x90;       // overlong
    if (lead == 0xf4) hi = 0x8f;       // beyond U+10FFFF
  }
  if (c < lo || c > hi) {
    // The character ends short: one replacement, and the byte is read
    // afresh.
    out->append(kReplacement);
    state_ = State::kGround;
    *again = true;
    return;
  }
  utf8_[utf8_have_++] = static_cast<char>(c);
  if (utf8_have_ < utf8_need_) return;
  state_ = State::kGround;
  if (lead == 0xc2 && c <= 0x9f) {
    ++removed_;  // U+0080-U+009F: a C1 control, which xterm acts on
    return;
  }
  out->append(utf8_, static_cast<size_t>(utf8_need_));
}

void OutputFilter::EscFinal(unsigned char c, std::string* out) {
  state_ = State::kGround;
  // DECSC, DECRC, DECKPAM, DECKPNM, DECBI, DECFI, IND, NEL, HTS, RI, RIS,
  // SS2, SS3, LS2, LS3, LS3R, LS2R, LS1R. Not DECID (ESC Z) nor a lone ST.
  static constexpr std::string_view kAllowed = "78=>69DEHMcNOno|}~";
  if (kAllowed.find(static_cast<char>(c)) == std::string_view::npos) {
    ++removed_;
    return;
  }
  out->push_back(static_cast<char>(kEsc));
  out->push_back(static_cast<char>(c));
}

void OutputFilter::CsiFinal(unsigned char c, std::string* out) {
  state_ = State::kGround;
  Csi csi;
  if (!ParseCsi(seq_, &csi) || !CsiAllowed(csi, c)) {
    Remove(State::kGround);
    return;
  }
  out->append("\x1b[");
  out->append(seq_);
  out->push_back(static_cast<char>(c));
  seq_.clear();
}

bool OutputFilter::OscKind() {
  if (seq_.empty() || seq_.size() > kMaxOscNumber) return false;
  uint32_t n = 0;
  for (char c : seq_) n = n * 10 + static_cast<uint32_t>(c - '0');
  if (n <= 2) {
    osc_ = Osc::kTitle;
    osc_limit_ = kMaxTitle;
  } else if (n == 4 || (n >= 10 && n <= 19) || n == 104 || (n >= 110 && n <= 119)) {
    osc_ = Osc::kColour;
    osc_limit_ = kMaxOsc;
  } else if (n == 8) {
    osc_ = Osc::kHyperlink;
    osc_limit_ = kMaxOsc;
  } else if (n == 133) {
    osc_ = Osc::kMark;
    osc_limit_ = kMaxOsc;
  } else if (n == 52 && policy_.clipboard_write) {
    osc_ = Osc::kClipboard;
    osc_limit_ = kMaxClipboard;
  } else {
    return false;
  }
  return true;
}

void OutputFilter::OscEnd(std::string_view terminator, std::string* out) {
  state_ = State::kGround;
  if (osc_ == Osc::kUnknown && !OscKind()) {
    Remove(State::kGround);
    return;
  }
  const size_t semi = seq_.find(';');
  const std::string_view payload =
      semi == std::string::npos ? std::string_view() : std::string_view(seq_).substr(semi + 1);
  bool ok = false;
  switch (osc_) {
    case Osc::kTitle:
      ok = IsText(payload);
      break;
    case Osc::kColour:
    case Osc::kHyperlink:
    case Osc::kMark:
      ok = IsPrintableAscii(payload);
      break;
    case Osc::kClipboard:
      ok = IsClipboardWrite(payload);
      break;
    case Osc::kUnknown:
      break;
  }
  if (!ok) {
    Remove(State::kGround);
    return;
  }
  out->append("\x1b]");
  out->append(seq_);
  out->append(terminator);
  ClearSequence();
}

bool OutputFilter::Step(unsigned char c, std::string* out) {
  switch (state_) {
    case State::kGround:
      Ground(c, out);
      return true;

    case State::kUtf8: {
      bool again = false;
      Utf8(c, out, &again);
      return !again;
    }

    case State::kEsc:
      if (c == '[') {
        seq_.clear();
        state_ = State::kCsi;
      } else if (c == ']') {
        seq_.clear();
        osc_ = Osc::kUnknown;
        state_ = State::kOsc;
      } else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
        // DCS, SOS, PM, APC: removed whole, up to their ST.
        skip_bel_ends_ = false;
        Remove(State::kStringSkip);
      } else if (IsIntermediate(c)) {
        seq_.assign(1, static_cast<char>(c));
        state_ = State::kEscIntermediate;
      } else if (c >= 0x30 && c <= 0x7e) {
        EscFinal(c, out);
      } else if (c == kEsc) {
        ++removed_;  // ESC ESC: the first one ends as nothing
      } else if (c == kCan || c == kSub) {
        state_ = State::kGround;
      } else if (c < 0x20) {
        // A control inside a sequence acts at once; the sequence goes on.
        if (PassedControl(c)) out->push_back(static_cast<char>(c));
      } else if (c >= 0x80) {
        ++removed_;
        state_ = State::kGround;
        return false;
      }
      return true;

    case State::kEscIntermediate:
      if (IsIntermediate(c)) {
        if (seq_.size() < kMaxEscIntermediates) seq_.push_back(static_cast<char>(c));
      } else if (c >= 0x30 && c <= 0x7e) {
        state_ = State::kGround;
        // Character set designations (G0-G3) and the DEC line attributes
        // and screen alignment test. Not ESC % (leaves UTF-8: raw bytes
        // would then be C1 controls) nor ESC SP (7/8-bit controls).
        const bool charset =
            std::string_view("()*+-./").find(seq_[0]) != std::string_view::npos &&
            seq_.size() <= 2;
        const bool line = seq_ == "#" && std::string_view("34568").find(static_cast<char>(c)) !=
                                             std::string_view::npos;
        if (!charset && !line) {
          Remove(State::kGround);
          return true;
        }
        out->push_back(static_cast<char>(kEsc));
        out->append(seq_);
        out->push_back(static_cast<char>(c));
        seq_.clear();
      } else if (c == kEsc) {
        Remove(State::kEsc);
      } else if (c == kCan || c == kSub) {
        Remove(State::kGround);
      } else if (c < 0x20) {
        if (PassedControl(c)) out->push_back(static_cast<char>(c));
      } else if (c >= 0x80) {
        Remove(State::kGround);
        return false;
      }
      return true;

    case State::kCsi:
      if (IsParam(c) || IsIntermediate(c)) {
        const bool after_intermediate =
            !seq_.empty() && IsIntermediate(static_cast<unsigned char>(seq_.back()));
        if (seq_.size() >= kMaxCsi || (IsParam(c) && after_intermediate)) {
          Remove(State::kCsiSkip);  // too long or out of order: removed whole
        } else {
          seq_.push_back(static_cast<char>(c));
        }
      } else if (IsFinal(c)) {
        CsiFinal(c, out);
      } else if (c == kEsc) {
        Remove(State::kEsc);
      } else if (c == kCan || c == kSub) {
        Remove(State::kGround);
      } else if (c < 0x20) {
        if (PassedControl(c)) out->push_back(static_cast<char>(c));
      } else if (c >= 0x80) {
        Remove(State::kGround);
        return false;
      }
      return true;

    case State::kCsiSkip:
      if (IsFinal(c) || c == kCan || c == kSub) {
        state_ = State::kGround;
      } else if (c == kEsc) {
        state_ = State::kEsc;
      } else if (c < 0x20) {
        if (PassedControl(c)) out->push_back(static_cast<char>(c));
      } else if (c >= 0x80) {
        state_ = State::kGround;
        return false;
      }
      return true;

    case State::kOsc:
      if (c == kBel) {
        OscEnd("\a", out);
      } else if (c == kEsc) {
        state_ = State::kOscEsc;
      } else if (c == kCan || c == kSub) {
        Remove(State::kGround);
      } else if (osc_ == Osc::kUnknown) {
        if (c >= '0' && c <= '9' && seq_.size() < kMaxOscNumber) {
          seq_.push_back(static_cast<char>(c));
        } else if (c == ';' && OscKind()) {
          seq_.push_back(';');
        } else {
          skip_bel_ends_ = true;
          Remove(State::kStringSkip);
        }
      } else if (seq_.size() >= osc_limit_ || c < 0x20 || c == kDel ||
                 (c >= 0x80 && osc_ != Osc::kTitle)) {
        // Over its bound, or a byte no allowed OSC holds: removed whole.
        skip_bel_ends_ = true;
        Remove(State::kStringSkip);
      } else {
        seq_.push_back(static_cast<char>(c));
      }
      return true;

    case State::kOscEsc:
      if (c == '\\') {
        OscEnd("\x1b\\", out);
        return true;
      }
      // ESC and anything else cuts the string short: removed, and the
      // byte is read as the new escape's.
      Remove(State::kEsc);
      return false;

    case State::kStringSkip:
      if ((c == kBel && skip_bel_ends_) || c == kCan || c == kSub) {
        state_ = State::kGround;
      } else if (c == kEsc) {
        state_ = State::kStringSkipEsc;
      }
      return true;

    case State::kStringSkipEsc:
      if (c == '\\') {
        state_ = State::kGround;
        return true;
      }
      state_ = State::kEsc;
      return false;
  }
  return true;
}

}  // namespace lazaret::terminal
