// libFuzzer target for lazaret-brokerd's auto-approve matcher (Judge), the
// check that lets a sandbox request run on the host without a human.
// Input: one mode byte, then the entry, a NUL, and the request (in text
// mode the command text; in argv mode its elements separated by 0x01, a
// byte the matcher refuses anyway, so no element can hold one). The entry
// is its text, optionally followed by 0x01 and its options separated by
// 0x01 (a prefix entry's options = [...]).
// The path check is a stand-in for the workspace: a word starting with
// "out" names a symlink out of it. Mode bit 8 gives Judge no path check.
// Properties: nothing crashes; when Judge says auto, the request holds
// only printable ASCII outside the refused set, argv[0] is a bare name,
// the entry's argv is a prefix of the request's (equal for an exact
// entry), every later word is a listed option, a listed "--" option with
// '=' and a plain value, or a plain operand (judged here independently of
// the matcher's own code), no admitted word or value names the symlink,
// and the program resolved to the entry's file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "services/brokerd/command/matcher.h"
#include "services/vocab/shell_words.h"

namespace command = lazaret::brokerd::command;

namespace {

constexpr absl::string_view kRefused = ";|&$`<>(){}[]*?~!#'\"\\";

bool Clean(absl::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7E || kRefused.find(c) != absl::string_view::npos) return false;
  }
  return true;
}

// The operand rule, restated: no option, home, absolute path, value,
// file reference, URL or remote path, no ".." component.
bool Plain(absl::string_view w) {
  if (w.empty() || w[0] == '-' || w[0] == '~' || w[0] == '/') return false;
  if (w.find_first_of("=@") != absl::string_view::npos) return false;
  if (w.find(":/") != absl::string_view::npos) return false;
  for (absl::string_view part : absl::StrSplit(w, '/')) {
    if (part == "..") return false;
  }
  return true;
}

bool NamesTheSymlink(absl::string_view w) { return absl::StartsWith(w, "out"); }

bool Listed(const std::vector<std::string>& options, absl::string_view w) {
  for (const std::string& o : options) {
    if (o == w) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nul = input.find('\0');
  if (nul == absl::string_view::npos) return 0;
  const absl::string_view entry_field = input.substr(0, nul);
  const absl::string_view request = input.substr(nul + 1);
  const size_t sep = entry_field.find('\x01');
  const absl::string_view entry_text = entry_field.substr(0, sep);

  absl::StatusOr<std::vector<std::string>> entry_argv =
      lazaret::vocab::SplitShellWords(entry_text);
  if (!entry_argv.ok()) return 0;
  command::AutoApproveEntry entry;
  entry.argv = *entry_argv;
  entry.exact = (mode & 1) != 0;
  entry.text = std::string(entry_text);
  entry.binary = {"/usr/bin/x", 1, 2};
  if (sep != absl::string_view::npos) {
    entry.options = absl::StrSplit(entry_field.substr(sep + 1), '\x01');
  }
  const bool argv_mode = (mode & 2) != 0;
  const bool swapped = (mode & 4) != 0;
  const bool no_path_check = (mode & 8) != 0;
  const command::ResolvedBinary now{"/usr/bin/x", 1, swapped ? 3u : 2u};

  std::vector<std::string> argv;
  std::string command_text;
  if (argv_mode) {
    if (!request.empty()) argv = absl::StrSplit(request, '\x01');
  } else {
    command_text = std::string(request);
    argv = lazaret::vocab::SplitShellWords(request).value_or(std::vector<std::string>{});
  }
  const lazaret::vocab::OperandPathCheck symlink_out =
      [](absl::string_view w) -> std::optional<std::string> {
    if (NamesTheSymlink(w)) return std::string("leads out");
    return std::nullopt;
  };
  const command::Judgement j = command::Judge(
      command_text, argv, now, {entry},
      no_path_check ? lazaret::vocab::OperandPathCheck() : symlink_out);
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
  if (no_path_check && argv.size() != entry.argv.size()) abort();
  if (entry.exact) return 0;
  for (size_t i = entry.argv.size(); i < argv.size(); ++i) {
    const absl::string_view w = argv[i];
    if (Listed(entry.options, w)) {
      if (NamesTheSymlink(w)) abort();
      continue;
    }
    const size_t eq = w.find('=');
    if (absl::StartsWith(w, "--") && eq != absl::string_view::npos &&
        Listed(entry.options, w.substr(0, eq))) {
      const absl::string_view value = w.substr(eq + 1);
      if (!Plain(value) || NamesTheSymlink(value)) abort();
      continue;
    }
    if (!Plain(w) || NamesTheSymlink(w)) abort();
  }
  return 0;
}
