#include "services/vocab/domain_pattern.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/vocab/escape.h"

namespace lazaret::vocab {
namespace {

bool IsLdh(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-'; }

// A label of the wider DNS syntax: letters, digits, '-' and '_'.
bool IsDnsLabel(absl::string_view label) {
  if (label.empty() || label.size() > kMaxLabelLength) return false;
  return std::all_of(label.begin(), label.end(), [](char c) { return IsLdh(c) || c == '_'; });
}

}  // namespace

absl::StatusOr<std::string> CheckDomainPattern(absl::string_view text) {
  const std::string q = QuotedForTerminal(text);
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
      return bad(absl::StrCat("the label ", QuotedForTerminal(l), " is longer than ",
                              kMaxLabelLength, " characters"));
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
      return bad(absl::StrCat("the label ", QuotedForTerminal(l), " starts or ends with '-'"));
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

absl::StatusOr<std::string> NormalizeDnsPattern(absl::string_view pattern) {
  std::string p = absl::AsciiStrToLower(pattern);
  if (!p.empty() && p.back() == '.') p.pop_back();
  if (p.empty() || p.size() > kMaxDomainLength) {
    return absl::InvalidArgumentError(absl::StrCat("name pattern ", QuotedForTerminal(pattern),
                                                   ": empty or longer than 253 characters"));
  }
  const std::vector<absl::string_view> labels = absl::StrSplit(p, '.');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i == 0 && labels[i] == "*" && labels.size() > 1) continue;
    if (!IsDnsLabel(labels[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "name pattern ", QuotedForTerminal(pattern),
          ": each label is 1-63 letters, digits, '-' or '_', and '*' only as the whole first "
          "label of a longer name"));
    }
  }
  return p;
}

std::string PlainName(const std::vector<std::string>& labels) {
  size_t total = 0;
  for (const auto& label : labels) {
    if (!IsDnsLabel(label)) return "";
    total += label.size() + 1;
  }
  if (total == 0 || total - 1 > kMaxDomainLength) return "";
  return absl::AsciiStrToLower(absl::StrJoin(labels, "."));
}

bool IsPlainName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxDomainLength) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (!IsDnsLabel(label) || absl::AsciiStrToLower(label) != label) return false;
  }
  return true;
}

bool DomainCovers(absl::string_view pattern, absl::string_view name) {
  absl::ConsumeSuffix(&pattern, ".");
  absl::ConsumeSuffix(&name, ".");
  if (name.empty() || pattern.empty()) return false;
  if (absl::EqualsIgnoreCase(pattern, name)) return true;
  if (!absl::StartsWith(pattern, "*.")) return false;
  const absl::string_view suffix = pattern.substr(1);  // ".example.com"
  return name.size() > suffix.size() && absl::EndsWithIgnoreCase(name, suffix);
}

}  // namespace lazaret::vocab
