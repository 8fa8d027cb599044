#include "clients/lazaret/doctor/host_facts.h"

#include <cstdint>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::cli::doctor {

std::string FirstLine(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s.substr(0, s.find('\n'))));
}

bool GitAtLeast(const std::string& version_line, int want_major, int want_minor) {
  std::vector<std::string> words = absl::StrSplit(version_line, ' ');
  if (words.size() < 3) return false;
  std::vector<std::string> parts = absl::StrSplit(words[2], '.');
  int ma = 0, mi = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &ma) || !absl::SimpleAtoi(parts[1], &mi)) {
    return false;
  }
  return ma > want_major || (ma == want_major && mi >= want_minor);
}

bool HasSubordinateRange(absl::string_view text, const std::string& name, uid_t uid) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ':');
    if (f.size() != 3) continue;
    uint64_t count = 0;
    if ((f[0] == name || f[0] == absl::StrCat(uid)) && absl::SimpleAtoi(f[2], &count) &&
        count >= 65536) {
      return true;
    }
  }
  return false;
}

}  // namespace lazaret::cli::doctor
