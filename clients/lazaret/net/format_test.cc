#include "clients/lazaret/net/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "services/common/fs/sha256.h"

namespace lazaret::cli::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rpb = ::lazaret::netrouter::v1;
namespace cpb = ::lazaret::common::v1;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1700000000;

pb::RuleSource Source(pb::RuleKind kind, const std::string& detail = "", int64_t expires = 0) {
  pb::RuleSource s;
  s.set_kind(kind);
  s.set_detail(detail);
  s.set_expires_unix(expires);
  return s;
}

pb::RuleSource ConfigSource(cpb::ConfigLayer layer, const std::string& file, uint32_t line,
                            const std::string& key) {
  pb::RuleSource s = Source(pb::RULE_KIND_CONFIG);
  s.set_layer(layer);
  s.set_file(file);
  s.set_line(line);
  s.set_key_path(key);
  return s;
}

pb::Rule MakeRule(const std::string& cidr, pb::RuleAction action, pb::RuleSource source) {
  pb::Rule r;
  r.mutable_destination()->set_prefix(cidr);
  r.set_action(action);
  *r.mutable_source() = std::move(source);
  return r;
}

rpb::Route MakeRoute(const std::string& cidr, rpb::RouteAction action) {
  rpb::Route r;
  r.mutable_destination()->set_prefix(cidr);
  r.set_action(action);
  return r;
}

// A request line shows what was asked and decided, secrets by name, and
// escapes what the sandbox wrote.
TEST(RequestLineTest, WhatWasAskedDecidedAndInjectedEscaped) {
  ::lazaret::egress::v1::RequestRecord r;
  r.set_time_unix_ms(1764950400123);
  r.set_protocol("HTTP/2");
  r.set_method("POST");
  r.set_host("api.anthropic.com");
  r.set_path("/v1/messages\x1b[2J");
  r.set_status(200);
  r.set_request_bytes(120);
  r.set_response_bytes(4096);
  r.set_duration_ms(350);
  r.add_secrets("anthropic");
  r.set_rule("http \"api.anthropic.com\": POST /v1/messages");
  const std::string line = RequestLine(r);
  EXPECT_THAT(line, HasSubstr("2025-12-05T16:00:00.123Z"));
  EXPECT_THAT(line, HasSubstr("POST api.anthropic.com/v1/messages"));
  EXPECT_THAT(line, HasSubstr("200  120B up 4096B down  350ms  secrets anthropic"));
  EXPECT_THAT(line, Not(HasSubstr("\x1b")));
  r.set_status(403);
  r.set_refused("secret \"github\" is not sent to api.anthropic.com");
  EXPECT_THAT(RequestLine(r), HasSubstr("REFUSED: secret"));
  absl::StatusOr<std::string> json = RequestJson(r);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"response_bytes\":\"4096\""));
  EXPECT_EQ(json->back(), '\n');
}

TEST(RemainingTextTest, SecondsMinutesHours) {
  EXPECT_EQ(RemainingText(53), "53 s");
  EXPECT_EQ(RemainingText(119), "119 s");
  EXPECT_EQ(RemainingText(600), "10 min");
  EXPECT_EQ(RemainingText(7500), "2 h 5 min");
  EXPECT_EQ(RemainingText(7200), "2 h");
  EXPECT_EQ(RemainingText(0), "expired");
}

TEST(RuleSourceTextTest, EveryKindSaysWhereTheRuleCameFrom) {
  EXPECT_EQ(
      RuleSourceText(ConfigSource(cpb::CONFIG_LAYER_USER, "/home/u/.config/lazaret/config.toml", 12,
                                  "profiles.p.allow_egress"),
                     kNow),
      "user /home/u/.config/lazaret/config.toml:12 profiles.p.allow_egress");
  EXPECT_EQ(
      RuleSourceText(
          ConfigSource(cpb::CONFIG_LAYER_EMBEDDED_DEFAULT, "", 0, "network.default_deny"), kNow),
      "default network.default_deny");
  EXPECT_EQ(RuleSourceText(ConfigSource(cpb::CONFIG_LAYER_EXPLICIT, "/ci.toml", 3, "x"), kNow),
            "--config /ci.toml:3 x");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_HOST_ADDRESS, "eth0"), kNow), "host address eth0");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_DERIVED, "10.0.0.0/8"), kNow),
            "derived from 10.0.0.0/8");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_NAME, "api.x.com", kNow + 53), kNow),
            "name api.x.com, expires in 53 s");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_NAME, "api.x.com", kNow - 1), kNow),
            "name api.x.com, expired");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_LIVE, "", kNow + 600), kNow),
            "live, expires in 10 min");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_LIVE), kNow), "live, for the rest of the session");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_GATEWAY, "10.0.2.2"), kNow),
            "sidecar gateway 10.0.2.2");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_ALWAYS, "link-local"), kNow),
            "always denied link-local");
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_DEFAULT), kNow), "family default");
}

