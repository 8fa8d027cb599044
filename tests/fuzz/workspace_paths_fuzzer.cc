// libFuzzer target for the decisions on paths the agent and the host's
// config choose (lazaret_workspace_catalogue): MatchCatalogue on a
// relative path, PathsNamedInText on an acted-on file's text, and
// PathsNamedByGitConfig on config entries. The `lazaret` CLI runs all
// three on bytes an earlier session's agent may have written. Properties:
// nothing crashes; a catalogue match is a component prefix of the path and
// the outermost directory instance; every text-named path is a clean
// relative path, distinct, within the bound; every config-named path is
// clean, relative, inside the workspace, sorted and unique.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "services/common/workspace/catalogue.h"
#include "services/common/workspace/named_paths.h"

namespace {

using lazaret::workspace::LexicallyNormal;

void Check(bool ok) {
  if (!ok) abort();
}

// A relative path with no empty, "." or ".." component.
bool IsCleanRelative(absl::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  for (absl::string_view c : absl::StrSplit(p, '/')) {
    if (c.empty() || c == "." || c == "..") return false;
  }
  return true;
}

void CatalogueProperties(const std::string& input) {
  bool climbed = false;
  const std::string rel = LexicallyNormal(input, &climbed);
  if (climbed || rel.empty() || rel.front() == '/') return;
  const std::optional<lazaret::workspace::CatalogueMatch> m =
      lazaret::workspace::MatchCatalogue(rel);
  if (!m.has_value()) return;
  Check(m->entry != nullptr);
  Check(rel == m->rel || (rel.size() > m->rel.size() &&
                          rel.compare(0, m->rel.size(), m->rel) == 0 && rel[m->rel.size()] == '/'));
  Check(rel == m->rel || m->entry->directory);
  const auto again = lazaret::workspace::MatchCatalogue(m->rel);
  Check(again.has_value() && again->rel == m->rel);
  // No proper prefix is a directory instance of its own.
  for (size_t slash = m->rel.find('/'); slash != std::string::npos;
       slash = m->rel.find('/', slash + 1)) {
    const std::string prefix = m->rel.substr(0, slash);
    const auto outer = lazaret::workspace::MatchCatalogue(prefix);
    Check(!(outer.has_value() && outer->rel == prefix && outer->entry->directory));
  }
}

void TextProperties(const std::string& input) {
  const std::vector<std::string> named = lazaret::workspace::PathsNamedInText(input);
  Check(named.size() <= lazaret::workspace::kMaxNamedTextTokens);
  std::set<std::string> seen;
  for (const std::string& n : named) {
    Check(IsCleanRelative(n));
    Check(seen.insert(n).second);
  }
}

// Entries as lines of "key\x01value\x01origin".
void GitConfigProperties(const std::string& input) {
  std::vector<lazaret::workspace::GitConfigEntry> entries;
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\x01', 2));
    f.resize(3);
    entries.push_back({f[0], f[1], f[2]});
  }
  for (const char* top : {"/w/s", "/w", ""}) {
    const std::vector<lazaret::workspace::NamedPath> named =
        lazaret::workspace::PathsNamedByGitConfig(entries, top, "/w/s", "/w");
    std::string last;
    for (const auto& n : named) {
      Check(IsCleanRelative(n.rel));
      Check(LexicallyNormal("/w/s/" + n.rel) == "/w/s/" + n.rel);
      Check(last.empty() || last < n.rel);
      last = n.rel;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  CatalogueProperties(input);
  TextProperties(input);
  GitConfigProperties(input);
  return 0;
}
