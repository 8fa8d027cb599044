// libFuzzer target for the POSIX shell-word splitter (lazaret_config's
// SplitShellWords), which splits auto_approve entries in lazaret-configd and
// request commands in lazaret-brokerd; both texts are untrusted. Properties:
// nothing crashes; joining the words with spaces after quoting each with
// '...' (a ' inside written as '\'') splits back to the same words.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "services/vocab/shell_words.h"

namespace {

std::string SingleQuoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<std::string>> words = lazaret::vocab::SplitShellWords(text);
  if (!words.ok()) return 0;
  std::string joined;
  for (const std::string& word : *words) {
    if (!joined.empty()) joined.push_back(' ');
    joined += SingleQuoted(word);
  }
  absl::StatusOr<std::vector<std::string>> again = lazaret::vocab::SplitShellWords(joined);
  if (!again.ok() || *again != *words) abort();
  return 0;
}
