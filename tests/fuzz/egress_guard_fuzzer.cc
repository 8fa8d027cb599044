// libFuzzer target for the egress proxy's request guard
// (services/egressd/guard.h): Review of a sandbox-written request and the
// Redactor over an upstream-written response. Input: lines "host",
// "method", "target", then "name:value" header lines, then a line "--"
// and the response text; the first byte picks plaintext and a split
// point. Properties: nothing crashes; a refused request keeps its headers
// and gets a 403 whose body holds no value; an allowed one holds no
// placeholder any more and a value only for the secret's own hosts, never
// in plaintext; redaction keeps the length, leaves no value, and gives
// the same result whatever the split.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "services/egressd/guard.h"
#include "services/vocab/domain_pattern.h"

namespace {

using lazaret::egressd::GuardDecision;
using lazaret::egressd::HeaderField;
using lazaret::egressd::RequestGuard;
using lazaret::egressd::SecretSpec;

// Values of upper-case letters and digits, none inside another: the mask
// ("[redacted]***") can never form one.
std::vector<SecretSpec> Secrets() {
  std::vector<SecretSpec> out(3);
  out[0].name = "hdr";
  out[0].placeholder = "lzs-00000000000000000000000000000001";
  out[0].value = "VALUEHEADER1";
  out[0].hosts = {"api.example.com"};
  out[0].inject = SecretSpec::Inject::kHeader;
  out[0].header = "x-api-key";
  out[1].name = "bearer";
  out[1].placeholder = "lzs-00000000000000000000000000000002";
  out[1].value = "VALUEBEARER22";
  out[1].hosts = {"*.example.com"};
  out[1].inject = SecretSpec::Inject::kBearer;
  out[2].name = "basic";
  out[2].placeholder = "lzs-00000000000000000000000000000003";
  out[2].value = "PASSWORD333Q";
  out[2].hosts = {"reg.example.org"};
  out[2].inject = SecretSpec::Inject::kBasic;
  return out;
}

const RequestGuard& Guard() {
  static const RequestGuard* guard = new RequestGuard(
      Secrets(), {{.host = "api.example.com", .allow = {{"POST", "/v1/messages"}, {"GET", "/"}}},
                  {.host = "*.example.org", .allow = {{"*", "/"}}}});
  return *guard;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool plaintext = (data[0] & 1) != 0;
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<SecretSpec> secrets = Secrets();
  for (const SecretSpec& s : secrets) {
    if (absl::StrContains(input, s.value)) return 0;  // the sandbox never knows a value
  }
  const size_t sep = input.find("\n--\n");
  const absl::string_view request = input.substr(0, sep);
  const absl::string_view response =
      sep == absl::string_view::npos ? absl::string_view() : input.substr(sep + 4);
  std::vector<std::string> lines = absl::StrSplit(request, '\n');
  if (lines.size() < 3) return 0;
  const std::string host = lines[0];
  std::vector<HeaderField> headers;
  for (size_t i = 3; i < lines.size() && headers.size() < 64; ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    headers.push_back({lines[i].substr(0, colon), lines[i].substr(colon + 1)});
  }
  const std::vector<HeaderField> before = headers;
  const RequestGuard& guard = Guard();
  const GuardDecision d = guard.Review(host, lines[1], lines[2], &headers, plaintext);
  if (!d.allowed) {
    if (d.status != 403 || d.body.empty()) abort();
    if (headers.size() != before.size()) abort();
    for (size_t i = 0; i < headers.size(); ++i) {
      if (headers[i].name != before[i].name || headers[i].value != before[i].value) abort();
    }
    for (const SecretSpec& s : secrets) {
      if (absl::StrContains(d.body, s.value) || absl::StrContains(d.rule, s.value)) abort();
    }
  } else {
    for (const HeaderField& h : headers) {
      for (const SecretSpec& s : secrets) {
        if (absl::StrContains(h.value, s.placeholder)) abort();
        if (absl::StrContains(h.value, s.value)) {
          bool covered = false;
          for (const std::string& p : s.hosts) {
            covered = covered || lazaret::vocab::DomainCovers(p, host);
          }
          if (!covered || plaintext) abort();
        }
      }
    }
  }
  // Redaction of a response that may echo the values.
  std::string text(response);
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '\x01') text.replace(i, 2, secrets[static_cast<unsigned char>(text[i + 1]) % 3].value);
  }
  const std::string whole = guard.Redact(text, &d);
  if (whole.size() != text.size()) abort();
  for (const SecretSpec& s : secrets) {
    if (absl::StrContains(whole, s.value)) abort();
  }
  const size_t split = text.empty() ? 0 : (data[0] >> 1) % (text.size() + 1);
  RequestGuard::Redactor r = guard.NewRedactor(&d);
  std::string streamed = r.Feed(absl::string_view(text).substr(0, split));
  streamed += r.Feed(absl::string_view(text).substr(split));
  streamed += r.Finish();
  if (streamed != whole) abort();
  return 0;
}
