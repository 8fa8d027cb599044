#include "clients/lazaret/approve/display_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/vocab/escape.h"
#include "services/vocab/utf8.h"

namespace lazaret::cli::approve {
namespace {

constexpr char kEllipsis[] = "\xE2\x80\xA6";  // U+2026

bool IsWide(char32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) ||
         (cp >= 0x3041 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
         (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) ||
         (cp >= 0x1F300 && cp <= 0x1F64F) || (cp >= 0x1F900 && cp <= 0x1F9FF) ||
         (cp >= 0x20000 && cp <= 0x3FFFD);
}

void AppendRun(Line& line, absl::string_view text, bool marked) {
  if (text.empty()) return;
  // Escapes stay one run each, so Wrap can keep them whole.
  if (!marked && !line.empty() && !line.back().marked) {
    line.back().text.append(text.data(), text.size());
    return;
  }
  line.push_back(Run{std::string(text), marked});
}

}  // namespace

size_t CodePointWidth(char32_t cp) {
  if (vocab::IsCombiningCodePoint(cp)) return 0;
  return IsWide(cp) ? 2 : 1;
}

size_t TextWidth(absl::string_view text) {
  size_t width = 0;
  size_t pos = 0;
  while (pos < text.size()) width += CodePointWidth(vocab::DecodeNext(text, &pos));
  return width;
}

size_t LineWidth(const Line& line) {
  size_t width = 0;
  for (const Run& run : line) width += TextWidth(run.text);
  return width;
}

std::string PlainText(const Line& line) {
  std::string out;
  for (const Run& run : line) out += run.text;
  return out;
}

Line Display(absl::string_view raw) {
  // The escaping policy is vocab's; escapes are marked here instead of
  // having their backslash doubled.
  Line line;
  vocab::ForEachEscapePiece(raw, vocab::EscapeOptions{.double_backslash = false},
                            [&line](absl::string_view text, bool escaped) {
                              AppendRun(line, text, escaped);
                            });
  return line;
}

Line DisplayVisible(absl::string_view raw) {
  Line line;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t space = raw.find(' ', pos);
    const size_t text_end = space == absl::string_view::npos ? raw.size() : space;
    Append(line, Display(raw.substr(pos, text_end - pos)));
    if (text_end == raw.size()) break;
    size_t run_end = text_end;
    while (run_end < raw.size() && raw[run_end] == ' ') ++run_end;
    const size_t n = run_end - text_end;
    if (n >= 2 || text_end == 0 || run_end == raw.size()) {
      line.push_back(Run{n == 1 ? "[1 space]" : absl::StrFormat("[%d spaces]", n), true});
    } else {
      AppendRun(line, " ", false);
    }
    pos = run_end;
  }
  return line;
}

std::vector<std::string> Oddities(absl::string_view what, absl::string_view raw) {
  std::vector<std::string> out;
  size_t longest = 0;
  for (size_t i = 0; i < raw.size();) {
    if (raw[i] != ' ') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < raw.size() && raw[j] == ' ') ++j;
    longest = std::max(longest, j - i);
    i = j;
  }
  if (longest >= 2) out.push_back(absl::StrFormat("%s holds a run of %d spaces", what, longest));
  if (!raw.empty() && raw.front() == ' ') out.push_back(absl::StrCat(what, " starts with a space"));
  if (!raw.empty() && raw.back() == ' ') out.push_back(absl::StrCat(what, " ends with a space"));
  if (raw.find_first_of("\t\n\r\v\f") != absl::string_view::npos) {
    out.push_back(absl::StrCat(what, " holds a tab or a line break"));
  }
  if (raw.size() > kLongArgBytes) {
    out.push_back(absl::StrFormat("%s is %d bytes long", what, raw.size()));
  }
  std::vector<std::string> foreign;
  size_t foreign_count = 0;
  bool more_kinds = false;
  size_t pos = 0;
  while (pos < raw.size()) {
    const char32_t cp = vocab::DecodeNext(raw, &pos);
    if (cp < 0x80 || vocab::IsInvalidByte(cp)) continue;
    ++foreign_count;
    const std::string name = absl::StrFormat("U+%04X", static_cast<unsigned>(cp));
    if (std::find(foreign.begin(), foreign.end(), name) != foreign.end()) continue;
    if (foreign.size() < 4) {
      foreign.push_back(name);
    } else {
      more_kinds = true;
    }
  }
  if (foreign_count > 0) {
    out.push_back(absl::StrCat(what, " holds ", foreign_count,
                               " non-ASCII character(s), which can look like ASCII ones: ",
                               absl::StrJoin(foreign, " "), more_kinds ? " ..." : ""));
  }
  return out;
}

Line Plain(absl::string_view text) {
  Line line;
  AppendRun(line, text, false);
  return line;
}

void Append(Line& line, const Line& suffix) {
  for (const Run& run : suffix) AppendRun(line, run.text, run.marked);
}

std::vector<Line> Wrap(const Line& line, size_t width, size_t max_rows) {
  std::vector<Line> rows;
  if (width == 0 || max_rows == 0) return rows;
  rows.emplace_back();
  size_t used = 0;
  bool cut = false;
  auto new_row = [&]() -> bool {
    if (rows.size() == max_rows) {
      cut = true;
      return false;
    }
    rows.emplace_back();
    used = 0;
    return true;
  };
  for (const Run& run : line) {
    if (cut) break;
    const size_t run_width = TextWidth(run.text);
    if (run.marked && run_width <= width) {
      if (used + run_width > width && !new_row()) break;
      AppendRun(rows.back(), run.text, true);
      used += run_width;
      continue;
    }
    size_t pos = 0;
    while (pos < run.text.size()) {
      const size_t start = pos;
      const size_t w = CodePointWidth(vocab::DecodeNext(run.text, &pos));
      if (used + w > width && !new_row()) break;
      AppendRun(rows.back(), absl::string_view(run.text).substr(start, pos - start), run.marked);
      used += w;
    }
  }
  if (cut) {
    // Make room for the ellipsis in the last row.
    Line& last = rows.back();
    size_t last_width = LineWidth(last);
    while (last_width + 1 > width && !last.empty()) {
      Run& run = last.back();
      if (run.marked) {
        last_width -= TextWidth(run.text);
        last.pop_back();
        continue;
      }
      // Drop the last code point of the run.
      size_t cut_at = 0;
      size_t pos = 0;
      size_t w = 0;
      while (pos < run.text.size()) {
        cut_at = pos;
        w = CodePointWidth(vocab::DecodeNext(run.text, &pos));
      }
      run.text.resize(cut_at);
      last_width -= w;
      if (run.text.empty()) last.pop_back();
    }
    AppendRun(last, kEllipsis, false);
  }
  if (rows.size() > 1 && rows.back().empty()) rows.pop_back();
  return rows;
}

Line Truncate(const Line& line, size_t width) {
  std::vector<Line> rows = Wrap(line, width, 1);
  if (rows.empty()) return {};
  return rows.front();
}

}  // namespace lazaret::cli::approve
