#include "sidecar/policy_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/common/fs/sha256.h"

namespace lazaret::netrouter {
namespace {

using ::testing::HasSubstr;

google::protobuf::RepeatedPtrField<v1::Route> Routes(
    std::initializer_list<std::pair<const char*, v1::RouteAction>> list) {
  google::protobuf::RepeatedPtrField<v1::Route> out;
  for (const auto& [cidr, action] : list) {
    v1::Route* r = out.Add();
    r->mutable_destination()->set_prefix(cidr);
    r->set_action(action);
  }
  return out;
}

constexpr auto kAllow = v1::ROUTE_ACTION_ALLOW;
constexpr auto kProhibit = v1::ROUTE_ACTION_PROHIBIT;

PolicySet Set(std::initializer_list<std::pair<const char*, v1::RouteAction>> list) {
  absl::StatusOr<PolicySet> s = ValidateRoutes(Routes(list));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : PolicySet{};
}

std::vector<std::string> Phase(const PolicyDiff& d, int phase) {
  std::vector<std::string> out;
  for (const RouteChange& c : d.phases[phase]) {
    out.push_back(absl::StrCat(ActionName(c.route.action), " ", c.route.prefix.ToString()));
  }
  return out;
}

TEST(PolicyTableTest, AcceptsACanonicalPolicyAndSortsIt) {
  PolicySet s = Set({{"::/0", kProhibit},
                     {"10.1.2.3/32", kAllow},
                     {"0.0.0.0/0", kProhibit},
                     {"10.0.0.0/8", kProhibit},
                     {"fd00::/8", kProhibit}});
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].prefix.ToString(), "0.0.0.0/0");
  EXPECT_EQ(s[1].prefix.ToString(), "10.0.0.0/8");
  EXPECT_EQ(s[2].prefix.ToString(), "10.1.2.3/32");
  EXPECT_EQ(s[3].prefix.ToString(), "::/0");
  EXPECT_EQ(s[4].prefix.ToString(), "fd00::/8");
}

TEST(PolicyTableTest, RefusesNonCanonicalAndInvalidDestinationsByIndex) {
  auto err = [](std::initializer_list<std::pair<const char*, v1::RouteAction>> l) {
    return std::string(ValidateRoutes(Routes(l)).status().message());
  };
  EXPECT_THAT(err({{"0.0.0.0/0", kProhibit}, {"::/0", kProhibit}, {"10.1.2.3/8", kAllow}}),
              AllOf(HasSubstr("route 2"), HasSubstr("did you mean \"10.0.0.0/8\"")));
  EXPECT_THAT(err({{"0.0.0.0/0", kProhibit}, {"::/0", kProhibit}, {"fd00:0::/8", kAllow}}),
              AllOf(HasSubstr("route 2"), HasSubstr("write \"fd00::/8\"")));
  EXPECT_THAT(err({{"0.0.0.0/0", kProhibit}, {"::/0", kProhibit}, {"10.0.0.1", kAllow}}),
              HasSubstr("no prefix length"));
  EXPECT_THAT(err({{"0.0.0.0/0", kProhibit}, {"::/0", v1::ROUTE_ACTION_UNSPECIFIED}}),
              AllOf(HasSubstr("route 1"), HasSubstr("no action")));
}

TEST(PolicyTableTest, RefusesTwoRoutesForOneDestination) {
  absl::Status s = ValidateRoutes(Routes({{"0.0.0.0/0", kProhibit},
                                          {"10.0.0.0/8", kAllow},
                                          {"::/0", kProhibit},
                                          {"10.0.0.0/8", kProhibit}}))
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("routes 1 and 3"), HasSubstr("10.0.0.0/8")));
}

TEST(PolicyTableTest, RequiresBothDefaults) {
  EXPECT_THAT(ValidateRoutes(Routes({{"0.0.0.0/0", kProhibit}})).status().message(),
              HasSubstr("IPv6 default (::/0)"));
  EXPECT_THAT(ValidateRoutes(Routes({{"::/0", kAllow}, {"10.0.0.0/8", kAllow}})).status().message(),
              HasSubstr("IPv4 default (0.0.0.0/0)"));
}

TEST(PolicyTableTest, BoundsTheNumberOfRoutes) {
  google::protobuf::RepeatedPtrField<v1::Route> many;
  for (size_t i = 0; i <= kMaxPolicyRoutes; ++i) many.Add();
  EXPECT_THAT(ValidateRoutes(many).status().message(), HasSubstr("too many routes"));
}

