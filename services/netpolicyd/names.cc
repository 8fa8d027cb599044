#include "services/netpolicyd/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace lazaret::netpolicyd {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxName = 253;

bool PlainLabel(absl::string_view label) {
  if (label.empty() || label.size() > kMaxLabel) return false;
  for (char c : label) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> NormalizePattern(absl::string_view pattern) {
  std::string p = absl::AsciiStrToLower(pattern);
  if (!p.empty() && p.back() == '.') p.pop_back();
  if (p.empty() || p.size() > kMaxName) {
    return absl::InvalidArgumentError(
        absl::StrCat("name pattern '", pattern, "': empty or longer than 253 characters"));
  }
  std::vector<absl::string_view> labels = absl::StrSplit(p, '.');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i == 0 && labels[i] == "*" && labels.size() > 1) continue;
    if (!PlainLabel(labels[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "name pattern '", pattern,
          "': each label is 1-63 letters, digits, '-' or '_', and '*' only as the whole first "
          "label of a longer name"));
    }
  }
  return p;
}

std::string PlainName(const std::vector<std::string>& labels) {
  size_t total = 0;
  for (const auto& label : labels) {
    if (!PlainLabel(label)) return "";
    total += label.size() + 1;
  }
  if (total == 0 || total - 1 > kMaxName) return "";
  return absl::AsciiStrToLower(absl::StrJoin(labels, "."));
}

bool NameMatches(absl::string_view pattern, absl::string_view name) {
  absl::ConsumeSuffix(&pattern, ".");
  absl::ConsumeSuffix(&name, ".");
  if (name.empty() || pattern.empty()) return false;
  if (absl::StartsWith(pattern, "*.")) {
    absl::string_view suffix = pattern.substr(1);  // ".example.com"
    return name.size() > suffix.size() && absl::EndsWithIgnoreCase(name, suffix);
  }
  return absl::EqualsIgnoreCase(pattern, name);
}

}  // namespace lazaret::netpolicyd