TEST(RuleSourceTextTest, AgentTextIsEscaped) {
  EXPECT_EQ(RuleSourceText(Source(pb::RULE_KIND_NAME, "a\x1b[2J.com"), kNow), "name a\\x1b[2J.com");
}

TEST(RoutesDigestTest, SortedLikeTheRouterWhateverTheOrderReceived) {
  google::protobuf::RepeatedPtrField<rpb::Route> routes;
  *routes.Add() = MakeRoute("::/0", rpb::ROUTE_ACTION_PROHIBIT);
  *routes.Add() = MakeRoute("10.1.2.3/32", rpb::ROUTE_ACTION_ALLOW);
  *routes.Add() = MakeRoute("0.0.0.0/0", rpb::ROUTE_ACTION_PROHIBIT);
  *routes.Add() = MakeRoute("9.0.0.0/8", rpb::ROUTE_ACTION_ALLOW);
  *routes.Add() = MakeRoute("10.0.0.0/8", rpb::ROUTE_ACTION_PROHIBIT);
  fs::Sha256 sha;
  // 9.0.0.0 sorts before 10.0.0.0 by address bytes, not as text; at the
  // same address the shorter prefix first.
  sha.Update(
      "prohibit 0.0.0.0/0\nallow 9.0.0.0/8\nprohibit 10.0.0.0/8\nallow 10.1.2.3/32\n"
      "prohibit ::/0\n");
  absl::StatusOr<std::string> d = RoutesDigest(routes);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, sha.HexDigest());
  *routes.Add() = MakeRoute("10.0.0.0/8", rpb::ROUTE_ACTION_UNSPECIFIED);
  EXPECT_FALSE(RoutesDigest(routes).ok());
}

pb::SessionPolicy SamplePolicy() {
  pb::SessionPolicy p;
  p.mutable_session()->set_id("0123456789ab");
  p.set_profile("dev");
  p.set_generation(7);
  p.add_dns_upstream("192.0.2.53");
  *p.add_rules() = MakeRule(
      "10.1.2.3/32", pb::RULE_ACTION_ALLOW,
      ConfigSource(cpb::CONFIG_LAYER_USER, "/u/config.toml", 12, "profiles.dev.allow_egress"));
  *p.add_rules() =
      MakeRule("10.0.0.0/8", pb::RULE_ACTION_DENY,
               ConfigSource(cpb::CONFIG_LAYER_EMBEDDED_DEFAULT, "", 0, "network.default_deny"));
  *p.add_rules() = MakeRule("::ffff:10.0.0.0/104", pb::RULE_ACTION_DENY,
                            Source(pb::RULE_KIND_DERIVED, "10.0.0.0/8"));
  *p.add_rules() = MakeRule("0.0.0.0/0", pb::RULE_ACTION_DENY, Source(pb::RULE_KIND_DEFAULT));
  pb::NameRule* n = p.add_names();
  n->set_pattern("api.example.com");
  n->set_action(pb::RULE_ACTION_ALLOW);
  *n->mutable_source() =
      ConfigSource(cpb::CONFIG_LAYER_USER, "/u/config.toml", 14, "profiles.dev.allow_domains");
  *p.add_installed() = MakeRoute("0.0.0.0/0", rpb::ROUTE_ACTION_PROHIBIT);
  *p.add_installed() = MakeRoute("10.0.0.0/8", rpb::ROUTE_ACTION_PROHIBIT);
  *p.add_installed() = MakeRoute("10.1.2.3/32", rpb::ROUTE_ACTION_ALLOW);
  *p.add_installed() = MakeRoute("::/0", rpb::ROUTE_ACTION_PROHIBIT);
  *p.add_installed() = MakeRoute("::ffff:10.0.0.0/104", rpb::ROUTE_ACTION_PROHIBIT);
  p.set_digest(*RoutesDigest(p.installed()));
  p.set_router_reachable(true);
  return p;
}

