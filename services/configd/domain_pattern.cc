#include "services/configd/domain_pattern.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::config {
namespace {

std::string Quoted(absl::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\x", absl::string_view("0123456789abcdef").substr(c >> 4, 1),
                      absl::string_view("0123456789abcdef").substr(c & 15, 1));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

bool IsLdh(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-'; }

}  // namespace

absl::StatusOr<std::string> CheckDomainPattern(absl::string_view text) {
  const std::string q = Quoted(text);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(q, " is not a valid name: ", why));
  };
  if (text.empty()) return absl::InvalidArgumentError("empty name");
  if (std::any_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    return bad("it is not ASCII; write an internationalised name in its \"xn--\" form");
  }
  if (text.find(':') != absl::string_view::npos) {
    return bad(
        "':' is not part of a name (no ports; an IPv6 address belongs in allow_egress "
        "as a CIDR)");
  }
  std::string name = absl::AsciiStrToLower(text);
  if (absl::EndsWith(name, ".")) name.pop_back();
  if (name.empty()) return bad("it has no labels");
  if (name.size() > kMaxDomainLength) {
    return bad(absl::StrCat("it is longer than ", kMaxDomainLength, " characters"));
  }
  const bool wildcard = absl::StartsWith(name, "*.");
  const absl::string_view base = absl::string_view(name).substr(wildcard ? 2 : 0);
  if (name == "*") return bad("\"*\" alone would match every name");
  const std::vector<absl::string_view> labels = absl::StrSplit(base, '.');
  for (absl::string_view l : labels) {
    if (l.empty()) return bad("it has an empty label (\"..\", or a leading dot)");
    if (l.size() > kMaxLabelLength) {
      return bad(absl::StrCat("the label ", Quoted(l), " is longer than ", kMaxLabelLength,
                              " characters"));
    }
    if (l.find('*') != absl::string_view::npos) {
      return bad("'*' is only allowed as the whole first label, as in \"*.example.com\"");
    }
    if (l.find('_') != absl::string_view::npos) {
      return bad("'_' is not allowed in a host name");
    }
    if (!std::all_of(l.begin(), l.end(), IsLdh)) {
      return bad("a label holds only letters, digits and '-'");
    }
    if (l.front() == '-' || l.back() == '-') {
      return bad(absl::StrCat("the label ", Quoted(l), " starts or ends with '-'"));
    }
  }
  if (labels.size() < 2) {
    return bad(wildcard ? "a wildcard needs a name of at least two labels below it "
                          "(\"*.com\" would open a whole top-level domain)"
                        : "a name has at least two labels, as in \"example.com\"");
  }
  const absl::string_view last = labels.back();
  if (std::all_of(last.begin(), last.end(),
                  [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return bad("it ends in a numeric label; addresses belong in allow_egress as CIDRs");
  }
  return name;
}

bool DomainCovers(absl::string_view pattern, absl::string_view name) {
  if (pattern == name) return true;
  if (!absl::StartsWith(pattern, "*.")) return false;
  const absl::string_view base = pattern.substr(2);
  return name.size() > base.size() + 1 && absl::EndsWith(name, base) &&
         name[name.size() - base.size() - 1] == '.';
}

}  // namespace lazaret::config
