// libFuzzer target for the terminal output filter (lazaret_terminal's
// OutputFilter), which every byte of a sandbox's terminal output passes
// through in the session worker before it reaches a developer's terminal
// emulator; the input is the sandbox's, untrusted. The first byte picks the
// policy and a split point. Properties: nothing crashes; the output, read
// by an independent scanner written from the terminal's side, starts no
// removed sequence (no DCS/APC/PM/SOS, no OSC outside the allowed numbers,
// no OSC 52 write unless allowed and never a read, no title report or
// window operation, no encoding switch, no C0 other than the screen's, no
// C1 as a byte or a code point, no partial sequence); the output does not
// depend on where the input was split; and filtering the output again
// changes nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "services/terminal/output_filter.h"

namespace {

bool Has(std::string_view set, char c) { return set.find(c) != std::string_view::npos; }

uint32_t Number(std::string_view digits) {
  uint32_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || n > 100000000) return 0xffffffff;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  return n;
}

// Reads one OSC from out[i] (just after ESC ]); aborts on a removed one.
size_t CheckOsc(std::string_view out, size_t i, bool clipboard_write) {
  size_t end = i;
  while (end < out.size() && out[end] != '\a' && out[end] != '\x1b') ++end;
  if (end >= out.size()) abort();  // unterminated
  if (out[end] == '\x1b' && (end + 1 >= out.size() || out[end + 1] != '\\')) abort();
  const std::string_view body = out.substr(i, end - i);
  const std::string_view digits = body.substr(0, body.find(';'));
  const uint32_t n = Number(digits);
  const bool allowed = n <= 2 || n == 4 || (n >= 10 && n <= 19) || n == 104 ||
                       (n >= 110 && n <= 119) || n == 8 || n == 133 ||
                       (n == 52 && clipboard_write);
  if (digits.empty() || !allowed) abort();
  if (n == 52 && (body.find('?') != std::string_view::npos)) abort();  // a read
  return out[end] == '\a' ? end + 1 : end + 2;
}

// Reads one CSI from out[i] (just after ESC [); aborts on a removed one.
size_t CheckCsi(std::string_view out, size_t i) {
  size_t end = i;
  while (end < out.size() && !(out[end] >= 0x40 && out[end] <= 0x7e)) {
    if (static_cast<unsigned char>(out[end]) < 0x20) abort();  // controls go before
    ++end;
  }
  if (end >= out.size()) abort();  // unterminated
  const char final_byte = out[end];
  const std::string_view body = out.substr(i, end - i);
  if (final_byte == 'i') abort();  // media copy
  if (final_byte == 't') {
    if (body.empty() || !(body[0] >= '0' && body[0] <= '9')) abort();
    const uint32_t op = Number(body.substr(0, body.find(';')));
    if (op != 14 && op != 16 && op != 18 && op != 19 && op != 22 && op != 23) abort();
  }
  if (final_byte == 'y' || final_byte == 'x') abort();  // checksums, DECREQTPARM
  if ((final_byte == 'h' || final_byte == 'l') && (body.empty() || body[0] != '?')) {
    // ANSI modes: insert mode only.
    size_t start = 0;
    while (true) {
      const size_t semi = body.find(';', start);
      if (Number(body.substr(start, semi - start)) != 4) abort();
      if (semi == std::string_view::npos) break;
      start = semi + 1;
    }
  }
  return end + 1;
}

void CheckOutput(std::string_view out, bool clipboard_write) {
  size_t i = 0;
  while (i < out.size()) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c == 0x1b) {
      if (i + 1 >= out.size()) abort();  // a lone ESC at the end
      const char next = out[i + 1];
      if (next == '[') {
        i = CheckCsi(out, i + 2);
      } else if (next == ']') {
        i = CheckOsc(out, i + 2, clipboard_write);
      } else if (Has("()*+-./", next)) {
        i += 2;
        while (i < out.size() && out[i] >= 0x20 && out[i] <= 0x2f) ++i;
        if (i >= out.size()) abort();
        ++i;
      } else if (next == '#') {
        if (i + 2 >= out.size() || !Has("34568", out[i + 2])) abort();
        i += 3;
      } else if (Has("78=>69DEHMcNOno|}~", next)) {
        i += 2;
      } else {
        abort();  // DCS, APC, PM, SOS, ESC %, ESC SP, DECID, ...
      }
    } else if (c < 0x20 || c == 0x7f) {
      if (c < 0x07 || c > 0x0f) abort();
      ++i;
    } else if (c < 0x80) {
      ++i;
    } else {
      // Well-formed UTF-8 and no C1 code point.
      const int need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
      if (need < 0 || c > 0xf4 || i + need >= out.size()) abort();
      uint32_t cp = c & (0x3f >> need);
      for (int k = 1; k <= need; ++k) {
        const unsigned char ck = static_cast<unsigned char>(out[i + k]);
        if ((ck & 0xc0) != 0x80) abort();
        cp = (cp << 6) | (ck & 0x3f);
      }
      if (cp >= 0x80 && cp <= 0x9f) abort();
      if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff))) abort();
      if (cp >= 0xd800 && cp <= 0xdfff) abort();
      i += need + 1;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const lazaret::terminal::OutputPolicy policy{(data[0] & 1) != 0};
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t cut = in.empty() ? 0 : (data[0] >> 1) % (in.size() + 1);

  const std::string whole = lazaret::terminal::OutputFilter(policy).Filter(in);
  CheckOutput(whole, policy.clipboard_write);

  lazaret::terminal::OutputFilter split(policy);
  std::string parts = split.Filter(in.substr(0, cut));
  parts += split.Filter(in.substr(cut));
  if (parts != whole) abort();

  if (lazaret::terminal::OutputFilter(policy).Filter(whole) != whole) abort();
  return 0;
}
