#include "services/sessiond/gitshadow/refs.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::cli::gitshadow {
namespace {

constexpr size_t kMaxRefNameLength = 1000;
constexpr size_t kMaxComponentLength = 200;

bool IsForbiddenRefChar(unsigned char c) {
  if (c < 0x21 || c >= 0x7f) return true;  // control, space, DEL, non-ASCII
  switch (c) {
    case '~':
    case '^':
    case ':':
    case '?':
    case '*':
    case '[':
    case '\\':
      return true;
    default:
      return false;
  }
}

}  // namespace

bool IsValidRefComponent(const std::string& component) {
  if (component.empty() || component.size() > kMaxComponentLength) return false;
  if (component[0] == '.') return false;
  if (absl::EndsWith(component, ".lock")) return false;
  for (size_t i = 0; i < component.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(component[i]);
    if (IsForbiddenRefChar(c) || c == '/') return false;
    if (c == '.' && i + 1 < component.size() && component[i + 1] == '.') return false;
    if (c == '@' && i + 1 < component.size() && component[i + 1] == '{') return false;
  }
  return true;
}

bool IsValidRefName(const std::string& refname) {
  if (refname.empty() || refname.size() > kMaxRefNameLength) return false;
  if (refname == "@" || refname.back() == '.' || refname.back() == '/') return false;
  if (refname.find('/') == std::string::npos) return false;
  for (absl::string_view part : absl::StrSplit(refname, '/')) {
    if (!IsValidRefComponent(std::string(part))) return false;
  }
  return true;
}

absl::StatusOr<CheckedAgentBranch> CheckAgentBranch(const std::string& profile,
                                                    const std::string& branch) {
  std::string short_name;
  if (branch.empty()) {
    short_name = absl::StrCat("lazaret/agent-", profile);
  } else if (absl::StartsWith(branch, "lazaret/")) {
    short_name = branch;
  } else {
    short_name = absl::StrCat("lazaret/", branch);
  }
  const std::string refname = absl::StrCat("refs/heads/", short_name);
  if (short_name.size() <= sizeof("lazaret/") - 1 || !IsValidRefName(refname)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "agent branch '", short_name,
        "' is not a valid git branch name (see git check-ref-format; Lazaret also allows "
        "only printable ASCII)",
        branch.empty() ? absl::StrCat(": the profile name '", profile, "' cannot be used in it")
                       : ""));
  }
  return CheckedAgentBranch(std::move(short_name));
}

std::string ProtectedEntry(const std::string& ref, const std::string& own) {
  const std::vector<absl::string_view> r = absl::StrSplit(ref, '/');
  const std::vector<absl::string_view> o = absl::StrSplit(own, '/');
  size_t i = 0;
  while (i < r.size() && i < o.size() && r[i] == o[i]) ++i;
  if (i == r.size() || i == o.size()) return "";
  return absl::StrJoin(r.begin(), r.begin() + i + 1, "/");
}

bool IsAtOrBelow(const std::string& ref, const std::string& entry) {
  return !entry.empty() && absl::StartsWith(ref, entry) &&
         (ref.size() == entry.size() || ref[entry.size()] == '/');
}

std::optional<size_t> ObjectIdLength(const std::string& object_format) {
  if (object_format == "sha1") return 40;
  if (object_format == "sha256") return 64;
  return std::nullopt;
}

bool IsObjectId(const std::string& s, size_t length) {
  if (s.size() != length) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<std::string> ParseLooseRef(const std::string& contents, size_t length) {
  std::string oid = contents;
  if (!oid.empty() && oid.back() == '\n') oid.pop_back();
  if (!IsObjectId(oid, length)) return std::nullopt;
  if (oid.find_first_not_of('0') == std::string::npos) return std::nullopt;  // the null id
  return oid;
}

RefMap PackedAgentRefs(const std::string& text, size_t hex_length) {
  RefMap refs;
  const absl::string_view prefix(kAgentRefPrefix);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() < hex_length + 2 || line[hex_length] != ' ') continue;
    const std::string oid(line.substr(0, hex_length));
    const std::string refname(line.substr(hex_length + 1));
    if (!absl::StartsWith(refname, prefix) || !IsValidRefName(refname)) continue;
    if (!ParseLooseRef(oid, hex_length)) continue;
    refs[refname.substr(prefix.size())] = oid;
  }
  return refs;
}

}  // namespace lazaret::cli::gitshadow
