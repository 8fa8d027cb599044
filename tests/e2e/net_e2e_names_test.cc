// The egress policy end to end, by name: a names-only profile
// (default_allow = [], allow_domains) whose resolver is the router, which
// relays to lazaret-netpolicyd, which asks the test's own DNS server
// (network.dns_upstream) from the host. A listed name resolves, through
// /etc/resolv.conf (getent, glibc) and the probe, and opens exactly its
// addresses; an unlisted one is refused and never reaches the upstream
// (its query counts prove it); a listed name answering a private or host
// address is refused. Part of net_e2e_test (same binary); runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/net_e2e_fixture.h"

namespace lazaret::test::e2e::net {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(NetE2eTest, ListedNameResolvesThroughResolvConfAndConnects) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  // Nothing is open by address in this profile until a name opens it.
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPublicV4, kPort}), "before the name resolved");
  CommandResult getent = s->Getent({"ahostsv4", kNameOk});
  EXPECT_EQ(getent.exit_code, 0) << getent.err;
  EXPECT_THAT(getent.out, HasSubstr(kPublicV4));
  auto r = s->Probes({{"a", {"dns", kNameOk}},
                      {"aaaa", {"dns", kNameOk, "--type", "AAAA"}},
                      {"tcp", {"dns", kNameOk, "--tcp"}},
                      {"v4", {"connect", kPublicV4, kPort}},
                      {"v6", {"connect", kPublicV6, kPort}},
                      {"other", {"connect", kPublicLive, kPort}}});
  EXPECT_EQ(r["a"].rcode, "NOERROR") << r["a"].line;
  EXPECT_TRUE(HasAnswer(r["a"], kPublicV4)) << r["a"].line;
  EXPECT_TRUE(HasAnswer(r["aaaa"], kPublicV6)) << r["aaaa"].line;
  EXPECT_TRUE(HasAnswer(r["tcp"], kPublicV4)) << r["tcp"].line;
  EXPECT_CONNECTS(r["v4"], "the address ok.lzt.test answered");
  EXPECT_CONNECTS(r["v6"], "the IPv6 address ok.lzt.test answered");
  // A name opens its own addresses, nothing beside them.
  EXPECT_REFUSED_FAST(r["other"], "a public address no name answered");
  EXPECT_GE(W().dns().QueryCount(kNameOk), 1);
}

TEST_F(NetE2eTest, UnlistedNameGetsNoAnswerAndNeverReachesTheUpstream) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  const std::string exfil = "c2VjcmV0LWRhdGE.exfil.lzt.test";
  auto r = s->Probes({{"a", {"dns", kNameSecret}},
                      {"aaaa", {"dns", kNameSecret, "--type", "AAAA"}},
                      {"tcp", {"dns", kNameSecret, "--tcp"}},
                      {"exfil", {"dns", exfil}},
                      {"apex", {"dns", kNameWildApex}}});
  for (const char* label : {"a", "aaaa", "tcp", "exfil", "apex"}) {
    EXPECT_TRUE(r[label].parsed) << label << ": " << r[label].line;
    EXPECT_NE(r[label].rcode, "NOERROR") << label << ": " << r[label].line;
    EXPECT_TRUE(r[label].answers.empty()) << label << ": " << r[label].line;
  }
  EXPECT_EQ(r["a"].rcode, "REFUSED") << r["a"].line;
  CommandResult getent = s->Getent({"hosts", kNameSecret});
  EXPECT_EQ(getent.exit_code, 2) << getent.out << getent.err;  // 2: not found
  EXPECT_EQ(W().dns().QueryCount(kNameSecret), 0) << W().dns().CountsText();
  EXPECT_EQ(W().dns().QueryCount(exfil), 0) << W().dns().CountsText();
  EXPECT_EQ(W().dns().QueryCount(kNameWildApex), 0) << W().dns().CountsText();
}

TEST_F(NetE2eTest, ListedNameAnsweringAPrivateOrHostAddressIsRefused) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  const std::string host_port = std::to_string(W().host_listener().port());
  auto r = s->Probes({{"private", {"dns", kNamePrivate}},
                      {"hostaddr", {"dns", kNameHostAddr}},
                      {"connect-private", {"connect", kPrivate10, kPort}},
                      {"connect-hostaddr", {"connect", kPublicHostSide, host_port}}});
  EXPECT_FALSE(HasAnswer(r["private"], kPrivate10)) << r["private"].line;
  EXPECT_NE(r["private"].rcode, "NOERROR") << r["private"].line;
  EXPECT_FALSE(HasAnswer(r["hostaddr"], kPublicHostSide)) << r["hostaddr"].line;
  EXPECT_REFUSED_FAST(r["connect-private"], "a private address a listed name answered");
  EXPECT_REFUSED_FAST(r["connect-hostaddr"], "a host address a listed name answered");
  // Refused because of the answer, not for lack of asking.
  EXPECT_GE(W().dns().QueryCount(kNamePrivate), 1);
  EXPECT_GE(W().dns().QueryCount(kNameHostAddr), 1);
  EXPECT_EQ(W().host("priv").listeners().CountTo(kPrivate10), 0u);
}

