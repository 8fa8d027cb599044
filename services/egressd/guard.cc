#include "services/egressd/guard.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/escape.h"

namespace lazaret::egressd {
namespace {

// How much of a sandbox-written name, method or target a refusal quotes.
constexpr size_t kMaxQuoted = 200;

// Sandbox text as a refusal or the log quotes it.
std::string QuoteSandboxText(absl::string_view raw) {
  return vocab::EscapeForTerminalCut(raw, kMaxQuoted);
}

constexpr absl::string_view kMaskText = "[redacted]";

void Wipe(std::string* s) {
  if (!s->empty()) OPENSSL_cleanse(s->data(), s->size());
  s->clear();
}

// The request target with %XX sequences decoded (invalid ones kept), so a
// percent-encoded placeholder is found too.
std::string PercentDecoded(absl::string_view target) {
  std::string out;
  out.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size() &&
        absl::ascii_isxdigit(static_cast<unsigned char>(target[i + 1])) &&
        absl::ascii_isxdigit(static_cast<unsigned char>(target[i + 2]))) {
      auto nibble = [](char c) -> int {
        return c <= '9' ? c - '0' : (absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10);
      };
      out.push_back(static_cast<char>(nibble(target[i + 1]) * 16 + nibble(target[i + 2])));
      i += 2;
    } else {
      out.push_back(target[i]);
    }
  }
  return out;
}

bool HostCovered(const SecretSpec& s, absl::string_view host) {
  return std::any_of(s.hosts.begin(), s.hosts.end(),
                     [&](const std::string& p) { return vocab::DomainCovers(p, host); });
}

// Splits an Authorization value into its scheme and its credentials (one
// or more spaces between them).
bool SplitAuthorization(absl::string_view value, absl::string_view* scheme,
                        absl::string_view* credentials) {
  const size_t sp = value.find(' ');
  if (sp == absl::string_view::npos) return false;
  *scheme = value.substr(0, sp);
  absl::string_view rest = value.substr(sp);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  *credentials = rest;
  return true;
}

// The decoded user:password of an `Authorization: Basic` value; empty when
// the header is not one.
std::string BasicCredentials(absl::string_view name, absl::string_view value) {
  if (!absl::EqualsIgnoreCase(name, "authorization")) return {};
  absl::string_view scheme, credentials;
  if (!SplitAuthorization(value, &scheme, &credentials) ||
      !absl::EqualsIgnoreCase(scheme, "basic")) {
    return {};
  }
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripTrailingAsciiWhitespace(credentials), &decoded)) return {};
  return decoded;
}

const char* InjectDescription(const SecretSpec& s) {
  switch (s.inject) {
    case SecretSpec::Inject::kHeader:
      return nullptr;
    case SecretSpec::Inject::kBearer:
      return "as \"Authorization: Bearer <placeholder>\"";
    case SecretSpec::Inject::kBasic:
      return "as the password of \"Authorization: Basic\"";
  }
  return nullptr;
}

std::string WhereItGoes(const SecretSpec& s) {
  const char* how = InjectDescription(s);
  return absl::StrCat(
      "it is only sent to ", absl::StrJoin(s.hosts, ", "), ", over https, ",
      how != nullptr ? std::string(how) : absl::StrCat("in the header \"", s.header, "\""));
}

GuardDecision Refuse(std::string rule, std::string body) {
  GuardDecision d;
  d.allowed = false;
  d.status = 403;
  d.rule = std::move(rule);
  d.body = absl::StrCat("lazaret egress proxy: ", std::move(body));
  if (d.body.back() != '\n') d.body.push_back('\n');
  return d;
}

