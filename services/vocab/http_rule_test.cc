#include "services/vocab/http_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::vocab {
namespace {

using ::testing::HasSubstr;

TEST(HttpRuleTest, PathPrefixMatchesOnSegmentBoundariesAndQuery) {
  struct Case {
    const char* prefix;
    const char* path;
    bool admitted;
  };
  const Case cases[] = {
      {"/v1/messages", "/v1/messages", true},
      {"/v1/messages", "/v1/messages/", true},
      {"/v1/messages", "/v1/messages/batches/1", true},
      {"/v1/messages", "/v1/messages?beta=true", true},
      {"/v1/messages", "/v1/messagesX", false},
      {"/v1/messages", "/v1/messages.json", false},
      {"/v1/messages", "/v1/message", false},
      {"/v1/messages", "/v1", false},
      {"/v1/messages", "/V1/messages", false},
      {"/v1/", "/v1/", true},
      {"/v1/", "/v1/models", true},
      {"/v1/", "/v1", false},
      {"/v1/", "/v10/models", false},
      {"/v1", "/v10", false},
      {"/v1", "/v1?x=1", true},
      {"/", "/", true},
      {"/", "/anything/at/all?q=1", true},
      {"/", "", false},
      {"/v1/messages", "/v1/messages/../../admin", false},
      {"/v1/messages", "/v1/messages/%2e%2E/admin", false},
      {"/v1/messages", "/v1/messages/./x", false},
      {"/", "/a/..", false},
      {"/v1/messages", "/v1/messages?next=/../admin", true},
      {"/v1/messages", "/v1/messages/..x", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PathPrefixAdmits(c.prefix, c.path), c.admitted) << c.prefix << " vs " << c.path;
  }
}

TEST(HttpRuleTest, MethodIsCaseSensitiveAndStarIsAny) {
  const HttpAllow post{"POST", "/v1/messages"};
  EXPECT_TRUE(HttpAllowAdmits(post, "POST", "/v1/messages"));
  EXPECT_FALSE(HttpAllowAdmits(post, "post", "/v1/messages"));
  EXPECT_FALSE(HttpAllowAdmits(post, "GET", "/v1/messages"));
  EXPECT_FALSE(HttpAllowAdmits(post, "POST", "/v1/models"));
  const HttpAllow any{"*", "/v1/models"};
  EXPECT_TRUE(HttpAllowAdmits(any, "DELETE", "/v1/models/x"));
  EXPECT_TRUE(HttpAllowAdmits(any, "get", "/v1/models"));
  EXPECT_FALSE(HttpAllowAdmits(any, "GET", "/v1/messages"));
}

TEST(HttpRuleTest, ParsesEntriesAndRefusesEachMalformedPart) {
  absl::StatusOr<HttpAllow> e = ParseHttpAllow("POST /v1/messages");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->method, "POST");
  EXPECT_EQ(e->path_prefix, "/v1/messages");
  EXPECT_TRUE(ParseHttpAllow("* /").ok());
  EXPECT_TRUE(ParseHttpAllow("PROPFIND /dav/").ok());
  EXPECT_TRUE(ParseHttpAllow("GET /a-b_c~d/%41/x.y").ok());
  const std::pair<const char*, const char*> refused[] = {
      {"GET", "is not \"METHOD /path-prefix\""},
      {"get /v1", "write \"GET\""},
      {"G(T /v1", "is not an HTTP method"},
      {" /v1", "is not an HTTP method"},
      {"GET  /v1", "does not start with \"/\""},
      {"GET v1/models", "does not start with \"/\""},
      {"GET /v1 /x", "printable ASCII without spaces"},
      {"GET /v1?x=1", "'?' and '#'"},
      {"GET /v1#top", "'?' and '#'"},
      {"GET /v1//models", "empty segment"},
      {"GET //v1", "empty segment"},
      {"GET /v1/../admin", "\"..\" segment"},
      {"GET /v1/./models", "\".\" segment"},
      {"GET /v1/..", "\"..\" segment"},
      {"GET /.", "\".\" segment"},
      {"GET /v1/%2E%2e/admin", "\"%2E%2e\" segment"},
      {"GET /caf\xc3\xa9", "printable ASCII"},
      {"GET /a\tb", "printable ASCII"},
  };
  for (const auto& [text, why] : refused) {
    absl::StatusOr<HttpAllow> r = ParseHttpAllow(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << text;
  }
}

TEST(HttpRuleTest, CoverageIsTheMatchingRuleAppliedToPrefixes) {
  const HttpAllow wide{"*", "/v1"};
  EXPECT_TRUE(HttpAllowCovers(wide, {"GET", "/v1"}));
  EXPECT_TRUE(HttpAllowCovers(wide, {"POST", "/v1/messages"}));
  EXPECT_TRUE(HttpAllowCovers(wide, {"*", "/v1/"}));
  EXPECT_FALSE(HttpAllowCovers(wide, {"GET", "/v10"}));
  EXPECT_FALSE(HttpAllowCovers(wide, {"GET", "/"}));
  const HttpAllow get{"GET", "/v1/"};
  EXPECT_TRUE(HttpAllowCovers(get, {"GET", "/v1/models"}));
  EXPECT_FALSE(HttpAllowCovers(get, {"GET", "/v1"}));  // "/v1" itself is not under "/v1/"
  EXPECT_FALSE(HttpAllowCovers(get, {"*", "/v1/models"}));
  EXPECT_FALSE(HttpAllowCovers(get, {"POST", "/v1/models"}));
}

TEST(HttpRuleTest, ExactRuleDecidesOverWildcardAndNoRuleAllowsEverything) {
  const std::vector<HttpRule> rules = {
      {"*.example.com", {{"GET", "/"}}},
      {"api.example.com", {{"POST", "/v1/messages"}}},
      {"*.eu.example.com", {{"PUT", "/upload/"}}},
  };
  EXPECT_EQ(DecidingHttpRule(rules, "api.example.com"), &rules[1]);
  EXPECT_EQ(DecidingHttpRule(rules, "API.Example.com."), &rules[1]);
  EXPECT_EQ(DecidingHttpRule(rules, "cdn.example.com"), &rules[0]);
  EXPECT_EQ(DecidingHttpRule(rules, "x.eu.example.com"), &rules[2]);
  EXPECT_EQ(DecidingHttpRule(rules, "example.com"), nullptr);
  EXPECT_EQ(DecidingHttpRule(rules, "other.org"), nullptr);
  // The exact rule allows only its own entry; the wildcard's GET does not
  // reach it.
  EXPECT_TRUE(HttpRequestAllowed(rules, "api.example.com", "POST", "/v1/messages"));
  EXPECT_FALSE(HttpRequestAllowed(rules, "api.example.com", "GET", "/v1/models"));
  EXPECT_TRUE(HttpRequestAllowed(rules, "cdn.example.com", "GET", "/lib.js"));
  EXPECT_FALSE(HttpRequestAllowed(rules, "cdn.example.com", "POST", "/lib.js"));
  EXPECT_FALSE(HttpRequestAllowed(rules, "x.eu.example.com", "GET", "/"));
  EXPECT_TRUE(HttpRequestAllowed(rules, "x.eu.example.com", "PUT", "/upload/a"));
  EXPECT_TRUE(HttpRequestAllowed(rules, "other.org", "DELETE", "/anything"));
  EXPECT_TRUE(HttpRequestAllowed({}, "api.example.com", "DELETE", "/"));
}

TEST(HttpRuleTest, InjectHeaderIsALowerCaseTokenThatDoesNotFrameTheRequest) {
  absl::StatusOr<std::string> h = CheckInjectHeaderName("X-Api-Key");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, "x-api-key");
  EXPECT_TRUE(CheckInjectHeaderName("authorization").ok());
  const std::pair<const char*, const char*> refused[] = {
      {"Host", "frames or routes the request"},
      {"content-length", "frames or routes the request"},
      {"Transfer-Encoding", "frames or routes the request"},
      {"connection", "frames or routes the request"},
      {":authority", "pseudo-header"},
      {"", "is not a header name"},
      {"x api key", "is not a header name"},
      {"x-key:", "is not a header name"},
      {"x-k\xc3\xa9y", "is not a header name"},
  };
  for (const auto& [name, why] : refused) {
    absl::StatusOr<std::string> r = CheckInjectHeaderName(name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << name;
  }
}

}  // namespace
}  // namespace lazaret::vocab
