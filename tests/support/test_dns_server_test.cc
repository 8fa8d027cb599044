#include "tests/support/test_dns_server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace lazaret::test {
namespace {

std::string Query(uint16_t id, const std::string& name, uint16_t qtype) {
  std::string q = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<char>(dot - start));
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q.push_back('\0');
  q += {static_cast<char>(qtype >> 8), static_cast<char>(qtype & 0xff), 0, 1};
  return q;
}

std::string AskUdp(const TestDnsServer& server, const std::string& query) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  timeval tv{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  close(fd);
  return n > 0 ? std::string(buf, n) : "";
}

std::string AskTcp(const TestDnsServer& server, const std::string& query) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return "";
  std::string framed = {static_cast<char>(query.size() >> 8), static_cast<char>(query.size())};
  framed += query;
  (void)!write(fd, framed.data(), framed.size());
  unsigned char len[2];
  if (read(fd, len, 2) != 2) return "";
  std::string out((len[0] << 8) | len[1], '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += n;
  }
  close(fd);
  return out;
}

int AnswerCount(const std::string& m) { return (static_cast<uint8_t>(m[6]) << 8) | m[7]; }
int Rcode(const std::string& m) { return m[3] & 0xf; }

std::unique_ptr<TestDnsServer> StartWith(TestDnsServerOptions options) {
  auto s = TestDnsServer::Start(std::move(options));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(TestDnsServerTest, ParsesRecordFlags) {
  auto r = ParseTestDnsRecord("Api.Example.Test.=aaaa:fd00::1@60");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->name, "api.example.test");
  EXPECT_EQ(r->type, DnsRecordType::kAaaa);
  EXPECT_EQ(r->value, "fd00::1");
  EXPECT_EQ(r->ttl, 60u);
  EXPECT_FALSE(ParseTestDnsRecord("a.test=A:300.1.1.1").ok());
  EXPECT_FALSE(ParseTestDnsRecord("a.test=MX:x").ok());
  EXPECT_FALSE(ParseTestDnsRecord("a.test").ok());
}

TEST(TestDnsServerTest, AnswersChainOverUdpAndTcpAndCounts) {
  TestDnsServerOptions o;
  o.records = {*ParseTestDnsRecord("www.a.test=CNAME:edge.a.test"),
               *ParseTestDnsRecord("edge.a.test=A:10.9.0.1"),
               *ParseTestDnsRecord("edge.a.test=A:10.9.0.2")};
  auto server = StartWith(o);
  ASSERT_NE(server, nullptr);
  std::string udp = AskUdp(*server, Query(7, "WWW.a.test", 1));
  ASSERT_GE(udp.size(), 12u);
  EXPECT_EQ(udp[0], 0);
  EXPECT_EQ(udp[1], 7);
  EXPECT_EQ(Rcode(udp), 0);
  EXPECT_EQ(AnswerCount(udp), 3);  // CNAME + two A
  std::string tcp = AskTcp(*server, Query(8, "www.a.test", 1));
  EXPECT_EQ(AnswerCount(tcp), 3);
  EXPECT_EQ(AnswerCount(AskUdp(*server, Query(9, "edge.a.test", 28))), 0);
  EXPECT_EQ(Rcode(AskUdp(*server, Query(10, "nope.a.test", 1))), 3);
  EXPECT_EQ(server->QueryCount("www.a.test."), 2);
  EXPECT_EQ(server->QueryCount("edge.a.test"), 1);
  EXPECT_EQ(server->QueryCount("nope.a.test"), 1);
  EXPECT_EQ(server->QueryCount("other.a.test"), 0);
  EXPECT_EQ(server->TotalQueries(), 4);
  EXPECT_EQ(server->CountsText(), "edge.a.test 1\nnope.a.test 1\nwww.a.test 2\n");
}

TEST(TestDnsServerTest, TruncatesUdpWhenAsked) {
  TestDnsServerOptions o;
  o.records = {*ParseTestDnsRecord("a.test=A:10.9.0.1")};
  o.truncate_udp = true;
  auto server = StartWith(o);
  ASSERT_NE(server, nullptr);
  std::string udp = AskUdp(*server, Query(1, "a.test", 1));
  ASSERT_GE(udp.size(), 12u);
  EXPECT_NE(udp[2] & 0x02, 0);
  EXPECT_EQ(AnswerCount(udp), 0);
  EXPECT_EQ(AnswerCount(AskTcp(*server, Query(2, "a.test", 1))), 1);
}

TEST(TestDnsServerTest, MalformedQueryIsCountedAsUnparsed) {
  auto server = StartWith({});
  ASSERT_NE(server, nullptr);
  std::string bad = Query(3, "a.test", 1);
  bad[12] = static_cast<char>(0xC0);  // a pointer in a query
  std::string answer = AskUdp(*server, bad);
  EXPECT_EQ(Rcode(answer), 1);
  EXPECT_EQ(server->UnparsedQueries(), 1);
  EXPECT_EQ(server->TotalQueries(), 0);
}

}  // namespace
}  // namespace lazaret::test
