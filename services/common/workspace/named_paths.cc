#include "services/common/workspace/named_paths.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace lazaret::workspace {
namespace {

// Bytes that end a token in a command or a config text: whitespace, quotes,
// and the punctuation of JSON, TOML, YAML and shell that never belongs to a
// path worth naming.
bool IsSeparator(char c, bool colon) {
  if (c == ':') return colon;
  switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '\v':
    case '\f':
    case '"':
    case '\'':
    case '`':
    case '=':
    case ',':
    case ';':
    case '(':
    case ')':
    case '[':
    case ']':
    case '{':
    case '}':
    case '|':
    case '&':
    case '<':
    case '>':
    case '\\':
    case '\0':
      return true;
    default:
      return false;
  }
}

// Variables that stand for the project directory in the hooks, tasks and
// MCP lists of the tools in the catalogue; a path after one is relative to
// the workspace root. Written with or without quotes around the variable,
// as the tools' own documentation does ("\"$CLAUDE_PROJECT_DIR\"/x.sh").
constexpr absl::string_view kRootVariables[] = {
    "${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${workspaceFolder}", "${workspaceRoot}",
    "${PWD}",                "$PWD",                "${GIT_WORK_TREE}",    "$GIT_WORK_TREE",
    "$(pwd)",                "`pwd`",
};

// The length of a root variable at the start of `text` together with the
// quotes and backslashes that close it and the '/' after them; 0 when
// `text` does not start with one. "$PWDX/" is not "$PWD/".
size_t RootPrefixLength(absl::string_view text) {
  for (absl::string_view v : kRootVariables) {
    if (!absl::StartsWith(text, v)) continue;
    size_t i = v.size();
    while (i < text.size() && (text[i] == '"' || text[i] == '\\' || text[i] == '\'')) ++i;
    if (i < text.size() && text[i] == '/') return i + 1;
  }
  return 0;
}

