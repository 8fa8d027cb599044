#include "services/netpolicyd/dns_message.h"

#include <arpa/inet.h>

#include <string>

#include "gtest/gtest.h"

namespace lazaret::netpolicyd::dns {
namespace {

// Raw message bytes from a list of byte values and strings.
class Bytes {
 public:
  Bytes& U8(int v) {
    s_.push_back(static_cast<char>(v));
    return *this;
  }
  Bytes& U16(int v) { return U8(v >> 8).U8(v & 0xff); }
  Bytes& U32(uint32_t v) { return U16(v >> 16).U16(v & 0xffff); }
  Bytes& Label(const std::string& l) {
    U8(static_cast<int>(l.size()));
    s_ += l;
    return *this;
  }
  Bytes& Name(const std::string& dotted) {
    size_t start = 0;
    while (start < dotted.size()) {
      size_t dot = dotted.find('.', start);
      if (dot == std::string::npos) dot = dotted.size();
      Label(dotted.substr(start, dot - start));
      start = dot + 1;
    }
    return U8(0);
  }
  Bytes& Header(int id, int flags, int qd, int an, int ns = 0, int ar = 0) {
    return U16(id).U16(flags).U16(qd).U16(an).U16(ns).U16(ar);
  }
  std::string str() const { return s_; }
  size_t size() const { return s_.size(); }

 private:
  std::string s_;
};

Question Q(const std::string& dotted, uint16_t type = kTypeA) {
  Question q;
  size_t start = 0;
  while (start < dotted.size()) {
    size_t dot = dotted.find('.', start);
    if (dot == std::string::npos) dot = dotted.size();
    q.name.push_back(dotted.substr(start, dot - start));
    start = dot + 1;
  }
  q.qtype = type;
  q.qclass = kClassIn;
  return q;
}

ResourceRecord A(const std::string& owner, const std::string& address, uint32_t ttl = 60) {
  ResourceRecord rr;
  rr.owner = Q(owner).name;
  rr.ttl = ttl;
  if (address.find(':') != std::string::npos) {
    rr.type = kTypeAaaa;
    inet_pton(AF_INET6, address.c_str(), rr.address.data());
  } else {
    rr.type = kTypeA;
    inet_pton(AF_INET, address.c_str(), rr.address.data());
  }
  return rr;
}

ResourceRecord Cname(const std::string& owner, const std::string& target, uint32_t ttl = 60) {
  ResourceRecord rr;
  rr.owner = Q(owner).name;
  rr.type = kTypeCname;
  rr.ttl = ttl;
  rr.target = Q(target).name;
  return rr;
}

TEST(DnsMessageTest, ParsesAQuery) {
  std::string m = Bytes().Header(0x1234, 0x0100, 1, 0).Name("Api.Example.com").U16(28).U16(1).str();
  auto q = ParseQuery(m);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->id, 0x1234);
  EXPECT_TRUE(q->recursion_desired);
  EXPECT_EQ(q->question.name, (Name{"Api", "Example", "com"}));
  EXPECT_EQ(q->question.qtype, kTypeAaaa);
  EXPECT_EQ(q->question.qclass, kClassIn);
}

TEST(DnsMessageTest, AcceptsAQueryWithAnEdnsRecord) {
  std::string m = Bytes()
                      .Header(1, 0x0100, 1, 0, 0, 1)
                      .Name("a.test")
                      .U16(1)
                      .U16(1)
                      .U8(0)
                      .U16(41)
                      .U16(4096)
                      .U32(0)
                      .U16(0)
                      .str();
  EXPECT_TRUE(ParseQuery(m).ok());
}

TEST(DnsMessageTest, RefusesMalformedQueries) {
  auto q = [](Bytes b) { return ParseQuery(b.str()).ok(); };
  EXPECT_FALSE(q(Bytes().U16(1).U16(0)));                                         // short
  EXPECT_FALSE(q(Bytes().Header(1, 0x8000, 1, 0).Name("a.test").U16(1).U16(1)));  // a response
  EXPECT_FALSE(q(Bytes().Header(1, 0x2000, 1, 0).Name("a.test").U16(1).U16(1)));  // opcode 4
  EXPECT_FALSE(q(Bytes().Header(1, 0x0800, 1, 0).Name("a.test").U16(1).U16(1)));  // IQUERY
  EXPECT_FALSE(q(Bytes().Header(1, 0, 0, 0)));                                    // no question
  EXPECT_FALSE(q(Bytes().Header(1, 0, 2, 0).Name("a.test").U16(1).U16(1).Name("b").U16(1).U16(1)));
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 1).Name("a.test").U16(1).U16(1)));  // answers
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).Name("a.test").U16(1)));         // cut
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).Label("abc")));                  // no end
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).Label(std::string(64, 'a')).U8(0).U16(1).U16(1)));
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).U8(0x40).U8(0).U16(1).U16(1)));   // label type
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).U8(0xC0).U8(12).U16(1).U16(1)));  // self
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).U8(0xC0).U8(40).U16(1).U16(1)));  // forward
  EXPECT_FALSE(q(Bytes().Header(1, 0, 1, 0).U8(0xC0)));                       // cut pointer
  Bytes long_name = Bytes().Header(1, 0, 1, 0);
  for (int i = 0; i < 5; ++i) long_name.Label(std::string(50, 'a'));  // 255 octets + root
  EXPECT_FALSE(q(long_name.U8(0).U16(1).U16(1)));
  Bytes max_name = Bytes().Header(1, 0, 1, 0);
  for (int i = 0; i < 4; ++i) max_name.Label(std::string(62, 'a'));  // 252 + 1 = 253 octets
  EXPECT_TRUE(q(max_name.U8(0).U16(1).U16(1)));
}