TEST(PolicyTableTest, DiffClosesBeforeItOpensAndRemovesAllowsBeforeProhibits) {
  PolicySet old_set = Set({{"0.0.0.0/0", kProhibit},
                           {"::/0", kProhibit},
                           {"10.1.0.0/16", kAllow},
                           {"10.1.2.0/24", kProhibit},
                           {"192.0.2.0/24", kAllow},
                           {"198.51.100.0/24", kProhibit}});
  PolicySet new_set = Set({{"0.0.0.0/0", kProhibit},
                           {"::/0", kProhibit},
                           {"192.0.2.0/24", kProhibit},
                           {"198.51.100.0/24", kAllow},
                           {"203.0.113.0/24", kAllow},
                           {"10.9.0.0/16", kProhibit}});
  PolicyDiff d = Diff(old_set, new_set);
  EXPECT_THAT(Phase(d, 0), ::testing::ElementsAre("prohibit 10.9.0.0/16", "prohibit 192.0.2.0/24"));
  EXPECT_THAT(Phase(d, 1), ::testing::ElementsAre("allow 203.0.113.0/24"));
  EXPECT_THAT(Phase(d, 2), ::testing::ElementsAre("allow 198.51.100.0/24"));
  EXPECT_THAT(Phase(d, 3), ::testing::ElementsAre("allow 10.1.0.0/16"));
  EXPECT_THAT(Phase(d, 4), ::testing::ElementsAre("prohibit 10.1.2.0/24"));
  EXPECT_EQ(d.added, 2u);
  EXPECT_EQ(d.replaced, 2u);
  EXPECT_EQ(d.removed, 2u);
  EXPECT_EQ(d.phases[0][1].kind, RouteChange::Kind::kReplace);
  EXPECT_TRUE(Diff(new_set, new_set).empty());
}

TEST(PolicyTableTest, DigestIsSha256OfSortedActionLines) {
  PolicySet s = Set({{"::/0", kProhibit}, {"0.0.0.0/0", kProhibit}, {"10.1.2.3/32", kAllow}});
  fs::Sha256 expected;
  expected.Update("prohibit 0.0.0.0/0\nallow 10.1.2.3/32\nprohibit ::/0\n");
  EXPECT_EQ(Digest(s), expected.HexDigest());
  EXPECT_EQ(Digest(ClosedPolicy()), Digest(Set({{"::/0", kProhibit}, {"0.0.0.0/0", kProhibit}})));
}

TEST(PolicyTableTest, GenerationRules) {
  EXPECT_EQ(CheckGeneration(0, "", 0, "d").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*CheckGeneration(0, "", 1, "d"), GenerationVerdict::kApply);
  EXPECT_EQ(*CheckGeneration(3, "d", 3, "d"), GenerationVerdict::kAlreadyApplied);
  absl::Status other = CheckGeneration(3, "d", 3, "e").status();
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("already applied with other routes"));
  absl::Status older = CheckGeneration(3, "d", 2, "d").status();
  EXPECT_EQ(older.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(older.message(), HasSubstr("older than the applied generation 3"));
  EXPECT_EQ(*CheckGeneration(3, "d", 4, "d"), GenerationVerdict::kApply);
}

TEST(PolicyTableTest, LongestMatchPicksTheNarrowestCoveringRoute) {
  PolicySet s = Set({{"0.0.0.0/0", kProhibit},
                     {"::/0", kProhibit},
                     {"10.0.0.0/8", kProhibit},
                     {"10.1.2.3/32", kAllow},
                     {"::ffff:10.0.0.0/104", kProhibit}});
  const uint8_t a[4] = {10, 1, 2, 3};
  const uint8_t b[4] = {10, 1, 2, 4};
  const uint8_t c[4] = {11, 0, 0, 1};
  EXPECT_EQ(LongestMatch(s, AF_INET, a)->prefix.ToString(), "10.1.2.3/32");
  EXPECT_EQ(LongestMatch(s, AF_INET, b)->prefix.ToString(), "10.0.0.0/8");
  EXPECT_EQ(LongestMatch(s, AF_INET, c)->prefix.ToString(), "0.0.0.0/0");
  uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 9, 9, 9};
  EXPECT_EQ(LongestMatch(s, AF_INET6, mapped)->prefix.ToString(), "::ffff:10.0.0.0/104");
}

}  // namespace
}  // namespace lazaret::netrouter