TEST(PolicyTextTest, HeaderRulesNamesAndInstalledRoutes) {
  const std::string text = PolicyText(SamplePolicy(), kNow);
  EXPECT_THAT(text, HasSubstr("session     0123456789ab\n"));
  EXPECT_THAT(text, HasSubstr("profile     dev\n"));
  EXPECT_THAT(text, HasSubstr("generation  7\n"));
  EXPECT_THAT(text, HasSubstr("names_unrestricted  no"));
  EXPECT_THAT(text, HasSubstr("dns upstream  192.0.2.53\n"));
  EXPECT_THAT(text, HasSubstr("  ACTION  DESTINATION          SOURCE\n"));
  EXPECT_THAT(text, HasSubstr("  allow   10.1.2.3/32          user /u/config.toml:12 "
                              "profiles.dev.allow_egress\n"));
  EXPECT_THAT(text, HasSubstr("  deny    10.0.0.0/8           default network.default_deny\n"));
  EXPECT_THAT(text, HasSubstr("  deny    ::ffff:10.0.0.0/104  derived from 10.0.0.0/8\n"));
  EXPECT_THAT(text, HasSubstr("  allow   api.example.com  user /u/config.toml:14 "
                              "profiles.dev.allow_domains\n"));
  EXPECT_THAT(text, HasSubstr("installed   5 routes, matching the applied digest\n"));
  // The rules in the order netpolicyd gave them.
  EXPECT_LT(text.find("10.1.2.3/32"), text.find("10.0.0.0/8"));
}

TEST(PolicyTextTest, ADigestThatDoesNotMatchOrAnUnreachableRouterIsSaid) {
  pb::SessionPolicy p = SamplePolicy();
  p.mutable_installed()->RemoveLast();
  EXPECT_THAT(PolicyText(p, kNow),
              HasSubstr("installed   4 routes, NOT matching the applied digest (read back "));
  p.set_router_reachable(false);
  EXPECT_THAT(PolicyText(p, kNow),
              HasSubstr("installed   unknown: the session's router did not answer"));
  p.set_names_unrestricted(true);
  p.clear_names();
  EXPECT_THAT(PolicyText(p, kNow), HasSubstr("names_unrestricted  yes"));
  EXPECT_THAT(PolicyText(p, kNow), HasSubstr("(none listed; every name resolves)"));
}

TEST(PolicyJsonTest, ProtoFieldNamesAndEveryField) {
  absl::StatusOr<std::string> json = PolicyJson(SamplePolicy());
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"names_unrestricted\": false"));
  EXPECT_THAT(*json, HasSubstr("\"router_reachable\": true"));
  EXPECT_THAT(*json, HasSubstr("\"key_path\": \"profiles.dev.allow_egress\""));
  EXPECT_THAT(*json, HasSubstr("\"action\": \"RULE_ACTION_ALLOW\""));
  EXPECT_THAT(*json, HasSubstr("\"generation\": \"7\""));
  EXPECT_THAT(*json, Not(HasSubstr("namesUnrestricted")));
}

TEST(TestTextTest, EachAddressWithItsRuleAndTheKernelsAnswer) {
  pb::TestDestinationResponse r;
  r.set_allowed(true);
  r.set_name_answered(true);
  r.mutable_name_rule()->set_pattern("api.example.com");
  r.mutable_name_rule()->set_action(pb::RULE_ACTION_ALLOW);
  *r.mutable_name_rule()->mutable_source() =
      ConfigSource(cpb::CONFIG_LAYER_USER, "/u/config.toml", 14, "profiles.dev.allow_domains");
  pb::AddressVerdict* a = r.add_addresses();
  a->set_address("192.0.2.10");
  a->set_allowed(true);
  *a->mutable_rule() = MakeRule("192.0.2.10/32", pb::RULE_ACTION_ALLOW,
                                Source(pb::RULE_KIND_NAME, "api.example.com", kNow + 53));
  a->mutable_kernel()->set_allowed(true);
  a->mutable_kernel()->set_route_type("unicast");
  a->mutable_kernel()->set_device("tap0");
  a->mutable_kernel()->mutable_policy_route()->set_prefix("192.0.2.10/32");
  pb::AddressVerdict* b = r.add_addresses();
  b->set_address("2001:db8::10");
  b->set_allowed(false);
  *b->mutable_rule() = MakeRule("::/0", pb::RULE_ACTION_DENY, Source(pb::RULE_KIND_DEFAULT));
  b->mutable_kernel()->set_allowed(true);
  r.set_explanation("allowed: api.example.com is listed");
  const std::string text = TestText(r, "api.example.com:443/tcp", kNow);
  EXPECT_THAT(text, HasSubstr("api.example.com:443/tcp: allowed\n"));
  EXPECT_THAT(text, HasSubstr("  name: answered by allow api.example.com (user /u/config.toml:14 "
                              "profiles.dev.allow_domains)\n"));
  EXPECT_THAT(text, HasSubstr("  192.0.2.10    allowed by allow 192.0.2.10/32 (name "
                              "api.example.com, expires in 53 s)\n"));
  EXPECT_THAT(text, HasSubstr("kernel: allowed (unicast, via tap0, policy route 192.0.2.10/32)\n"));
  EXPECT_THAT(text, HasSubstr("  2001:db8::10  denied  by deny ::/0 (family default)\n"));
  EXPECT_THAT(text, HasSubstr("kernel: allowed  MISMATCH: the policy and the kernel disagree\n"));
  EXPECT_THAT(text, HasSubstr("  allowed: api.example.com is listed\n"));
}