// `text` with every project-directory prefix replaced by a space, so the
// path after it starts a token of its own (the prefixes hold '{' and '}',
// which are separators).
std::string WithoutRootPrefixes(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t prefix =
        (text[i] == '$' || text[i] == '`') ? RootPrefixLength(text.substr(i)) : 0;
    if (prefix > 0) {
      out.push_back(' ');
      i += prefix;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// The tokens of `text`. `colon`: ':' separates too (in JSON, YAML and TOML
// it does; in a git config value it is part of a URL or "host:path", which
// must stay one word so it is recognised and skipped).
std::vector<absl::string_view> Tokens(absl::string_view text, bool colon) {
  std::vector<absl::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSeparator(text[i], colon)) ++i;
    const size_t start = i;
    while (i < text.size() && !IsSeparator(text[i], colon)) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// "dir/file" -> "dir"; "/file" -> "/"; "file" -> "".
std::string DirName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// The variable of a key: its last dot-separated part ("core.hookspath" ->
// "hookspath"; "includeif.gitdir:/a/b.path" -> "path").
absl::string_view Variable(absl::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == absl::string_view::npos ? key : key.substr(dot + 1);
}

bool IsIncludeKey(absl::string_view key) {
  return key == "include.path" ||
         (absl::StartsWith(key, "includeif.") && absl::EndsWith(key, ".path"));
}

// Keys whose whole value git reads as a pathname (git-config(1) type
// "pathname", and the variables named like one: hooksPath, excludesFile,
// attributesFile, template, templateDir, and any future "...path",
// "...file", "...dir").
bool IsPathKey(absl::string_view key) {
  const std::string var = absl::AsciiStrToLower(Variable(key));
  return absl::EndsWith(var, "path") || absl::EndsWith(var, "file") || absl::EndsWith(var, "dir") ||
         var == "template";
}

// Keys that name a directory rather than a file.
bool IsDirectoryKey(absl::string_view key) {
  if (IsIncludeKey(key)) return false;
  const std::string var = absl::AsciiStrToLower(Variable(key));
  return absl::EndsWith(var, "hookspath") || absl::EndsWith(var, "dir");
}

// Whether a word of a value is data that is never a local path even though
// it holds a '/': a URL, an scp-like "host:path", a refspec or ref name, an
// option, or a word the shell would still expand.
bool IsNeverAPath(absl::string_view word) {
  return absl::StartsWith(word, "refs/") || absl::StartsWith(word, "+") ||
         absl::StrContains(word, ':') || absl::StrContains(word, '%') ||
         absl::StartsWith(word, "-") || absl::StrContains(word, "$") ||
         absl::StrContains(word, "*");
}

// Extensions of scripts and programs an interpreter named in a command
// value runs from the working directory ("python3 tools/x.py" names a
// path; "python3 x.py" does too, without a '/').
constexpr absl::string_view kScriptExtensions[] = {
    ".sh",  ".bash", ".zsh", ".fish", ".py",  ".pl",  ".rb",  ".js",  ".cjs", ".mjs", ".ts",
    ".lua", ".php",  ".tcl", ".awk",  ".jar", ".exe", ".bat", ".cmd", ".ps1", ".sed",
};

bool IsScriptName(absl::string_view word) {
  for (absl::string_view ext : kScriptExtensions) {
    if (word.size() > ext.size() && absl::EndsWith(word, ext)) return true;
  }
  return false;
}

// Keys whose values are prose no program runs or opens: a branch's
// description, the author's name and address. Everything else is read as a
// possible command.
bool IsFreeText(absl::string_view key) {
  return absl::EndsWith(key, ".description") || key == "user.name" || key == "user.email" ||
         key == "author.name" || key == "author.email" || key == "committer.name" ||
         key == "committer.email";
}

// The hooks githooks(5) lists: named when core.hooksPath is the workspace
// root itself.
constexpr absl::string_view kHookNames[] = {
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
};

class Collector {
 public:
  Collector(const std::string& workspace, const std::string& home)
      : workspace_(LexicallyNormal(workspace)), home_(home) {}

  // Resolves `word` against `base` (or `home_` for "~"), and records it
  // when it lies strictly inside the workspace.
  void Add(absl::string_view word, const std::string& base, const std::string& key,
           bool directory) {
    std::string abs;
    if (word == "~" || absl::StartsWith(word, "~/")) {
      if (home_.empty()) return;
      abs = home_ + std::string(word.substr(1));
    } else if (absl::StartsWith(word, "/")) {
      abs = std::string(word);
    } else if (absl::StartsWith(word, "~")) {
      return;  // ~user: another user's home is not the workspace's business
    } else {
      if (base.empty() || base[0] != '/') return;
      abs = base + "/" + std::string(word);
    }
    bool climbed = false;
    const std::string normal = LexicallyNormal(abs, &climbed);
    if (climbed || workspace_.empty()) return;
    const std::string prefix = workspace_ == "/" ? "/" : workspace_ + "/";
    if (normal == workspace_) {
      // The root itself as a hooks directory: every hook is a file in it.
      if (directory && absl::EndsWith(absl::AsciiStrToLower(key), "hookspath")) {
        for (absl::string_view h : kHookNames) Record(std::string(h), key, false);
      }
      return;
    }
    if (!absl::StartsWith(normal, prefix)) return;
    Record(normal.substr(prefix.size()), key, directory);
  }

  std::vector<NamedPath> Take() {
    std::vector<NamedPath> out;
    out.reserve(found_.size());
    for (auto& [rel, np] : found_) out.push_back(std::move(np));
    return out;
  }

 private:
  void Record(std::string rel, const std::string& key, bool directory) {
    auto it = found_.find(rel);
    if (it == found_.end()) {
      found_.emplace(rel, NamedPath{rel, key, directory});
    } else if (directory && !it->second.directory) {
      it->second.directory = true;
    }
  }

  const std::string workspace_;
  const std::string home_;
  std::map<std::string, NamedPath> found_;
};

}  // namespace

std::string LexicallyNormal(absl::string_view path, bool* climbed_out) {
  if (climbed_out != nullptr) *climbed_out = false;
  const bool absolute = absl::StartsWith(path, "/");
  std::vector<absl::string_view> parts;
  for (absl::string_view c : absl::StrSplit(path, '/')) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      } else if (!absolute && climbed_out != nullptr) {
        *climbed_out = true;
      }
      // "/.." is "/": the kernel resolves it so.
      continue;
    }
    parts.push_back(c);
  }
  const std::string joined = absl::StrJoin(parts, "/");
  return absolute ? "/" + joined : joined;
}