TEST_F(NetE2eTest, CnameChainIsFollowedAndOnlyItsEndIsOpened) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPublicCname, kPort}), "before the name resolved");
  ProbeResult chain = s->Probe({"dns", kNameChain});
  EXPECT_EQ(chain.rcode, "NOERROR") << chain.line;
  EXPECT_TRUE(HasAnswer(chain, "cname:hop.lzt-cdn.test")) << chain.line;
  EXPECT_TRUE(HasAnswer(chain, "cname:end.lzt-cdn.test")) << chain.line;
  EXPECT_TRUE(HasAnswer(chain, kPublicCname)) << chain.line;
  CommandResult getent = s->Getent({"ahostsv4", kNameChain});
  EXPECT_THAT(getent.out, HasSubstr(kPublicCname)) << getent.err;
  EXPECT_CONNECTS(s->Probe({"connect", kPublicCname, kPort}), "the chain's end");
  // The chain's end is not itself a listed name.
  EXPECT_EQ(s->Probe({"dns", "end.lzt-cdn.test"}).rcode, "REFUSED");
}

TEST_F(NetE2eTest, WildcardCoversNamesBelowItNotItself) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  ProbeResult below = s->Probe({"dns", kNameWild});
  EXPECT_EQ(below.rcode, "NOERROR") << below.line;
  EXPECT_TRUE(HasAnswer(below, "198.51.100.4")) << below.line;
  EXPECT_CONNECTS(s->Probe({"connect", "198.51.100.4", kPort}), kNameWild);
  ProbeResult apex = s->Probe({"dns", kNameWildApex});
  EXPECT_EQ(apex.rcode, "REFUSED") << apex.line;
  EXPECT_EQ(W().dns().QueryCount(kNameWildApex), 0);
}

TEST_F(NetE2eTest, LiveNameAllowAndDenyApplyToTheNextQuery) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  EXPECT_EQ(s->Probe({"dns", kNameLate}).rcode, "REFUSED");
  EXPECT_EQ(W().dns().QueryCount(kNameLate), 0);
  CommandResult allow = LazaretNet({"allow", s->id(), kNameLate});
  ASSERT_EQ(allow.exit_code, 0) << allow.out << allow.err;
  ProbeResult late = s->Probe({"dns", kNameLate});
  EXPECT_EQ(late.rcode, "NOERROR") << late.line;
  EXPECT_TRUE(HasAnswer(late, "198.51.100.5")) << late.line;
  EXPECT_CONNECTS(s->Probe({"connect", "198.51.100.5", kPort}), "a name allowed live");
  CommandResult deny = LazaretNet({"deny", s->id(), kNameLate});
  ASSERT_EQ(deny.exit_code, 0) << deny.out << deny.err;
  EXPECT_EQ(s->Probe({"dns", kNameLate}).rcode, "REFUSED");
  // Its name routes went with it.
  EXPECT_REFUSED_FAST(s->Probe({"connect", "198.51.100.5", kPort}), "after the live deny");
}

TEST_F(NetE2eTest, NetLogShowsTheRefusedName) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  const std::string name = "logged-refusal.lzt.test";
  EXPECT_EQ(s->Probe({"dns", name}).rcode, "REFUSED");
  CommandResult log;
  EXPECT_TRUE(test::WaitFor(
      [&] {
        log = LazaretNet({"log", s->id()});
        return log.out.find(name) != std::string::npos;
      },
      std::chrono::seconds(5)))
      << log.out << log.err;
  EXPECT_EQ(log.exit_code, 0) << log.err;
  EXPECT_EQ(W().dns().QueryCount(name), 0);
}

TEST_F(NetE2eTest, NamesResolveFreelyWhereThePublicInternetIsAllowedButAddressesArePoliced) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  auto r = s->Probes({{"free", {"dns", kNameFree}}, {"private", {"dns", kNamePrivate}}});
  EXPECT_EQ(r["free"].rcode, "NOERROR") << r["free"].line;
  EXPECT_TRUE(HasAnswer(r["free"], kPublicV4)) << r["free"].line;
  EXPECT_FALSE(HasAnswer(r["private"], kPrivate10)) << r["private"].line;
  CommandResult getent = s->Getent({"ahostsv4", kNameFree});
  EXPECT_THAT(getent.out, HasSubstr(kPublicV4)) << getent.err;
  EXPECT_THAT(s->Getent({"ahostsv4", kNamePrivate}).out, Not(HasSubstr(kPrivate10)));
}

}  // namespace
}  // namespace lazaret::test::e2e::net
