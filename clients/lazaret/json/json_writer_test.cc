#include "clients/lazaret/json/json_writer.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

namespace lazaret::cli::json {
namespace {

// What a strict JSON parser makes of `text`; fails the test when it is not
// JSON.
google::protobuf::Value Parse(const std::string& text) {
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &v).ok()) << text;
  return v;
}

TEST(JsonWriterTest, QuotesBackslashNewlineAndControlBytesAreEscaped) {
  const std::string name = std::string("a\"b\\c\nd\x01") + "e\x1b[2Jf\x7f" + std::string(1, '\0');
  EXPECT_EQ(Quote(name), R"("a\"b\\c\u000ad\u0001e\u001b[2Jf\u007f\u0000")");
  EXPECT_EQ(Parse(Quote(name)).string_value(), name);
}

TEST(JsonWriterTest, PrintableAsciiStaysAsItIs) {
  EXPECT_EQ(Quote("default /home/u/src/app-1 {x}'y'"), "\"default /home/u/src/app-1 {x}'y'\"");
  EXPECT_EQ(Quote(""), "\"\"");
}

TEST(JsonWriterTest, NonAsciiIsEscapedSoTheOutputIsPlainAscii) {
  // e-acute, a right-to-left override, a C1 control, and U+1F600 (a
  // surrogate pair).
  const std::string s = "\xc3\xa9\xe2\x80\xae\xc2\x9b\xf0\x9f\x98\x80";
  EXPECT_EQ(Quote(s), R"("\u00e9\u202e\u009b\ud83d\ude00")");
  EXPECT_EQ(Parse(Quote(s)).string_value(), s);
}

TEST(JsonWriterTest, InvalidUtf8BecomesTheReplacementCharacter) {
  // A lone continuation byte, a truncated sequence, an overlong '/', and
  // an encoded surrogate: each byte that is not valid UTF-8.
  EXPECT_EQ(Quote("a\x80z"), R"("a\ufffdz")");
  EXPECT_EQ(Quote("\xe2\x82"), R"("\ufffd\ufffd")");
  EXPECT_EQ(Quote("\xc0\xaf"), R"("\ufffd\ufffd")");
  EXPECT_EQ(Quote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(Parse(Quote("a\x80z")).string_value(), "a\xef\xbf\xbdz");
}

TEST(JsonWriterTest, ObjectKeepsTheOrderAndTypesOfItsMembers) {
  Object inner;
  inner.Int("n", -3);
  Object o;
  o.String("s", "x\"y")
      .Int("big", 1733412345)
      .Bool("t", true)
      .Bool("f", false)
      .Null("none")
      .Raw("list", StringArray({"a", "b\n"}))
      .Raw("empty", Array({}))
      .Raw("inner", inner.Text());
  const std::string text = o.Text();
  EXPECT_EQ(text, R"({"s":"x\"y","big":1733412345,"t":true,"f":false,"none":null,)"
                  R"("list":["a","b\u000a"],"empty":[],"inner":{"n":-3}})");
  const google::protobuf::Value v = Parse(text);
  const auto& f = v.struct_value().fields();
  EXPECT_EQ(f.at("s").string_value(), "x\"y");
  EXPECT_TRUE(f.at("t").bool_value());
  EXPECT_EQ(f.at("none").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_EQ(f.at("list").list_value().values(1).string_value(), "b\n");
  EXPECT_EQ(f.at("inner").struct_value().fields().at("n").number_value(), -3);
}

TEST(JsonWriterTest, AnEmptyObjectIsBraces) { EXPECT_EQ(Object().Text(), "{}"); }

}  // namespace
}  // namespace lazaret::cli::json