// Refusal of a placeholder found where it may not go. `where` says where
// it was ("in the request target", "in the header \"x-foo\"").
GuardDecision RefusePlaceholder(const SecretSpec& s, absl::string_view host, bool plaintext,
                                bool covered, const std::string& where) {
  if (plaintext) {
    return Refuse(
        absl::StrCat("secret \"", s.name, "\" is only sent over TLS"),
        absl::StrCat("refused: the request to ", host,
                     " over plain http carries the "
                     "placeholder of secret \"",
                     s.name, "\" ", where, "; a secret is only sent over https.\nUse https://",
                     host, "/ instead."));
  }
  if (!covered) {
    return Refuse(
        absl::StrCat("secret \"", s.name, "\" is not sent to ", host),
        absl::StrCat("refused: the request to ", host,
                     " carries the placeholder of "
                     "secret \"",
                     s.name, "\" ", where, "; ", WhereItGoes(s), ".\nTo send it to ", host,
                     ", add the host to profiles.<profile>."
                     "secrets.",
                     s.name, ".hosts in your lazaret configuration."));
  }
  return Refuse(absl::StrCat("secret \"", s.name, "\" is not sent ", where),
                absl::StrCat("refused: the request to ", host,
                             " carries the placeholder of "
                             "secret \"",
                             s.name, "\" ", where, "; ", WhereItGoes(s),
                             ".\nTo send it another way, change profiles.<profile>.secrets.",
                             s.name, ".inject in your lazaret configuration."));
}

// Whether a value may stand in a header field: no control character (a
// CR or LF from a secret file's last line would split the request).
bool HeaderSafe(absl::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

void RemoveHeaders(std::vector<HeaderField>* headers, absl::string_view name) {
  headers->erase(
      std::remove_if(headers->begin(), headers->end(),
                     [&](const HeaderField& h) { return absl::EqualsIgnoreCase(h.name, name); }),
      headers->end());
}

}  // namespace

std::string RedactionMask(size_t len) {
  std::string mask(kMaskText.substr(0, std::min(len, kMaskText.size())));
  mask.resize(len, '*');
  return mask;
}

GuardDecision::~GuardDecision() {
  for (std::string& v : derived_values) Wipe(&v);
}

RequestGuard::RequestGuard(std::vector<SecretSpec> secrets, std::vector<vocab::HttpRule> rules)
    : secrets_(std::move(secrets)), rules_(std::move(rules)) {}

RequestGuard::~RequestGuard() {
  for (SecretSpec& s : secrets_) Wipe(&s.value);
}

