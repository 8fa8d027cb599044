#include "services/sessiond/session/terminfo.h"

#include <sys/stat.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace lazaret::cli::session {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

TerminfoSearch TerminfoSearchFromEnvironment() {
  TerminfoSearch s;
  s.terminfo = Env("TERMINFO");
  s.home = Env("HOME");
  s.terminfo_dirs = Env("TERMINFO_DIRS");
  return s;
}

bool IsValidTermName(const std::string& term) {
  if (term.empty() || term.size() > 64 || term[0] == '.') return false;
  for (char c : term) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> TerminfoDirectories(const TerminfoSearch& search) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && d[0] == '/') dirs.push_back(d);
  };
  add(search.terminfo);
  if (!search.home.empty()) add(absl::StrCat(search.home, "/.terminfo"));
  if (!search.terminfo_dirs.empty()) {
    for (absl::string_view d : absl::StrSplit(search.terminfo_dirs, ':')) {
      if (d.empty()) {
        // An empty element stands for the compiled-in system list.
        for (const auto& s : search.system_dirs) add(s);
      } else {
        add(std::string(d));
      }
    }
  }
  for (const auto& s : search.system_dirs) add(s);
  return dirs;
}

std::optional<TerminfoEntry> FindTerminfo(const std::string& term, const TerminfoSearch& search) {
  if (!IsValidTermName(term)) return std::nullopt;
  const std::string letter(1, term[0]);
  const std::string hex = absl::StrFormat("%02x", static_cast<unsigned char>(term[0]));
  for (const std::string& dir : TerminfoDirectories(search)) {
    for (const std::string& sub : {letter, hex}) {
      const std::string candidate = absl::StrCat(dir, "/", sub, "/", term);
      if (!IsRegularFile(candidate)) continue;
      char resolved[PATH_MAX];
      if (realpath(candidate.c_str(), resolved) == nullptr) continue;
      if (!IsRegularFile(resolved)) continue;
      return TerminfoEntry{term, resolved,
                           absl::StrCat(kSandboxTerminfoDir, "/", letter, "/", term)};
    }
  }
  return std::nullopt;
}

}  // namespace lazaret::cli::session