TEST(TestTextTest, AnAddressWithoutAName) {
  pb::TestDestinationResponse r;
  pb::AddressVerdict* a = r.add_addresses();
  a->set_address("10.0.2.2");
  *a->mutable_rule() =
      MakeRule("10.0.2.2/32", pb::RULE_ACTION_DENY, Source(pb::RULE_KIND_GATEWAY, "10.0.2.2"));
  a->mutable_kernel()->set_route_type("prohibit");
  a->mutable_kernel()->mutable_policy_route()->set_prefix("10.0.2.2/32");
  const std::string text = TestText(r, "10.0.2.2:80/tcp", kNow);
  EXPECT_THAT(text, HasSubstr("10.0.2.2:80/tcp: denied\n"));
  EXPECT_THAT(text, Not(HasSubstr("name:")));
  EXPECT_THAT(text, HasSubstr("kernel: denied (prohibit, policy route 10.0.2.2/32)\n"));
  EXPECT_THAT(text, Not(HasSubstr("MISMATCH")));
}

TEST(LogLineTest, OneEscapedLinePerEntry) {
  pb::LogEntry e;
  e.set_time_unix_ms(1700000000123);
  e.set_kind(pb::LOG_KIND_NAME_REFUSED);
  e.set_name("evil\x1b]0;owned\x07.example");
  e.set_query_type("A");
  e.set_detail("not listed");
  EXPECT_EQ(LogLine(e),
            "2023-11-14T22:13:20.123Z  name-refused     evil\\x1b]0;owned\\x07.example  A  -  not "
            "listed");
  pb::LogEntry d;
  d.set_time_unix_ms(1700000000000);
  d.set_kind(pb::LOG_KIND_ADDRESS_DROPPED);
  d.set_name("rebind.example.com");
  d.set_query_type("AAAA");
  d.add_addresses("fd00::1");
  d.add_addresses("10.0.0.1");
  EXPECT_EQ(
      LogLine(d),
      "2023-11-14T22:13:20.000Z  address-dropped  rebind.example.com  AAAA  fd00::1,10.0.0.1");
}

TEST(LogLineTest, ConnectsShowProcessDestinationRuleAndCount) {
  pb::LogEntry e;
  e.set_time_unix_ms(1700000000123);
  e.set_kind(pb::LOG_KIND_CONNECT_REFUSED);
  e.set_process("perl\x1b[2J");
  e.set_destination("2001:db8::2");
  e.set_port(443);
  e.mutable_rule()->set_action(pb::RULE_ACTION_DENY);
  e.mutable_rule()->mutable_destination()->set_prefix("2001:db8::/32");
  e.set_detail("refused by the route table (EACCES)");
  e.set_count(3);
  const std::string line = LogLine(e);
  EXPECT_THAT(line, ::testing::StartsWith("2023-11-14T22:13:20.123Z  connect-refused  "
                                          "perl\\x1b[2J  [2001:db8::2]:443  deny 2001:db8::/32"));
  EXPECT_THAT(line, ::testing::EndsWith("refused by the route table (EACCES)  (x3)"));
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
}

TEST(LogEntryJsonTest, OneLineWithProtoFieldNames) {
  pb::LogEntry e;
  e.set_kind(pb::LOG_KIND_CONNECT_ALLOWED);
  e.set_process("a\nb");
  e.set_port(80);
  absl::StatusOr<std::string> j = LogEntryJson(e);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(*j, "{\"kind\":\"LOG_KIND_CONNECT_ALLOWED\",\"port\":80,\"process\":\"a\\nb\"}\n");
}

TEST(AppliedTextTest, GenerationRoutesDigest) {
  pb::PolicyApplied a;
  a.set_generation(8);
  a.set_routes(25);
  a.set_digest("ab12");
  EXPECT_EQ(AppliedText(a), "generation 8 (25 routes, digest ab12)");
}

}  // namespace
}  // namespace lazaret::cli::net
