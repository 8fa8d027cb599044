#include "services/vocab/auto_approve.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/vocab/auto_approve_classes.h"
#include "services/vocab/shell_words.h"

namespace lazaret::vocab {
namespace {

// Rule 6: CLIs accepted only with a named subcommand, and never with these.
struct SubcommandTool {
  absl::string_view name;
  std::vector<absl::string_view> refused_subcommands;
};
const std::vector<SubcommandTool>& SubcommandTools() {
  static const auto* const kTools = new std::vector<SubcommandTool>{
      {"gh", {"alias", "extension", "ext", "codespace", "cs", "config", "auth"}},
      {"glab", {"alias", "config", "auth"}},
      {"aws", {"configure", "ssm", "ecs"}},
      {"gcloud", {"config", "components", "compute", "cloud-shell", "auth", "alpha", "beta"}},
      {"az", {"extension", "config", "ssh", "login"}},
  };
  return *kTools;
}

bool AllowedEntryChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  return absl::string_view(" '\"_-.,:/=+@%^").find(c) != absl::string_view::npos;
}

bool BareNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
         c == '-';
}

std::string Printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  return absl::StrFormat("\\x%02x", u);
}

// The names argv[0] is looked up under in the class tables: lowercased,
// version suffix stripped, and the parts before the first '.' and after
// the last '-' or '_' (each normalised again). The first is the name itself.
std::vector<std::string> LookupNames(absl::string_view argv0) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(n);
    }
  };
  const std::string lower = absl::AsciiStrToLower(argv0);
  const std::string base = NormalizeCommandName(lower);
  add(lower);
  add(base);
  auto before_dot = [](const std::string& s) { return s.substr(0, s.find('.')); };
  auto after_dash = [](const std::string& s) {
    const size_t i = s.find_last_of("-_");
    return i == std::string::npos ? s : s.substr(i + 1);
  };
  for (const std::string& part :
       {before_dot(base), after_dash(base), before_dot(after_dash(base))}) {
    add(part);
    add(NormalizeCommandName(part));
  }
  return names;
}

// A table entry that matched argv[0], under which name.
struct ClassMatch {
  const RefusedTable* table;
  std::string as;
};

std::vector<ClassMatch> FindClasses(absl::string_view argv0) {
  const std::vector<std::string> names = LookupNames(argv0);
  std::vector<ClassMatch> found;
  for (const RefusedTable& t : RefusedTables()) {
    if (t.cls == EntryClass::kBuiltin) continue;  // judged on the name as written (rule 2)
    for (const std::string& n : names) {
      if (std::find(t.names.begin(), t.names.end(), n) != t.names.end()) {
        found.push_back({&t, n});
        break;
      }
    }
  }
  return found;
}

std::string Refusal(absl::string_view argv0, const ClassMatch& m) {
  const std::string taken_as =
      m.as == absl::AsciiStrToLower(argv0) || m.as == NormalizeCommandName(argv0)
          ? std::string()
          : absl::StrCat(" (taken as '", m.as, "')");
  return absl::StrCat("'", argv0, "'", taken_as, " is a ", ClassLabel(m.table->cls), ": ",
                      m.table->why, ClassConsequence(m.table->cls));
}

bool IsHttpUrl(absl::string_view s) {
  return absl::StartsWith(s, "https://") || absl::StartsWith(s, "http://");
}

// A value written after '=' in an option that looks like a path.
bool LooksLikePath(absl::string_view v) {
  if (v.find('/') != absl::string_view::npos) return true;
  const bool numeric = std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
  return !numeric && v.find('.') != absl::string_view::npos;
}