GuardDecision RequestGuard::Review(absl::string_view host, absl::string_view method,
                                   absl::string_view target, std::vector<HeaderField>* headers,
                                   bool plaintext) const {
  // Placeholders first: one headed elsewhere is what the log must show.
  const std::string decoded_target = PercentDecoded(target);
  for (const SecretSpec& s : secrets_) {
    if (s.placeholder.empty()) continue;
    if (absl::StrContains(target, s.placeholder) ||
        absl::StrContains(decoded_target, s.placeholder)) {
      return RefusePlaceholder(s, host, plaintext, HostCovered(s, host), "in the request target");
    }
  }

  std::vector<HeaderField> out = *headers;
  GuardDecision decision;
  for (size_t i = 0; i < headers->size(); ++i) {
    const HeaderField& h = (*headers)[i];
    std::string basic = BasicCredentials(h.name, h.value);
    for (const SecretSpec& s : secrets_) {
      if (s.placeholder.empty()) continue;
      const std::string where = absl::StrCat("in the header \"", QuoteSandboxText(h.name), "\"");
      if (absl::StrContains(h.name, s.placeholder)) {
        Wipe(&basic);
        return RefusePlaceholder(s, host, plaintext, HostCovered(s, host), "in a header name");
      }
      const bool raw = absl::StrContains(h.value, s.placeholder);
      const bool in_basic = absl::StrContains(basic, s.placeholder);
      if (!raw && !in_basic) continue;
      const bool covered = HostCovered(s, host);
      if (!plaintext && covered && s.inject != SecretSpec::Inject::kBasic && !HeaderSafe(s.value)) {
        Wipe(&basic);
        for (HeaderField& f : out) Wipe(&f.value);
        return Refuse(absl::StrCat("secret \"", s.name, "\" has a value that cannot be sent"),
                      absl::StrCat("refused: the value of secret \"", s.name,
                                   "\" holds a control character (a line break?), so it cannot "
                                   "be sent in a header.\nFix where profiles.<profile>.secrets.",
                                   s.name, " takes its value from."));
      }
      bool fits = false;
      if (!plaintext && covered) {
        switch (s.inject) {
          case SecretSpec::Inject::kHeader:
            fits = raw && !in_basic && absl::EqualsIgnoreCase(h.name, s.header);
            if (fits) absl::StrReplaceAll({{s.placeholder, s.value}}, &out[i].value);
            break;
          case SecretSpec::Inject::kBearer: {
            absl::string_view scheme, credentials;
            fits = absl::EqualsIgnoreCase(h.name, "authorization") &&
                   SplitAuthorization(h.value, &scheme, &credentials) &&
                   absl::EqualsIgnoreCase(scheme, "bearer") && credentials == s.placeholder;
            if (fits) {
              Wipe(&out[i].value);
              out[i].value = absl::StrCat("Bearer ", s.value);
            }
            break;
          }
          case SecretSpec::Inject::kBasic: {
            const size_t colon = basic.find(':');
            fits = !raw && in_basic && colon != std::string::npos &&
                   absl::string_view(basic).substr(colon + 1) == s.placeholder;
            if (fits) {
              std::string plain = absl::StrCat(basic.substr(0, colon + 1), s.value);
              std::string encoded = absl::Base64Escape(plain);
              Wipe(&plain);
              Wipe(&out[i].value);
              out[i].value = absl::StrCat("Basic ", encoded);
              decision.derived_values.push_back(std::move(encoded));
            }
            break;
          }
        }
      }
      if (!fits) {
        Wipe(&basic);
        for (HeaderField& f : out) Wipe(&f.value);
        return RefusePlaceholder(s, host, plaintext, covered, where);
      }
      if (std::find(decision.injected.begin(), decision.injected.end(), s.name) ==
          decision.injected.end()) {
        decision.injected.push_back(s.name);
      }
    }
    Wipe(&basic);
  }

  const vocab::HttpRule* rule = vocab::DecidingHttpRule(rules_, host);
  if (rule != nullptr) {
    const vocab::HttpAllow* admitting = nullptr;
    for (const vocab::HttpAllow& a : rule->allow) {
      if (vocab::HttpAllowAdmits(a, method, target)) {
        admitting = &a;
        break;
      }
    }
    if (admitting == nullptr) {
      for (HeaderField& f : out) Wipe(&f.value);
      std::vector<std::string> entries;
      for (const vocab::HttpAllow& a : rule->allow) {
        entries.push_back(absl::StrCat(a.method, " ", a.path_prefix));
      }
      return Refuse(absl::StrCat("http \"", rule->host, "\": no entry admits ",
                                 QuoteSandboxText(method), " ", QuoteSandboxText(target)),
                    absl::StrCat("refused ", QuoteSandboxText(method), " ",
                                 QuoteSandboxText(target), " to ", host, ": the HTTP rule for \"",
                                 rule->host, "\" allows only ", absl::StrJoin(entries, ", "),
                                 ".\nTo allow it, add an entry to profiles."
                                 "<profile>.http.\"",
                                 rule->host, "\".allow in your lazaret configuration."));
    }
    decision.rule =
        absl::StrCat("http \"", rule->host, "\": ", admitting->method, " ", admitting->path_prefix);
  } else {
    decision.rule = absl::StrCat("no HTTP rule for ", host);
  }

  if (!decision.injected.empty()) {
    RemoveHeaders(&out, "accept-encoding");
    out.push_back({"accept-encoding", "identity"});
  }
  for (HeaderField& f : *headers) Wipe(&f.value);
  *headers = std::move(out);
  decision.allowed = true;
  return decision;
}

