#include "clients/lazaret/config/terminal_text.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::cli::config {

std::string SourceLine(absl::string_view text, uint32_t line) {
  if (line == 0) return "";
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (line > lines.size()) return "";
  absl::string_view l = lines[line - 1];
  if (l.size() > 200) return absl::StrCat(l.substr(0, 200), "...");
  return std::string(l);
}

}  // namespace lazaret::cli::config
