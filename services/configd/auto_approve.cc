#include "services/configd/auto_approve.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/configd/auto_approve_classes.h"
#include "services/configd/shell_words.h"

namespace lazaret::config {
namespace {

// Rule 5: CLIs accepted only with a named subcommand, and never with these.
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

}  // namespace

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
  return entry.exact ? entry.argv == argv : IsArgvPrefix(entry.argv, argv);
}

bool EntryCovers(const CommandPrefix& wide, const CommandPrefix& narrow) {
  if (wide.exact) return narrow.exact && wide.argv == narrow.argv;
  return IsArgvPrefix(wide.argv, narrow.argv);
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings) {
  return CheckAutoApproveEntry(entry, EntryForm::kPrefix, warnings);
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    std::vector<std::string>* warnings) {
  const bool exact = form == EntryForm::kExact;
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
  absl::StatusOr<std::vector<std::string>> words = SplitShellWords(entry);
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
  return CommandPrefix{std::string(entry), *std::move(words), exact};
}

}  // namespace lazaret::config
