#include "services/egressd/guard.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lazaret::egressd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAnthropicPh[] = "lzs-0123456789abcdef0123456789abcdef";
constexpr char kGithubPh[] = "lzs-fedcba9876543210fedcba9876543210";
constexpr char kBasicPh[] = "lzs-00112233445566778899aabbccddeeff";
constexpr char kAnthropicValue[] = "sk-ant-REAL-VALUE-1";
constexpr char kGithubValue[] = "ghp_REALGITHUBTOKEN";
constexpr char kBasicValue[] = "npm-REAL-PASSWORD";

SecretSpec Secret(std::string name, std::string placeholder, std::string value,
                  std::vector<std::string> hosts,
                  SecretSpec::Inject inject = SecretSpec::Inject::kHeader,
                  std::string header = "x-api-key") {
  SecretSpec s;
  s.name = std::move(name);
  s.placeholder = std::move(placeholder);
  s.value = std::move(value);
  s.hosts = std::move(hosts);
  s.inject = inject;
  s.header = std::move(header);
  return s;
}

std::vector<SecretSpec> Secrets() {
  return {
      Secret("anthropic", kAnthropicPh, kAnthropicValue, {"api.anthropic.com"}),
      Secret("github", kGithubPh, kGithubValue, {"api.github.com", "*.githubusercontent.com"},
             SecretSpec::Inject::kBearer),
      Secret("npm", kBasicPh, kBasicValue, {"registry.example.org"}, SecretSpec::Inject::kBasic),
  };
}

std::vector<vocab::HttpRule> Rules() {
  return {
      {.host = "api.anthropic.com", .allow = {{"POST", "/v1/messages"}, {"GET", "/v1/models"}}},
      {.host = "*.example.com", .allow = {{"GET", "/"}}},
      {.host = "open.example.com", .allow = {{"*", "/"}}},
  };
}

class GuardTest : public ::testing::Test {
 protected:
  RequestGuard guard_{Secrets(), Rules()};
};