TEST(DnsMessageTest, PointerLoopsEnd) {
  // A name at 12 that is a label and a pointer back to itself.
  std::string m = Bytes().Header(1, 0, 1, 0).Label("a").U8(0xC0).U8(12).U16(1).U16(1).str();
  EXPECT_FALSE(ParseQuery(m).ok());
  EXPECT_EQ(PeekId(m), 1);
  EXPECT_EQ(PeekId("x"), std::nullopt);
}

TEST(DnsMessageTest, BuildsAFreshUpstreamQuery) {
  Question question = Q("Api.Example.com", kTypeAaaa);
  std::string m = BuildQuery(0xBEEF, question);
  auto q = ParseQuery(m);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->id, 0xBEEF);
  EXPECT_TRUE(q->recursion_desired);
  EXPECT_EQ(q->question.name, question.name);
  EXPECT_EQ(m.size(), 12u + 17u + 4u);  // no EDNS, no other sections
  EXPECT_EQ(m.substr(6, 6), std::string(6, '\0'));
}

TEST(DnsMessageTest, RandomIdsDiffer) {
  int same = 0;
  uint16_t first = RandomId();
  for (int i = 0; i < 16; ++i) same += RandomId() == first;
  EXPECT_LT(same, 3);
}

TEST(DnsMessageTest, ParsesACompressedCnameChainAndIgnoresRecordsOffIt) {
  // www.a.test CNAME edge.b.test; edge.b.test A 192.0.2.1; evil.test A 10.0.0.1.
  Bytes b = Bytes().Header(7, 0x8180, 1, 4).Name("www.a.test").U16(1).U16(1);
  b.U8(0xC0).U8(12).U16(5).U16(1).U32(300);
  size_t rdlen_at = b.size();
  b.U16(0);
  size_t target_at = b.size();
  b.Label("edge").Label("b").Label("test").U8(0);
  std::string m = b.str();
  m[rdlen_at + 1] = static_cast<char>(m.size() - target_at);
  Bytes rest;
  rest.U8(0xC0)
      .U8(static_cast<int>(target_at))
      .U16(1)
      .U16(1)
      .U32(60)
      .U16(4)
      .U8(192)
      .U8(0)
      .U8(2)
      .U8(1);
  rest.Name("evil.test").U16(1).U16(1).U32(60).U16(4).U8(10).U8(0).U8(0).U8(1);
  rest.U8(0xC0)
      .U8(static_cast<int>(target_at))
      .U16(1)
      .U16(3)
      .U32(60)
      .U16(4)
      .U8(1)
      .U8(1)
      .U8(1)
      .U8(1);
  m += rest.str();
  auto resp = ParseResponse(m, 7, Q("WWW.A.test"));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 3u);  // the class CH record is left out
  Chain chain = FollowChain(*resp, Q("www.a.test"));
  ASSERT_EQ(chain.cnames.size(), 1u);
  EXPECT_EQ(chain.cnames[0].target, (Name{"edge", "b", "test"}));
  ASSERT_EQ(chain.addresses.size(), 1u);
  EXPECT_EQ(chain.addresses[0].address[0], 192);
  EXPECT_EQ(chain.addresses[0].ttl, 60u);
}

TEST(DnsMessageTest, RefusesResponsesThatDoNotMatchTheQuery) {
  Query q;
  q.id = 9;
  q.question = Q("a.test");
  std::string good = BuildAnswer(q, Rcode::kNoError, {A("a.test", "192.0.2.1")}, false);
  EXPECT_TRUE(ParseResponse(good, 9, Q("a.test")).ok());
  EXPECT_FALSE(ParseResponse(good, 10, Q("a.test")).ok());
  EXPECT_FALSE(ParseResponse(good, 9, Q("b.test")).ok());
  EXPECT_FALSE(ParseResponse(good, 9, Q("a.test", kTypeAaaa)).ok());
  EXPECT_FALSE(ParseResponse(BuildQuery(9, Q("a.test")), 9, Q("a.test")).ok());  // QR=0
  std::string cut = good.substr(0, good.size() - 1);
  EXPECT_FALSE(ParseResponse(cut, 9, Q("a.test")).ok());
  std::string bad_length = Bytes()
                               .Header(9, 0x8180, 1, 1)
                               .Name("a.test")
                               .U16(1)
                               .U16(1)
                               .U8(0xC0)
                               .U8(12)
                               .U16(1)
                               .U16(1)
                               .U32(60)
                               .U16(5)
                               .U32(0)
                               .U8(0)
                               .str();
  EXPECT_FALSE(ParseResponse(bad_length, 9, Q("a.test")).ok());
}