std::string RequestGuard::BodyScanner::Feed(absl::string_view chunk) {
  size_t longest = 0;
  for (const SecretSpec& s : guard_->secrets_) longest = std::max(longest, s.placeholder.size());
  if (longest == 0) return {};
  tail_.append(chunk.data(), chunk.size());
  for (const SecretSpec& s : guard_->secrets_) {
    if (!s.placeholder.empty() && absl::StrContains(tail_, s.placeholder)) {
      tail_.clear();
      return s.name;
    }
  }
  if (tail_.size() >= longest) tail_.erase(0, tail_.size() - (longest - 1));
  return {};
}

RequestGuard::Redactor::Redactor(const RequestGuard* guard, std::vector<std::string> extra)
    : guard_(guard), extra_(std::move(extra)) {
  auto add = [&](const std::string& v) {
    if (v.empty()) return;
    first_[static_cast<unsigned char>(v[0])] = true;
    longest_ = std::max(longest_, v.size());
  };
  for (const SecretSpec& s : guard_->secrets_) add(s.value);
  for (const std::string& v : extra_) add(v);
}

RequestGuard::Redactor::~Redactor() {
  for (std::string& v : extra_) Wipe(&v);
  Wipe(&held_);
}

void RequestGuard::Redactor::Drain(bool final, std::string* out) {
  const size_t n = held_.size();
  const char* data = held_.data();
  size_t i = 0;
  size_t run = 0;  // start of the bytes not yet copied to `out`
  while (i < n) {
    if (!first_[static_cast<unsigned char>(data[i])]) {
      ++i;
      continue;
    }
    const size_t avail = n - i;
    size_t best = 0;
    bool could_grow = false;
    auto consider = [&](const std::string& v) {
      if (v.empty()) return;
      if (v.size() <= avail) {
        if (v.size() > best && std::memcmp(data + i, v.data(), v.size()) == 0) best = v.size();
      } else if (!final && std::memcmp(data + i, v.data(), avail) == 0) {
        could_grow = true;
      }
    };
    for (const SecretSpec& s : guard_->secrets_) consider(s.value);
    for (const std::string& v : extra_) consider(v);
    if (could_grow) break;  // more bytes decide; hold back from here
    if (best == 0) {
      ++i;
      continue;
    }
    out->append(data + run, i - run);
    out->append(RedactionMask(best));
    i += best;
    run = i;
  }
  out->append(data + run, i - run);
  if (i > 0) {
    OPENSSL_cleanse(held_.data(), i);
    held_.erase(0, i);
  }
}

std::string RequestGuard::Redactor::Feed(absl::string_view chunk) {
  std::string out;
  if (longest_ == 0) {
    out.assign(chunk.data(), chunk.size());
    return out;
  }
  held_.append(chunk.data(), chunk.size());
  out.reserve(held_.size());
  Drain(false, &out);
  return out;
}

std::string RequestGuard::Redactor::Finish() {
  std::string out;
  Drain(true, &out);
  return out;
}

RequestGuard::Redactor RequestGuard::NewRedactor(const GuardDecision* decision) const {
  std::vector<std::string> extra;
  if (decision != nullptr) extra = decision->derived_values;
  return Redactor(this, std::move(extra));
}

std::string RequestGuard::Redact(absl::string_view text, const GuardDecision* decision) const {
  Redactor r = NewRedactor(decision);
  std::string out = r.Feed(text);
  out += r.Finish();
  return out;
}

bool RequestGuard::Intercepts(absl::string_view host) const {
  for (const SecretSpec& s : secrets_) {
    if (HostCovered(s, host)) return true;
  }
  for (const vocab::HttpRule& r : rules_) {
    if (vocab::DomainCovers(r.host, host)) return true;
  }
  return false;
}

}  // namespace lazaret::egressd
