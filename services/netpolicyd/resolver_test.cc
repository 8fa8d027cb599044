#include "services/netpolicyd/resolver.h"

#include <arpa/inet.h>

#include <chrono>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/support/test_dns_server.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

using ::lazaret::test::ParseTestDnsRecord;
using ::lazaret::test::TestDnsServer;
using ::lazaret::test::TestDnsServerOptions;

dns::Question QuestionOf(std::vector<std::string> labels, uint16_t type = dns::kTypeA) {
  return dns::Question{std::move(labels), type, dns::kClassIn};
}

std::unique_ptr<TestDnsServer> Server(bool truncate_udp = false, bool silent_udp = false,
                                      int forced_rcode = 0) {
  TestDnsServerOptions o;
  o.truncate_udp = truncate_udp;
  o.silent_udp = silent_udp;
  o.forced_rcode = forced_rcode;
  o.records.push_back(*ParseTestDnsRecord("www.a.test=CNAME:edge.a.test"));
  o.records.push_back(*ParseTestDnsRecord("edge.a.test=A:192.0.2.7@120"));
  auto s = TestDnsServer::Start(std::move(o));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

Resolver For(const std::vector<const TestDnsServer*>& servers, int timeout_ms = 300) {
  std::vector<Upstream> ups;
  for (const auto* s : servers) ups.push_back(*ParseUpstream(s->address()));
  return Resolver(ups, ResolverOptions{.timeout = std::chrono::milliseconds(timeout_ms)});
}

TEST(ResolverTest, ParsesUpstreams) {
  EXPECT_EQ(ParseUpstream("192.0.2.53")->text, "192.0.2.53:53");
  EXPECT_EQ(ParseUpstream("192.0.2.53:5353")->text, "192.0.2.53:5353");
  EXPECT_EQ(ParseUpstream("[2001:db8::53]:5353")->text, "[2001:db8::53]:5353");
  EXPECT_EQ(ParseUpstream("2001:db8::53")->text, "[2001:db8::53]:53");
  for (const char* bad :
       {"", "name.test:53", "192.0.2.53:0", "192.0.2.53:70000", "[::1", "[::1]x", "1.2.3.4:x"}) {
    EXPECT_FALSE(ParseUpstream(bad).ok()) << bad;
  }
}

TEST(ResolverTest, ReadsNameserverLinesOfResolvConf) {
  auto ups = UpstreamsFromResolvConf(
      "# comment\nsearch example.test\nnameserver 192.0.2.1\nnameserver\tfe80::1%eth0\n"
      "nameserver bogus\noptions ndots:2\nnameserver 2001:db8::1 \n");
  ASSERT_TRUE(ups.ok()) << ups.status();
  ASSERT_EQ(ups->size(), 3u);
  EXPECT_EQ((*ups)[0].text, "192.0.2.1:53");
  EXPECT_EQ((*ups)[2].text, "[2001:db8::1]:53");
  EXPECT_EQ(UpstreamsFromResolvConf("search x\n").status().code(), absl::StatusCode::kNotFound);
}

TEST(ResolverTest, ConfiguredUpstreamsWinOverResolvConf) {
  test::TempDir dir("lzr");
  std::string path = dir.path() + "/resolv.conf";
  std::ofstream(path) << "nameserver 192.0.2.9\n";
  auto configured = ChooseUpstreams({"127.0.0.1:5300"}, path);
  ASSERT_TRUE(configured.ok());
  EXPECT_EQ((*configured)[0].text, "127.0.0.1:5300");
  auto host = ChooseUpstreams({}, path);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ((*host)[0].text, "192.0.2.9:53");
  EXPECT_FALSE(ChooseUpstreams({}, dir.path() + "/missing").ok());
  EXPECT_FALSE(ChooseUpstreams({"bogus"}, path).ok());
}

TEST(ResolverTest, ResolvesAChainOverUdp) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  auto response = For({server.get()}).Resolve(QuestionOf({"www", "a", "test"}));
  ASSERT_TRUE(response.ok()) << response.status();
  dns::Chain chain = dns::FollowChain(*response, QuestionOf({"www", "a", "test"}));
  ASSERT_EQ(chain.cnames.size(), 1u);
  ASSERT_EQ(chain.addresses.size(), 1u);
  EXPECT_EQ(chain.addresses[0].address[3], 7);
  EXPECT_EQ(chain.addresses[0].ttl, 120u);
  EXPECT_EQ(server->QueryCount("www.a.test"), 1);
  EXPECT_FALSE(server->Queries()[0].tcp);
}

TEST(ResolverTest, TruncatedAnswerIsAskedAgainOverTcp) {
  auto server = Server(/*truncate_udp=*/true);
  ASSERT_NE(server, nullptr);
  auto response = For({server.get()}).Resolve(QuestionOf({"edge", "a", "test"}));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->truncated);
  EXPECT_EQ(response->answers.size(), 1u);
  auto queries = server->Queries();
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_FALSE(queries[0].tcp);
  EXPECT_TRUE(queries[1].tcp);
}

TEST(ResolverTest, TimeoutRetriesOnTheNextServer) {
  auto silent = Server(false, /*silent_udp=*/true);
  auto good = Server();
  ASSERT_NE(silent, nullptr);
  ASSERT_NE(good, nullptr);
  auto start = std::chrono::steady_clock::now();
  auto response = For({silent.get(), good.get()}).Resolve(QuestionOf({"edge", "a", "test"}));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(silent->QueryCount("edge.a.test"), 1);
  EXPECT_EQ(good->QueryCount("edge.a.test"), 1);
  EXPECT_GE(took, std::chrono::milliseconds(300));
}

TEST(ResolverTest, EveryAttemptFailingIsUnavailable) {
  auto silent = Server(false, /*silent_udp=*/true);
  ASSERT_NE(silent, nullptr);
  auto response = For({silent.get()}, 100).Resolve(QuestionOf({"edge", "a", "test"}));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(silent->QueryCount("edge.a.test"), 2);  // one retry
  auto failing = Server(false, false, /*forced_rcode=*/2);
  ASSERT_NE(failing, nullptr);
  EXPECT_FALSE(For({failing.get()}).Resolve(QuestionOf({"edge", "a", "test"})).ok());
}

TEST(ResolverTest, NxdomainIsAnAnswer) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  auto response = For({server.get()}).Resolve(QuestionOf({"nope", "a", "test"}));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->rcode, dns::Rcode::kNxDomain);
  EXPECT_EQ(server->TotalQueries(), 1);
}

}  // namespace
}  // namespace lazaret::netpolicyd