std::vector<NamedPath> PathsNamedByGitConfig(const std::vector<GitConfigEntry>& entries,
                                             const std::string& worktree_top,
                                             const std::string& workspace,
                                             const std::string& home) {
  Collector collector(workspace, home);
  // Git resolves relative paths and runs commands from the top of the
  // working tree; outside one (a plain folder) from where it was started,
  // which for Lazaret is the workspace.
  const std::string top = worktree_top.empty() ? workspace : worktree_top;
  for (const GitConfigEntry& e : entries) {
    const std::string key = absl::AsciiStrToLower(e.key);
    if (IsIncludeKey(key)) {
      // include.path: relative to the directory of the file that includes.
      absl::string_view origin = e.origin;
      if (!absl::ConsumePrefix(&origin, "file:")) continue;
      std::string dir = DirName(origin);
      if (!dir.empty() && dir[0] != '/') dir = top + "/" + dir;
      collector.Add(absl::StripAsciiWhitespace(e.value), dir.empty() ? top : dir, e.key, false);
      continue;
    }
    if (IsPathKey(key)) {
      const absl::string_view value = absl::StripAsciiWhitespace(e.value);
      if (!value.empty()) collector.Add(value, top, e.key, IsDirectoryKey(key));
    }
    if (IsFreeText(key)) continue;
    // Every value as a command: "!sh ./x", "./tools/clean.sh %f", "sh -c
    // 'exec .githooks/x'", "python3 conv.py" - each word that looks like a
    // path (a '/', a leading '.', a script's extension) is one git, or the
    // shell or interpreter it starts, may run or read.
    absl::string_view value = e.value;
    if (value.size() > kMaxNamedTextBytes) value = value.substr(0, kMaxNamedTextBytes);
    bool first = true;
    for (absl::string_view word : Tokens(value, /*colon=*/false)) {
      while (absl::ConsumePrefix(&word, "!")) {
      }
      // The first word is the program: without a '/' the shell (or git,
      // as "git credential-<name>") finds it on PATH, never in the tree;
      // a later word with a script's extension is a file an interpreter
      // opens from the working directory.
      const bool argument = !first;
      first = false;
      if (word.empty() || IsNeverAPath(word)) continue;
      if (!absl::StrContains(word, '/') && word[0] != '.' && !(argument && IsScriptName(word))) {
        continue;
      }
      collector.Add(word, top, e.key, false);
    }
  }
  return collector.Take();
}

std::vector<std::string> PathsNamedInText(absl::string_view text) {
  if (text.size() > kMaxNamedTextBytes) text = text.substr(0, kMaxNamedTextBytes);
  const std::string cleaned = WithoutRootPrefixes(text);
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (absl::string_view token : Tokens(cleaned, /*colon=*/true)) {
    if (out.size() >= kMaxNamedTextTokens) break;
    // A script is named with a directory or an extension; a bare word
    // ("bash", "command") is a program found on PATH, not in the tree.
    if (!absl::StrContains(token, '/') && !absl::StrContains(token, '.')) continue;
    if (token[0] == '/' || token[0] == '~' || absl::StrContains(token, '$') ||
        absl::StrContains(token, '*') || absl::StrContains(token, '?')) {
      continue;
    }
    bool climbed = false;
    std::string rel = LexicallyNormal(token, &climbed);
    if (climbed || rel.empty()) continue;
    // ".." anywhere in the token: the tree's layout is the agent's, so a
    // path that leaves and re-enters a directory is not trusted to mean
    // what it says lexically.
    bool dotdot = false;
    for (absl::string_view c : absl::StrSplit(token, '/')) dotdot = dotdot || c == "..";
    if (dotdot) continue;
    if (seen.insert(rel).second) out.push_back(std::move(rel));
  }
  return out;
}

}  // namespace lazaret::workspace