std::string HeaderValue(const std::vector<HeaderField>& headers, const std::string& name) {
  for (const HeaderField& h : headers) {
    if (absl::EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return "<none>";
}

TEST_F(GuardTest, HeaderSecretReplacedOnItsHost) {
  std::vector<HeaderField> h = {{"Host", "api.anthropic.com"},
                                {"X-Api-Key", kAnthropicPh},
                                {"Accept-Encoding", "gzip, br"}};
  GuardDecision d = guard_.Review("api.anthropic.com", "POST", "/v1/messages", &h);
  ASSERT_TRUE(d.allowed) << d.body;
  EXPECT_EQ(HeaderValue(h, "x-api-key"), kAnthropicValue);
  EXPECT_THAT(d.injected, ElementsAre("anthropic"));
  EXPECT_EQ(d.rule, "http \"api.anthropic.com\": POST /v1/messages");
  // The response must stay readable for redaction.
  EXPECT_EQ(HeaderValue(h, "accept-encoding"), "identity");
  int encodings = 0;
  for (const HeaderField& f : h) encodings += absl::EqualsIgnoreCase(f.name, "accept-encoding");
  EXPECT_EQ(encodings, 1);
}

TEST_F(GuardTest, HeaderSecretReplacedInsideALongerValue) {
  std::vector<HeaderField> h = {{"x-api-key", absl::StrCat("k=", kAnthropicPh, ";")}};
  GuardDecision d = guard_.Review("api.anthropic.com", "GET", "/v1/models", &h);
  ASSERT_TRUE(d.allowed) << d.body;
  EXPECT_EQ(h[0].value, absl::StrCat("k=", kAnthropicValue, ";"));
}

TEST_F(GuardTest, BearerSecretReplacedOnWildcardHost) {
  std::vector<HeaderField> h = {{"authorization", absl::StrCat("Bearer ", kGithubPh)}};
  GuardDecision d = guard_.Review("raw.githubusercontent.com", "GET", "/x/y", &h);
  ASSERT_TRUE(d.allowed) << d.body;
  EXPECT_EQ(h[0].value, absl::StrCat("Bearer ", kGithubValue));
  EXPECT_THAT(d.injected, ElementsAre("github"));
  EXPECT_EQ(d.rule, "no HTTP rule for raw.githubusercontent.com");
}

TEST_F(GuardTest, WildcardDoesNotCoverItsBase) {
  std::vector<HeaderField> h = {{"authorization", absl::StrCat("Bearer ", kGithubPh)}};
  GuardDecision d = guard_.Review("githubusercontent.com", "GET", "/", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.status, 403);
  EXPECT_EQ(h[0].value, absl::StrCat("Bearer ", kGithubPh));
}

TEST_F(GuardTest, BearerOnlyInItsExactForm) {
  std::vector<HeaderField> h = {{"authorization", absl::StrCat("Bearer ", kGithubPh, "x")}};
  EXPECT_FALSE(guard_.Review("api.github.com", "GET", "/", &h).allowed);
  h = {{"authorization", absl::StrCat("Token ", kGithubPh)}};
  EXPECT_FALSE(guard_.Review("api.github.com", "GET", "/", &h).allowed);
  h = {{"authorization", absl::StrCat("bearer ", kGithubPh)}};
  EXPECT_TRUE(guard_.Review("api.github.com", "GET", "/", &h).allowed);
  EXPECT_EQ(h[0].value, absl::StrCat("Bearer ", kGithubValue));
}

TEST_F(GuardTest, BasicSecretIsThePassword) {
  std::vector<HeaderField> h = {
      {"Authorization", absl::StrCat("Basic ", absl::Base64Escape(absl::StrCat("bob:", kBasicPh)))}};
  GuardDecision d = guard_.Review("registry.example.org", "GET", "/pkg", &h);
  ASSERT_TRUE(d.allowed) << d.body;
  const std::string encoded = absl::Base64Escape(absl::StrCat("bob:", kBasicValue));
  EXPECT_EQ(h[0].value, absl::StrCat("Basic ", encoded));
  EXPECT_THAT(d.injected, ElementsAre("npm"));
  // The encoded credentials are redacted from what comes back.
  EXPECT_THAT(guard_.Redact(absl::StrCat("echo: ", encoded), &d), Not(HasSubstr(encoded)));
}

TEST_F(GuardTest, BasicPlaceholderAsUserIsRefused) {
  std::vector<HeaderField> h = {
      {"Authorization", absl::StrCat("Basic ", absl::Base64Escape(absl::StrCat(kBasicPh, ":x")))}};
  GuardDecision d = guard_.Review("registry.example.org", "GET", "/pkg", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_THAT(d.body, HasSubstr("password"));
}

TEST_F(GuardTest, BasicPlaceholderToAnotherHostIsRefused) {
  std::vector<HeaderField> h = {
      {"Authorization", absl::StrCat("Basic ", absl::Base64Escape(absl::StrCat("u:", kBasicPh)))}};
  GuardDecision d = guard_.Review("evil.test", "GET", "/", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "secret \"npm\" is not sent to evil.test");
}

TEST_F(GuardTest, PlaceholderToAnotherHostIsRefusedNamingSecretHostAndKey) {
  std::vector<HeaderField> h = {{"x-api-key", kAnthropicPh}};
  GuardDecision d = guard_.Review("evil.test", "POST", "/upload", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.status, 403);
  EXPECT_EQ(d.rule, "secret \"anthropic\" is not sent to evil.test");
  EXPECT_THAT(d.body, HasSubstr("\"anthropic\""));
  EXPECT_THAT(d.body, HasSubstr("evil.test"));
  EXPECT_THAT(d.body, HasSubstr("only sent to api.anthropic.com"));
  EXPECT_THAT(d.body, HasSubstr("profiles.<profile>.secrets.anthropic.hosts"));
  EXPECT_THAT(d.body, Not(HasSubstr(kAnthropicValue)));
  EXPECT_LE(std::count(d.body.begin(), d.body.end(), '\n'), 2);
  EXPECT_EQ(h[0].value, kAnthropicPh);
  EXPECT_TRUE(d.injected.empty());
}

TEST_F(GuardTest, PlaceholderInAnotherHeaderIsRefused) {
  std::vector<HeaderField> h = {{"x-other", kAnthropicPh}};
  GuardDecision d = guard_.Review("api.anthropic.com", "POST", "/v1/messages", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_THAT(d.body, HasSubstr("x-api-key"));
  EXPECT_THAT(d.body, HasSubstr("secrets.anthropic.inject"));
  EXPECT_EQ(h[0].value, kAnthropicPh);
  // The bearer secret in another header than authorization.
  h = {{"x-token", kGithubPh}};
  EXPECT_FALSE(guard_.Review("api.github.com", "GET", "/", &h).allowed);
  // And in a header name.
  h = {{kGithubPh, "1"}};
  EXPECT_FALSE(guard_.Review("api.github.com", "GET", "/", &h).allowed);
}

TEST_F(GuardTest, PlaceholderInTargetIsRefusedEvenOnItsHost) {
  std::vector<HeaderField> h;
  GuardDecision d =
      guard_.Review("api.anthropic.com", "GET", absl::StrCat("/v1/models?k=", kAnthropicPh), &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_THAT(d.body, HasSubstr("request target"));
  // Percent-encoded.
  std::string encoded = kAnthropicPh;
  encoded.replace(0, 4, "%6cz%73-");
  d = guard_.Review("evil.test", "GET", absl::StrCat("/?q=", encoded), &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "secret \"anthropic\" is not sent to evil.test");
}

TEST_F(GuardTest, PlaintextNeverCarriesASecret) {
  std::vector<HeaderField> h = {{"x-api-key", kAnthropicPh}};
  GuardDecision d = guard_.Review("api.anthropic.com", "POST", "/v1/messages", &h, true);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.status, 403);
  EXPECT_THAT(d.body, HasSubstr("https"));
  EXPECT_EQ(h[0].value, kAnthropicPh);
  // Without a placeholder a plain request is decided by the rules alone.
  h = {{"accept", "*/*"}};
  EXPECT_TRUE(guard_.Review("api.anthropic.com", "GET", "/v1/models", &h, true).allowed);
}

TEST_F(GuardTest, RuleRefusalSaysWhichRuleAndKey) {
  std::vector<HeaderField> h = {{"x-api-key", kAnthropicPh}};
  GuardDecision d = guard_.Review("api.anthropic.com", "DELETE", "/v1/files/1", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.status, 403);
  EXPECT_EQ(d.rule, "http \"api.anthropic.com\": no entry admits DELETE /v1/files/1");
  EXPECT_THAT(d.body, HasSubstr("allows only POST /v1/messages, GET /v1/models"));
  EXPECT_THAT(d.body, HasSubstr("profiles.<profile>.http.\"api.anthropic.com\".allow"));
  EXPECT_EQ(h[0].value, kAnthropicPh);  // unchanged on refusal
  EXPECT_TRUE(guard_.Review("api.anthropic.com", "GET", "/v1/models?x=1", &h).allowed);
  h = {};
  EXPECT_FALSE(guard_.Review("api.anthropic.com", "POST", "/v1/messagesX", &h).allowed);
  EXPECT_FALSE(guard_.Review("api.anthropic.com", "POST", "/v1/messages/../admin", &h).allowed);
}

TEST_F(GuardTest, ExactRuleDecidesBeforeWildcard) {
  std::vector<HeaderField> h;
  // *.example.com allows GET only; open.example.com's own rule allows all.
  EXPECT_FALSE(guard_.Review("a.example.com", "POST", "/", &h).allowed);
  GuardDecision d = guard_.Review("a.example.com", "GET", "/x", &h);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.rule, "http \"*.example.com\": GET /");
  d = guard_.Review("open.example.com", "POST", "/", &h);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.rule, "http \"open.example.com\": * /");
}

TEST_F(GuardTest, RefusalBodyEscapesSandboxText) {
  std::vector<HeaderField> h;
  GuardDecision d = guard_.Review("a.example.com", "POST", "/\x1b[31m\r\nX-Injected: 1", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_THAT(d.body, Not(HasSubstr("\x1b")));
  EXPECT_THAT(d.body, Not(HasSubstr("\r")));
}

TEST(GuardValueTest, ValueWithLineBreakIsNeverInjected) {
  RequestGuard guard({Secret("k", kAnthropicPh, "abc\r\nX-Evil: 1", {"api.anthropic.com"})}, {});
  std::vector<HeaderField> h = {{"x-api-key", kAnthropicPh}};
  GuardDecision d = guard.Review("api.anthropic.com", "GET", "/", &h);
  EXPECT_FALSE(d.allowed);
  EXPECT_THAT(d.body, HasSubstr("control character"));
  EXPECT_THAT(d.body, Not(HasSubstr("X-Evil")));
  EXPECT_EQ(h[0].value, kAnthropicPh);
}

TEST_F(GuardTest, Intercepts) {
  EXPECT_TRUE(guard_.Intercepts("api.anthropic.com"));
  EXPECT_TRUE(guard_.Intercepts("x.githubusercontent.com"));
  EXPECT_TRUE(guard_.Intercepts("b.example.com"));
  EXPECT_FALSE(guard_.Intercepts("example.com"));
  EXPECT_FALSE(guard_.Intercepts("api.openai.com"));
}

TEST_F(GuardTest, BodyScannerFindsPlaceholderAcrossChunks) {
  const std::string body = absl::StrCat("{\"k\":\"", kGithubPh, "\"}");
  for (size_t split = 0; split <= body.size(); ++split) {
    RequestGuard::BodyScanner scanner = guard_.NewBodyScanner();
    std::string found = scanner.Feed(body.substr(0, split));
    if (found.empty()) found = scanner.Feed(body.substr(split));
    EXPECT_EQ(found, "github") << "split at " << split;
  }
  RequestGuard::BodyScanner scanner = guard_.NewBodyScanner();
  for (char c : body) {
    std::string found = scanner.Feed(std::string(1, c));
    if (!found.empty()) {
      EXPECT_EQ(found, "github");
      return;
    }
  }
  ADD_FAILURE() << "not found byte by byte";
}

TEST_F(GuardTest, BodyScannerQuietOnCleanBody) {
  RequestGuard::BodyScanner scanner = guard_.NewBodyScanner();
  EXPECT_EQ(scanner.Feed("lzs-0123456789abcdef"), "");
  EXPECT_EQ(scanner.Feed("0123456789abcdeX"), "");
}

TEST(RedactionMaskTest, SameLength) {
  EXPECT_EQ(RedactionMask(3), "[re");
  EXPECT_EQ(RedactionMask(10), "[redacted]");
  EXPECT_EQ(RedactionMask(13), "[redacted]***");
}

TEST_F(GuardTest, RedactKeepsLength) {
  const std::string text = absl::StrCat("a ", kAnthropicValue, " b ", kGithubValue, " c");
  const std::string out = guard_.Redact(text);
  EXPECT_EQ(out.size(), text.size());
  EXPECT_THAT(out, Not(HasSubstr(kAnthropicValue)));
  EXPECT_THAT(out, Not(HasSubstr(kGithubValue)));
  EXPECT_EQ(out, absl::StrCat("a ", RedactionMask(sizeof(kAnthropicValue) - 1), " b ",
                              RedactionMask(sizeof(kGithubValue) - 1), " c"));
}

// Every split of a text into two and three chunks gives the whole-text
// redaction, and no chunk boundary lets a value through.
TEST(RedactorTest, EverySplitGivesTheWholeTextResult) {
  std::vector<SecretSpec> secrets = {
      Secret("a", "lzs-a", "abcabd", {"x.test"}),
      Secret("b", "lzs-b", "bca", {"x.test"}),
      Secret("c", "lzs-c", "abcabdX", {"x.test"}),
  };
  RequestGuard guard(secrets, {});
  const std::string text = "xxabcabcabdyyabcabdXzzbcabcaabcab";
  const std::string whole = guard.Redact(text);
  EXPECT_EQ(whole.size(), text.size());
  EXPECT_THAT(whole, Not(HasSubstr("abcabd")));
  EXPECT_THAT(whole, Not(HasSubstr("bca")));
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); ++j) {
      RequestGuard::Redactor r = guard.NewRedactor();
      std::string out = r.Feed(text.substr(0, i));
      EXPECT_LT(r.held(), 7u);
      out += r.Feed(text.substr(i, j - i));
      out += r.Feed(text.substr(j));
      out += r.Finish();
      ASSERT_EQ(out, whole) << "splits " << i << " " << j;
    }
  }
}

TEST(RedactorTest, PassesBytesThatCannotStartAValueAtOnce) {
  RequestGuard guard({Secret("a", "lzs-a", "SECRETVALUE", {"x.test"})}, {});
  RequestGuard::Redactor r = guard.NewRedactor();
  EXPECT_EQ(r.Feed("data: {\"delta\":\"hi\"}\n\n"), "data: {\"delta\":\"hi\"}\n\n");
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.Feed("data: SECR"), "data: ");
  EXPECT_EQ(r.held(), 4u);
  EXPECT_EQ(r.Feed("ETVALUE\n"), "[redacted]*\n");
  EXPECT_EQ(r.Feed("data: SECX"), "data: SECX");
  EXPECT_EQ(r.Finish(), "");
}

}  // namespace
}  // namespace lazaret::egressd