TEST(DnsMessageTest, HugeTtlCountsAsZeroAndTruncationIsSeen) {
  std::string m = Bytes()
                      .Header(3, 0x8380, 1, 1)
                      .Name("a.test")
                      .U16(1)
                      .U16(1)
                      .U8(0xC0)
                      .U8(12)
                      .U16(1)
                      .U16(1)
                      .U32(0x80000000u)
                      .U16(4)
                      .U32(0xC0000201u)
                      .str();
  auto resp = ParseResponse(m, 3, Q("a.test"));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_TRUE(resp->truncated);
  EXPECT_EQ(resp->answers[0].ttl, 0u);
}

TEST(DnsMessageTest, CnameLoopsAreBounded) {
  Response resp;
  resp.answers = {Cname("a.test", "b.test"), Cname("b.test", "a.test"), A("a.test", "192.0.2.1")};
  Chain chain = FollowChain(resp, Q("a.test"));
  EXPECT_EQ(chain.cnames.size(), 16u);
}

TEST(DnsMessageTest, AnswerCarriesTheAskersIdQuestionAndChain) {
  Query q;
  q.id = 0x4242;
  q.recursion_desired = true;
  q.question = Q("WWW.a.test");
  std::vector<ResourceRecord> records = {Cname("www.a.test", "edge.b.test", 30),
                                         A("edge.b.test", "192.0.2.1", 30),
                                         A("edge.b.test", "192.0.2.2", 30)};
  std::string m = BuildAnswer(q, Rcode::kNoError, records, true);
  auto resp = ParseResponse(m, 0x4242, q.question);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->question.name, q.question.name);  // the asker's case
  Chain chain = FollowChain(*resp, q.question);
  EXPECT_EQ(chain.cnames.size(), 1u);
  EXPECT_EQ(chain.addresses.size(), 2u);
  EXPECT_NE(m[2] & 0x01, 0);                  // RD echoed
  EXPECT_NE(m[3] & 0x80, 0);                  // RA
  EXPECT_LT(m.size(), 12u + 16u + 3u * 30u);  // compressed
}

TEST(DnsMessageTest, ErrorAnswersHaveNoRecords) {
  Query q;
  q.id = 5;
  q.question = Q("nope.test");
  std::string m = BuildAnswer(q, Rcode::kRefused, {}, true);
  auto resp = ParseResponse(m, 5, q.question);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->rcode, Rcode::kRefused);
  EXPECT_TRUE(resp->answers.empty());
  std::string formerr = BuildFormErr(77);
  EXPECT_EQ(formerr.size(), 12u);
  EXPECT_EQ(formerr[3] & 0xf, 1);
  EXPECT_EQ(PeekId(formerr), 77);
}

TEST(DnsMessageTest, LongUdpAnswersAreTruncatedAndTcpOnesAreNot) {
  Query q;
  q.id = 1;
  q.question = Q("many.test", kTypeAaaa);
  std::vector<ResourceRecord> records;
  for (int i = 0; i < 30; ++i)
    records.push_back(A("many.test", "2001:db8::" + std::to_string(i + 1)));
  std::string udp = BuildAnswer(q, Rcode::kNoError, records, true);
  EXPECT_LE(udp.size(), kMaxUdpAnswer);
  auto resp = ParseResponse(udp, 1, q.question);
  ASSERT_TRUE(resp.ok());
  EXPECT_TRUE(resp->truncated);
  EXPECT_TRUE(resp->answers.empty());
  std::string tcp = BuildAnswer(q, Rcode::kNoError, records, false);
  auto full = ParseResponse(tcp, 1, q.question);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->truncated);
  EXPECT_EQ(full->answers.size(), 30u);
}

TEST(DnsMessageTest, NameTextEscapesWhatATerminalShouldNotSee) {
  EXPECT_EQ(NameText({"api", "example", "com"}), "api.example.com");
  EXPECT_EQ(NameText({}), ".");
  EXPECT_EQ(NameText({"a.b", "c"}), "a\\.b.c");
  EXPECT_EQ(NameText({std::string("\x1b[2J", 4)}), "\\027[2J");
  EXPECT_EQ(NameText({"a b"}), "a\\032b");
  EXPECT_EQ(TypeName(28), "AAAA");
  EXPECT_EQ(TypeName(999), "TYPE999");
}

}  // namespace
}  // namespace lazaret::netpolicyd::dns
