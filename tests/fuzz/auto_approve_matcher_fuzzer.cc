// libFuzzer target for lazaret-brokerd's auto-approve matcher (Judge), the
// check that lets a sandbox request run on the host without a human.
// Input: one mode byte, then the entry text, a NUL, and the request (in
// text mode the command text; in argv mode its elements separated by 0x01,
// a byte the matcher refuses anyway, so no element can hold one).
// Properties: nothing crashes; when Judge says auto, the request holds
// only printable ASCII outside the refused set, argv[0] is a bare name,
// the entry's argv is a prefix of the request's (equal for an exact
// entry), and the program resolved to the entry's file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "services/brokerd/command/matcher.h"
#include "services/configd/shell_words.h"

namespace command = lazaret::brokerd::command;

namespace {

constexpr absl::string_view kRefused = ";|&$`<>(){}[]*?~!#'\"\\";

bool Clean(absl::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7E || kRefused.find(c) != absl::string_view::npos) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nul = input.find('\0');
  if (nul == absl::string_view::npos) return 0;
  const absl::string_view entry_text = input.substr(0, nul);
  const absl::string_view request = input.substr(nul + 1);

  absl::StatusOr<std::vector<std::string>> entry_argv =
      lazaret::config::SplitShellWords(entry_text);
  if (!entry_argv.ok()) return 0;
  command::AutoApproveEntry entry;
  entry.argv = *entry_argv;
  entry.exact = (mode & 1) != 0;
  entry.text = std::string(entry_text);
  entry.binary = {"/usr/bin/x", 1, 2};
  const bool argv_mode = (mode & 2) != 0;
  const bool swapped = (mode & 4) != 0;
  const command::ResolvedBinary now{"/usr/bin/x", 1, swapped ? 3u : 2u};

  std::vector<std::string> argv;
  std::string command_text;
  if (argv_mode) {
    if (!request.empty()) argv = absl::StrSplit(request, '\x01');
  } else {
    command_text = std::string(request);
    argv = lazaret::config::SplitShellWords(request).value_or(std::vector<std::string>{});
  }
  const command::Judgement j = command::Judge(command_text, argv, now, {entry});
  if (!j.auto_approved) {
    if (j.reason_not_auto.empty()) abort();
    return 0;
  }
  if (swapped || j.entry_text != entry.text || argv.empty() || entry.argv.empty()) abort();
  if (argv_mode) {
    for (const std::string& a : argv) {
      if (!Clean(a)) abort();
    }
  } else if (!Clean(command_text)) {
    abort();
  }
  if (argv[0].find_first_of("/=") != std::string::npos) abort();
  if (argv[0].empty() || argv[0][0] == '-' || argv[0][0] == '.') abort();
  if (entry.argv.size() > argv.size() || (entry.exact && entry.argv.size() != argv.size())) {
    abort();
  }
  for (size_t i = 0; i < entry.argv.size(); ++i) {
    if (entry.argv[i] != argv[i]) abort();
  }
  return 0;
}
