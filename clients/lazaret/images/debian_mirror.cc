#include "clients/lazaret/images/debian_mirror.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/fs/file.h"

namespace lazaret::cli::images {
namespace {

// A Debian archive URI the sandbox image can be built from.
bool UsableMirror(const std::string& uri, const std::vector<std::string>& suites) {
  if (!absl::StartsWith(uri, "http://") && !absl::StartsWith(uri, "https://")) return false;
  if (absl::StrContains(uri, "security") || absl::StrContains(uri, "ubuntu")) return false;
  for (const auto& s : suites) {
    if (!s.empty() && s.find('-') == std::string::npos && s.find('/') == std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string TrimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// "deb [opts] URI SUITE COMP..." lines.
std::string MirrorFromListFile(const std::string& text) {
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    std::string line(absl::StripAsciiWhitespace(raw.substr(0, raw.find('#'))));
    if (!absl::StartsWith(line, "deb ") && !absl::StartsWith(line, "deb\t")) continue;
    line = line.substr(4);
    if (auto lb = line.find('['); lb != std::string::npos && lb < 2) {
      const auto rb = line.find(']');
      if (rb == std::string::npos) continue;
      line = line.substr(rb + 1);
    }
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() < 2) continue;
    if (UsableMirror(f[0], {f[1]})) return TrimSlash(f[0]);
  }
  return "";
}

// deb822 paragraphs with Types/URIs/Suites.
std::string MirrorFromSourcesFile(const std::string& text) {
  for (absl::string_view para : absl::StrSplit(text, "\n\n")) {
    std::vector<std::string> types, uris, suites;
    bool enabled = true;
    for (absl::string_view raw : absl::StrSplit(para, '\n')) {
      if (absl::StartsWith(raw, "#")) continue;
      const auto colon = raw.find(':');
      if (colon == absl::string_view::npos) continue;
      const std::string key =
          absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw.substr(0, colon)));
      const std::string value(absl::StripAsciiWhitespace(raw.substr(colon + 1)));
      std::vector<std::string> words =
          absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (key == "types") types = words;
      if (key == "uris") uris = words;
      if (key == "suites") suites = words;
      if (key == "enabled" && absl::AsciiStrToLower(value) == "no") enabled = false;
    }
    if (!enabled || std::find(types.begin(), types.end(), "deb") == types.end()) continue;
    for (const auto& u : uris) {
      if (UsableMirror(u, suites)) return TrimSlash(u);
    }
  }
  return "";
}

}  // namespace

std::string DetectDebianMirror(const std::string& apt_etc_dir) {
  if (auto t = fs::ReadHostFile(absl::StrCat(apt_etc_dir, "/sources.list")); t.ok()) {
    if (std::string m = MirrorFromListFile(*t); !m.empty()) return m;
  }
  const std::string d = absl::StrCat(apt_etc_dir, "/sources.list.d");
  std::vector<std::string> names;
  if (DIR* dir = opendir(d.c_str()); dir != nullptr) {
    while (dirent* e = readdir(dir)) names.emplace_back(e->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    auto t = fs::ReadHostFile(absl::StrCat(d, "/", n));
    if (!t.ok()) continue;
    std::string m;
    if (absl::EndsWith(n, ".list")) m = MirrorFromListFile(*t);
    if (absl::EndsWith(n, ".sources")) m = MirrorFromSourcesFile(*t);
    if (!m.empty()) return m;
  }
  return kDefaultDebianMirror;
}

std::string MirrorFor(const std::string& override_mirror) {
  if (!override_mirror.empty()) return TrimSlash(override_mirror);
  if (const char* m = std::getenv(kMirrorEnv); m != nullptr && *m != '\0') return TrimSlash(m);
  return DetectDebianMirror();
}

}  // namespace lazaret::cli::images
