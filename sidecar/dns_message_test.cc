#include "sidecar/dns_message.h"

#include <gtest/gtest.h>

namespace lazaret::netrouter {
namespace {

// A query for example.com A, id 0xbeef, RD set, with an OPT record after it.
std::string Query() {
  std::string q = {'\xbe', '\xef', '\x01', '\x20', 0, 1, 0, 0, 0, 0, 0, 1};
  q += std::string(
      "\x07"
      "example"
      "\x03"
      "com"
      "\x00",
      13);
  q += std::string("\x00\x01\x00\x01", 4);
  q += std::string("\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00", 11);  // OPT
  return q;
}

TEST(DnsMessageTest, ServfailKeepsIdAndQuestionAndDropsTheRest) {
  std::optional<std::string> r = ServfailFor(Query());
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 12u + 13u + 4u);
  EXPECT_EQ(static_cast<uint8_t>((*r)[0]), 0xbe);
  EXPECT_EQ(static_cast<uint8_t>((*r)[1]), 0xef);
  EXPECT_EQ(static_cast<uint8_t>((*r)[2]), 0x81);      // QR, opcode 0, RD
  EXPECT_EQ(static_cast<uint8_t>((*r)[3]) & 0x0f, 2);  // SERVFAIL
  EXPECT_EQ((*r)[5], 1);                               // one question
  EXPECT_EQ((*r)[11], 0);                              // no additional records
  EXPECT_EQ(r->substr(12), Query().substr(12, 17));
}

TEST(DnsMessageTest, MalformedQuestionGivesAHeaderOnlyServfail) {
  std::string q = Query().substr(0, 12 + 5);  // the name is cut short
  std::optional<std::string> r = ServfailFor(q);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 12u);
  EXPECT_EQ((*r)[5], 0);
  std::string pointer = Query().substr(0, 12) + std::string("\xc0\x0c\x00\x01\x00\x01", 6);
  EXPECT_EQ(ServfailFor(pointer)->size(), 12u);
}

TEST(DnsMessageTest, ShortOrResponseMessagesAreNotQueries) {
  EXPECT_FALSE(ServfailFor(std::string(11, '\0')).has_value());
  EXPECT_FALSE(IsDnsQuery(std::string(11, '\0')));
  EXPECT_TRUE(IsDnsQuery(Query()));
  std::string response = Query();
  response[2] = static_cast<char>(response[2] | 0x80);
  EXPECT_FALSE(IsDnsQuery(response));
}

}  // namespace
}  // namespace lazaret::netrouter
