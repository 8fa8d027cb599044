#include "services/brokerd/command/matcher.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/vocab/auto_approve.h"
#include "services/vocab/escape.h"
#include "services/vocab/shell_words.h"
#include "services/vocab/text_scan.h"

namespace lazaret::brokerd::command {
namespace {

Judgement NotAuto(std::string reason) {
  Judgement j;
  j.reason_not_auto = std::move(reason);
  return j;
}

// `text` for a reason: the judged text is plain ASCII once check 1 passed,
// but entry text and argv[0] are shown before or without it.
std::string Shown(absl::string_view text) { return vocab::EscapeForDisplay(text, nullptr); }

}  // namespace

Judgement Judge(absl::string_view command_text, const std::vector<std::string>& argv,
                const ResolvedBinary& binary, const std::vector<AutoApproveEntry>& entries,
                const vocab::OperandPathCheck& paths) {
  // 1. The text.
  if (!command_text.empty()) {
    const vocab::TextFindings f = vocab::ScanText(command_text);
    if (f.any()) return NotAuto(f.first);
  } else {
    for (size_t i = 0; i < argv.size(); ++i) {
      const vocab::TextFindings f = vocab::ScanText(argv[i]);
      if (f.any()) return NotAuto(absl::StrCat("argv[", i, "] ", f.first));
    }
  }
  if (argv.empty()) return NotAuto("the command is empty");

  // 2. The text is the argv.
  if (!command_text.empty()) {
    absl::StatusOr<std::vector<std::string>> words = vocab::SplitShellWords(command_text);
    if (!words.ok()) {
      return NotAuto(
          absl::StrCat("the command does not split into words: ", words.status().message()));
    }
    if (*words != argv) return NotAuto("the command does not split into the argv judged");
  }

  // 3. argv[0].
  const std::string& name = argv[0];
  if (name.find('=') != std::string::npos) return NotAuto("argv[0] is an assignment (VAR=value)");
  if (absl::Status s = CheckCommandName(name); !s.ok()) return NotAuto(std::string(s.message()));

  // 4. and 5. A covering entry whose program is still the same file.
  const vocab::OperandPathCheck unchecked = [](absl::string_view) {
    return std::optional<std::string>(
        "may name a path, and no working directory was given to check it in");
  };
  const vocab::OperandPathCheck* const path_check = paths ? &paths : &unchecked;
  const AutoApproveEntry* exact_shorter = nullptr;
  const AutoApproveEntry* other_file = nullptr;
  // The prefix entry whose following words were refused furthest into the
  // request (on a tie, the longer entry, then the one listing more
  // options, then the first), and why: the entry the request was most
  // likely meant for.
  const AutoApproveEntry* refused_words = nullptr;
  size_t refused_at = 0;
  std::string words_reason;
  for (const AutoApproveEntry& entry : entries) {
    if (entry.argv.empty() || !vocab::IsArgvPrefix(entry.argv, argv)) continue;
    if (entry.exact && entry.argv.size() != argv.size()) {
      if (exact_shorter == nullptr) exact_shorter = &entry;
      continue;
    }
    if (!entry.exact) {
      size_t at = 0;
      std::optional<std::string> why =
          vocab::FollowingWordsRefusal(argv, entry.argv.size(), entry.options, path_check, &at);
      if (why) {
        const auto rank = [](size_t word, const AutoApproveEntry& e) {
          return std::make_tuple(word, e.argv.size(), e.options.size());
        };
        if (refused_words == nullptr || rank(at, entry) > rank(refused_at, *refused_words)) {
          refused_words = &entry;
          refused_at = at;
          words_reason = *std::move(why);
        }
        continue;
      }
    }
    if (!entry.binary.SameFile(binary)) {
      if (other_file == nullptr) other_file = &entry;
      continue;
    }
    Judgement j;
    j.auto_approved = true;
    j.entry_text = entry.text;
    return j;
  }
  if (other_file != nullptr && other_file->binary.path == binary.path) {
    return NotAuto(absl::StrCat("'", Shown(name), "' resolves to ", Shown(binary.path),
                                ", which is not the file it was at session start"));
  }
  if (other_file != nullptr) {
    return NotAuto(absl::StrCat("'", Shown(name), "' now resolves to ", Shown(binary.path),
                                ", not ", Shown(other_file->binary.path), " as at session start"));
  }
  if (refused_words != nullptr) {
    return NotAuto(absl::StrCat("the entry '", Shown(refused_words->text),
                                "' admits only plain operands and the options it lists: ",
                                words_reason));
  }
  if (exact_shorter != nullptr) {
    return NotAuto(absl::StrCat("the entry '", Shown(exact_shorter->text),
                                "' is exact and this command adds arguments"));
  }
  return NotAuto("no auto_approve entry is a prefix of this command");
}

}  // namespace lazaret::brokerd::command
