#include "clients/lazaret/doctor/host_facts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/file.h"

namespace lazaret::cli::doctor {

std::string FirstLine(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s.substr(0, s.find('\n'))));
}

bool GitAtLeast(const std::string& version_line, int want_major, int want_minor) {
  std::vector<std::string> words = absl::StrSplit(version_line, ' ');
  if (words.size() < 3) return false;
  std::vector<std::string> parts = absl::StrSplit(words[2], '.');
  int ma = 0, mi = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &ma) || !absl::SimpleAtoi(parts[1], &mi)) {
    return false;
  }
  return ma > want_major || (ma == want_major && mi >= want_minor);
}

int RunscReleaseDate(const std::string& version_line) {
  for (const std::string marker : {"~", "release-"}) {
    const size_t at = version_line.find(marker);
    if (at == std::string::npos) continue;
    const std::string digits = version_line.substr(at + marker.size(), 8);
    int date = 0;
    if (digits.size() == 8 && absl::SimpleAtoi(digits, &date) && date >= 20000101) return date;
  }
  return 0;
}

bool HasSubordinateRange(absl::string_view text, const std::string& name, uid_t uid) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ':');
    if (f.size() != 3) continue;
    uint64_t count = 0;
    if ((f[0] == name || f[0] == absl::StrCat(uid)) && absl::SimpleAtoi(f[2], &count) &&
        count >= 65536) {
      return true;
    }
  }
  return false;
}

namespace {

constexpr size_t kMaxExtraCas = 1000;
constexpr size_t kMaxCaName = 64;

// A host file name, shown in the user's terminal: extension off, bounded,
// escaped.
std::string CaName(std::string file) {
  for (const char* ext : {".pem", ".crt"}) {
    if (absl::EndsWith(file, ext)) file.resize(file.size() - std::strlen(ext));
  }
  if (file.size() > kMaxCaName) file = file.substr(0, kMaxCaName) + "...";
  return absl::CHexEscape(file);
}

// The names in `dir` (not "." or ".."); a missing or unreadable directory
// has none.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> HostExtraCas(const CaStoreLayout& layout) {
  std::set<std::string> found;
  for (const std::string& name : Names(layout.certs_dir)) {
    const std::string path = layout.certs_dir + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      absl::StatusOr<std::string> target = fs::ReadLinkAt(AT_FDCWD, path, path);
      if (!target.ok() || target->empty() || (*target)[0] != '/') continue;
      if (absl::StartsWith(*target, layout.public_dir)) continue;
      found.insert(CaName(name));
    } else if (S_ISREG(st.st_mode) && name != "ca-certificates.crt" &&
               (absl::EndsWith(name, ".pem") || absl::EndsWith(name, ".crt"))) {
      found.insert(CaName(name));
    }
    if (found.size() >= kMaxExtraCas) break;
  }
  for (const std::string& name : Names(layout.anchors_dir)) {
    struct stat st {};
    if (found.size() >= kMaxExtraCas) break;
    if (stat((layout.anchors_dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      found.insert(CaName(name));
    }
  }
  return std::vector<std::string>(found.begin(), found.end());
}

}  // namespace lazaret::cli::doctor