// The exact form of a reader or writer: no argument may name a relative
// path. nullopt when every argument passes.
std::optional<std::string> RelativeArgument(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    absl::string_view a = argv[i];
    if (absl::StartsWith(a, "-")) {
      const size_t eq = a.find('=');
      if (eq == absl::string_view::npos) continue;
      const absl::string_view v = a.substr(eq + 1);
      if (!LooksLikePath(v) || absl::StartsWith(v, "/") || IsHttpUrl(v)) continue;
      return std::string(a);
    }
    if (absl::StartsWith(a, "/") || IsHttpUrl(a)) continue;
    return std::string(a);
  }
  return std::nullopt;
}

// A word for a reason: quoted, and cut short (a request's words reach 64
// KiB; the reason is shown to a human).
std::string QuotedWord(absl::string_view word) {
  constexpr size_t kMax = 64;
  if (word.size() <= kMax) return absl::StrCat("'", word, "'");
  return absl::StrCat("'", word.substr(0, kMax), "...' (", word.size(), " bytes)");
}

bool Listed(const std::vector<std::string>& options, absl::string_view word) {
  return std::find(options.begin(), options.end(), word) != options.end();
}

// Rule 5: the risky option of the program named by `names` that `word`
// names, as itself, as a letter of a bundle ("-rF") or abbreviated
// ("--fil"); `table` is null when none.
struct RiskyMatch {
  const RiskyOptions* table = nullptr;
  std::string option;
};
RiskyMatch FindRiskyOption(const std::vector<std::string>& names, absl::string_view word) {
  if (word.size() < 2 || word[0] != '-') return {};
  const bool long_form = absl::StartsWith(word, "--");
  const absl::string_view name = word.substr(0, word.find('='));
  for (const RiskyOptions& t : RiskyOptionTables()) {
    const bool for_program =
        std::any_of(t.programs.begin(), t.programs.end(), [&](absl::string_view p) {
          return std::find(names.begin(), names.end(), p) != names.end();
        });
    if (!for_program) continue;
    for (absl::string_view opt : t.options) {
      if (opt == name) return {&t, std::string(opt)};
      if (long_form) {
        if (name.size() > 2 && absl::StartsWith(opt, name)) return {&t, std::string(opt)};
        continue;
      }
      if (opt.size() == 2 && opt[0] == '-' &&
          name.substr(1).find(opt[1]) != absl::string_view::npos) {
        return {&t, std::string(opt)};
      }
    }
  }
  return {};
}

std::string RiskyRefusal(absl::string_view argv0, absl::string_view word, const RiskyMatch& m) {
  const std::string as =
      m.option == word ? std::string() : absl::StrCat(" (taken as '", m.option, "')");
  return absl::StrCat(QuotedWord(word), as, " of '", argv0, "' ", m.table->why);
}

// A character an option in an options list may hold.
bool OptionChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// Rule 5 for an options list. nullopt when every option passes.
std::optional<std::string> OptionsRefusal(absl::string_view argv0,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& options) {
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    const bool shaped = o.size() >= 2 && o[0] == '-' && std::all_of(o.begin(), o.end(), OptionChar);
    if (!shaped) {
      return absl::StrCat(
          "options lists ", QuotedWord(o),
          ", which is not an option word: each option starts with '-' and holds only letters, "
          "digits, '-', '_' and '.' (write \"--json\", never \"--json=VALUE\": a listed option "
          "may take any plain value)");
    }
    if (std::find(options.begin(), options.begin() + i, o) != options.begin() + i) {
      return absl::StrCat("options lists ", QuotedWord(o), " twice");
    }
    const RiskyMatch m = FindRiskyOption(names, o);
    if (m.table != nullptr) {
      return absl::StrCat("options lists ", RiskyRefusal(argv0, o, m),
                          "; listed, its value would be the agent's choice");
    }
  }
  return std::nullopt;
}

// Rule 5 for the entry's own words: an option word may not end a prefix
// entry, and a risky option needs its value written (absolute, for a file).
std::optional<std::string> EntryOptionRefusal(const std::vector<std::string>& argv,
                                              const std::vector<std::string>& names, bool exact) {
  const std::string& last = argv.back();
  if (!exact && argv.size() >= 2 && absl::StartsWith(last, "-") &&
      last.find('=') == std::string::npos) {
    const RiskyMatch m = FindRiskyOption(names, last);
    if (m.table != nullptr) {
      return absl::StrCat("ends in the option ", QuotedWord(last),
                          ": the agent's next word would be its value, and ",
                          RiskyRefusal(argv[0], last, m), "; leave it out");
    }
    return absl::StrCat(
        "ends in the option ", QuotedWord(last),
        ": the agent's next word could be that option's value (a file to read or write, as in "
        "'date -f FILE'); end the prefix with the command or subcommand and list the options "
        "it may take, e.g. { prefix = \"",
        argv[0], "\", options = [\"", last, "\"] }");
  }
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    const RiskyMatch m = FindRiskyOption(names, w);
    if (m.table == nullptr) continue;
    const size_t eq = w.find('=');
    const bool has_value = eq != std::string::npos || i + 1 < argv.size();
    const absl::string_view value = eq != std::string::npos ? absl::string_view(w).substr(eq + 1)
                                    : i + 1 < argv.size()   ? absl::string_view(argv[i + 1])
                                                            : absl::string_view();
    switch (m.table->risk) {
      case OptionRisk::kCode:
      case OptionRisk::kSecrets:
        return absl::StrCat(RiskyRefusal(argv[0], w, m), "; leave it out");
      case OptionRisk::kFile:
        if (has_value && absl::StartsWith(value, "/")) continue;
        return absl::StrCat(RiskyRefusal(argv[0], w, m),
                            "; give it an absolute path outside the workspace, or leave it out");
      case OptionRisk::kRedirect:
        if (has_value) continue;
        return absl::StrCat(RiskyRefusal(argv[0], w, m), "; write its value in the entry");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> NotPlainOperand(absl::string_view word) {
  if (word.empty()) return std::string("an empty word is not a plain operand");
  const std::string w = QuotedWord(word);
  if (word[0] == '-') return absl::StrCat(w, " starts with '-' (an option)");
  if (word[0] == '~') return absl::StrCat(w, " starts with '~' (a home directory)");
  if (word[0] == '/') return absl::StrCat(w, " is an absolute path");
  if (word.find('=') != absl::string_view::npos) {
    return absl::StrCat(w, " contains '=' (an option's value or an assignment)");
  }
  if (word.find('@') != absl::string_view::npos) {
    return absl::StrCat(w, " contains '@' (a file reference such as @FILE, or a remote)");
  }
  if (word.find(":/") != absl::string_view::npos) {
    return absl::StrCat(w, " contains ':/' (a URL or a remote path)");
  }
  for (absl::string_view part : absl::StrSplit(word, '/')) {
    if (part == "..") {
      return absl::StrCat(w, " has a '..' component (a path out of the working directory)");
    }
  }
  return std::nullopt;
}

std::optional<std::string> FollowingWordsRefusal(const std::vector<std::string>& words,
                                                 size_t first,
                                                 const std::vector<std::string>& options,
                                                 const OperandPathCheck* path_check,
                                                 size_t* failed_at) {
  size_t unused = 0;
  size_t& at = failed_at != nullptr ? *failed_at : unused;
  auto check_path = [&](size_t i, absl::string_view path) -> std::optional<std::string> {
    if (path_check == nullptr || !*path_check) return std::nullopt;
    std::optional<std::string> why = (*path_check)(path);
    if (!why) return std::nullopt;
    return absl::StrCat("argv[", i, "] ", *why);
  };
  for (size_t i = first; i < words.size(); ++i) {
    at = i;
    const absl::string_view w = words[i];
    // A listed option; it may also be the value of the option before it,
    // so the path it names is checked too.
    if (Listed(options, w)) {
      if (std::optional<std::string> why = check_path(i, w)) return why;
      continue;
    }
    if (absl::StartsWith(w, "--") && w.size() > 2) {
      const size_t eq = w.find('=');
      if (eq != absl::string_view::npos && Listed(options, w.substr(0, eq))) {
        const absl::string_view value = w.substr(eq + 1);
        if (std::optional<std::string> why = NotPlainOperand(value)) {
          return absl::StrCat("argv[", i, "] ", QuotedWord(w), ": the value of the listed option '",
                              w.substr(0, eq), "' must be a plain operand, and ", *why);
        }
        if (std::optional<std::string> why = check_path(i, value)) return why;
        continue;
      }
    }
    if (absl::StartsWith(w, "-")) {
      if (options.empty()) {
        return absl::StrCat("argv[", i, "] ", QuotedWord(w),
                            " is an option, and the matching entry lists none (only plain "
                            "operands follow it)");
      }
      return absl::StrCat("argv[", i, "] ", QuotedWord(w),
                          " is an option the matching entry does not list (it lists ",
                          absl::StrJoin(options, ", "),
                          "; options are compared exactly, never abbreviated or bundled, and a "
                          "single-dash option is written apart from its value)");
    }
    if (std::optional<std::string> why = NotPlainOperand(w)) {
      return absl::StrCat("argv[", i, "] ", *why);
    }
    if (std::optional<std::string> why = check_path(i, w)) return why;
  }
  return std::nullopt;
}

std::string NormalizeCommandName(absl::string_view name) {
  std::string s = absl::AsciiStrToLower(name);
  size_t i = s.size();
  bool saw_digit = false;
  while (i > 0 && (absl::ascii_isdigit(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '.')) {
    saw_digit = saw_digit || absl::ascii_isdigit(static_cast<unsigned char>(s[i - 1]));
    --i;
  }
  if (!saw_digit) return s;
  if (i > 0 && (s[i - 1] == '-' || s[i - 1] == '_')) --i;
  if (i == 0) return s;
  return s.substr(0, i);
}

bool IsArgvPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& argv) {
  return prefix.size() <= argv.size() && std::equal(prefix.begin(), prefix.end(), argv.begin());
}

bool EntryAdmits(const CommandPrefix& entry, const std::vector<std::string>& argv) {
  if (entry.exact) return entry.argv == argv;
  return IsArgvPrefix(entry.argv, argv) &&
         !FollowingWordsRefusal(argv, entry.argv.size(), entry.options, nullptr);
}

bool EntryCovers(const CommandPrefix& wide, const CommandPrefix& narrow) {
  if (wide.exact) return narrow.exact && wide.argv == narrow.argv;
  for (const std::string& o : narrow.options) {
    if (!Listed(wide.options, o)) return false;
  }
  return EntryAdmits(wide, narrow.argv);
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings) {
  return CheckAutoApproveEntry(entry, EntryForm::kPrefix, {}, warnings);
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    std::vector<std::string>* warnings) {
  return CheckAutoApproveEntry(entry, form, {}, warnings);
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    const std::vector<std::string>& options,
                                                    std::vector<std::string>* warnings) {
  const bool exact = form == EntryForm::kExact;
  if (exact && !options.empty()) {
    return absl::InvalidArgumentError(
        "an exact entry lists no options: it admits only its own words; write the options "
        "into the command, or make it a prefix entry { prefix = \"...\", options = [...] }");
  }
  // Rule 1.
  for (char c : entry) {
    if (!AllowedEntryChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "contains '", Printable(c),
          "': auto_approve entries are plain words (letters, digits, space, quotes and "
          "_-.,:/=+@%^); shell metacharacters, backslashes and control characters are never "
          "auto-approved"));
    }
  }
  absl::StatusOr<std::vector<std::string>> words = vocab::SplitShellWords(entry);
  if (!words.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot be split into words: ", words.status().message()));
  }
  if (words->empty() || (*words)[0].empty()) {
    return absl::InvalidArgumentError("is empty: name a command");
  }
  const std::string& argv0 = (*words)[0];
  // Rule 2, before rule 3 so that "." is named for what it is.
  const std::string lower = absl::AsciiStrToLower(argv0);
  const std::string base = NormalizeCommandName(argv0);
  for (const RefusedTable& t : RefusedTables()) {
    if (t.cls != EntryClass::kBuiltin) continue;
    for (absl::string_view name : t.names) {
      if (name == lower || name == base) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", argv0, "' is a ", ClassLabel(t.cls), ": ", t.why));
      }
    }
  }
  // Rule 3.
  const bool bare =
      std::all_of(argv0.begin(), argv0.end(), BareNameChar) && argv0[0] != '-' && argv0[0] != '.';
  if (!bare) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", argv0,
        "' is not a bare command name: argv[0] must be a name found on the host's "
        "PATH, never a path or assignment (an agent can write files under any path it names)"));
  }
  // Rule 4.
  for (const RefusedNamePrefix& p : RefusedNamePrefixes()) {
    if (absl::StartsWith(lower, p.prefix)) {
      return absl::InvalidArgumentError(absl::StrCat("'", argv0, "' is a ",
                                                     ClassLabel(EntryClass::kRunner), ": ", p.why,
                                                     ClassConsequence(EntryClass::kRunner)));
    }
  }
  const std::vector<ClassMatch> classes = FindClasses(argv0);
  bool path_class = false;
  for (size_t i = 0; i < classes.size(); ++i) {
    const ClassMatch& m = classes[i];
    if (ExactEntryLifts(m.table->cls)) {
      path_class = true;
      if (exact) continue;
    }
    std::string why = Refusal(argv0, m);
    if (i + 1 < classes.size() && classes[i + 1].table->cls != m.table->cls) {
      absl::StrAppend(&why, "; it is also a ", ClassLabel(classes[i + 1].table->cls), ": ",
                      classes[i + 1].table->why);
    }
    return absl::InvalidArgumentError(why);
  }
  if (path_class) {
    if (std::optional<std::string> rel = RelativeArgument(*words)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", *rel, "' is not an absolute path: in an exact entry of a ",
          ClassLabel(classes.front().table->cls),
          " every argument that is not an option must be an absolute path or an http(s) URL, "
          "and so must an option's value after '=' (a relative path resolves in the workspace "
          "the agent can write, the broker's working directory); write option values attached "
          "to their option (-n5, --lines=5)"));
    }
  }
  // Rule 5.
  const std::vector<std::string> names = LookupNames(argv0);
  if (std::optional<std::string> why = EntryOptionRefusal(*words, names, exact)) {
    return absl::InvalidArgumentError(*why);
  }
  if (std::optional<std::string> why = OptionsRefusal(argv0, names, options)) {
    return absl::InvalidArgumentError(*why);
  }
  // Rule 6.
  for (const SubcommandTool& tool : SubcommandTools()) {
    if (tool.name != lower) continue;
    if (words->size() < 2 || (*words)[1].empty() || (*words)[1][0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("'", argv0,
                       "' alone is too broad: name a subcommand that runs no local code "
                       "(for example \"",
                       argv0, " <service> <read-only-action>\")"));
    }
    const std::string sub = absl::AsciiStrToLower((*words)[1]);
    for (absl::string_view refused : tool.refused_subcommands) {
      if (sub == refused) {
        return absl::InvalidArgumentError(absl::StrCat("'", argv0, " ", (*words)[1],
                                                       "' can install or configure code that ",
                                                       argv0, " later runs on the host"));
      }
    }
  }
  if (warnings != nullptr && !exact && words->size() == 1) {
    warnings->push_back(absl::StrCat("\"", std::string(entry), "\" approves '", argv0,
                                     "' with any arguments; a longer prefix is safer"));
  }
  return CommandPrefix{std::string(entry), *std::move(words), exact, options};
}

}  // namespace lazaret::vocab
