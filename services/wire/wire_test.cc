#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/wire/frame.h"
#include "services/wire/messages.h"
#include "services/wire/strict_json.h"
#include "google/protobuf/descriptor.pb.h"
#include "gtest/gtest.h"

namespace lazaret::escalation {
namespace {

// A stream over a string that hands out at most `chunk` bytes a read and
// counts what was consumed.
class StringStream : public ByteStream {
 public:
  explicit StringStream(std::string input, size_t chunk = 1 << 20)
      : input_(std::move(input)), chunk_(chunk) {}
  absl::StatusOr<size_t> Read(void* buf, size_t len) override {
    ++reads_;
    const size_t n = std::min({len, chunk_, input_.size() - pos_});
    std::memcpy(buf, input_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  absl::Status WriteAll(const void* buf, size_t len) override {
    output_.append(static_cast<const char*>(buf), len);
    return absl::OkStatus();
  }
  size_t consumed() const { return pos_; }
  const std::string& output() const { return output_; }

 private:
  std::string input_;
  size_t chunk_;
  size_t pos_ = 0;
  int reads_ = 0;
  std::string output_;
};

std::string Header(uint32_t len) {
  std::string h(4, '\0');
  h[0] = static_cast<char>(len >> 24);
  h[1] = static_cast<char>(len >> 16);
  h[2] = static_cast<char>(len >> 8);
  h[3] = static_cast<char>(len);
  return h;
}

TEST(FrameTest, RoundTripsThroughOneByteReads) {
  StringStream out("");
  ASSERT_TRUE(WriteFrame(out, "hello").ok());
  ASSERT_TRUE(WriteFrame(out, "").ok());
  EXPECT_EQ(out.output(), Header(5) + "hello" + Header(0));
  StringStream in(out.output(), 1);
  EXPECT_EQ(*ReadFrame(in, kMaxRequestFrame), "hello");
  EXPECT_EQ(*ReadFrame(in, kMaxRequestFrame), "");
  EXPECT_EQ(ReadFrame(in, kMaxRequestFrame).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(FrameTest, OversizedLengthIsRefusedBeforeTheBodyIsRead) {
  StringStream in(Header(kMaxRequestFrame + 1) + std::string(kMaxRequestFrame + 1, 'x'));
  auto frame = ReadFrame(in, kMaxRequestFrame);
  EXPECT_EQ(frame.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(in.consumed(), 4u);
  StringStream huge(Header(0xFFFFFFFFu));
  EXPECT_EQ(ReadFrame(huge, kMaxServerFrame).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(FrameTest, TruncatedHeaderAndBodySaySo) {
  StringStream header(Header(10).substr(0, 3));
  auto a = ReadFrame(header, kMaxRequestFrame);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(a.status().message().find("truncated"), std::string::npos);
  StringStream body(Header(10) + "abc");
  auto b = ReadFrame(body, kMaxRequestFrame);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(b.status().message().find("3 of 10"), std::string::npos);
}

TEST(FrameTest, FourMebibyteServerFrameRoundTrips) {
  const std::string payload(kMaxServerFrame, 'z');
  StringStream out("");
  ASSERT_TRUE(WriteFrame(out, payload).ok());
  StringStream in(out.output(), 65536);
  auto frame = ReadFrame(in, kMaxServerFrame);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_EQ(*frame, payload);
  EXPECT_EQ(WriteFrame(out, payload + "z").code(), absl::StatusCode::kResourceExhausted);
}

TEST(FrameTest, StreamErrorsPassThrough) {
  class Failing : public ByteStream {
    absl::StatusOr<size_t> Read(void*, size_t) override {
      return absl::DeadlineExceededError("deadline");
    }
    absl::Status WriteAll(const void*, size_t) override { return absl::OkStatus(); }
  } failing;
  EXPECT_EQ(ReadFrame(failing, 10).status().code(), absl::StatusCode::kDeadlineExceeded);
}

v1::EscalateRequest SampleRequest() {
  v1::EscalateRequest r;
  r.set_request_id("0123456789abcdef");
  r.set_profile("dev");
  r.add_argv("aws");
  r.add_argv("sts");
  r.add_argv("");
  r.set_justification("need the account id \xc3\xa9");
  r.set_cwd("/workspace/src");
  return r;
}

TEST(MessagesTest, RequestRoundTripsWithOriginalFieldNames) {
  const std::string json = SerializeRequest(SampleRequest());
  EXPECT_NE(json.find("\"request_id\":\"0123456789abcdef\""), std::string::npos) << json;
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto back = ParseRequest(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), SampleRequest().SerializeAsString());
}

TEST(MessagesTest, CommandRequestParses) {
  auto r = ParseRequest(
      R"({"request_id":"a.b_c-1","profile":"pp","command":"ls -l","justification":"j"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->command(), "ls -l");
  EXPECT_EQ(r->cwd(), "");
}

void ExpectRefused(absl::string_view json, absl::string_view why) {
  auto r = ParseRequest(json);
  ASSERT_FALSE(r.ok()) << json;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status();
  for (char c : r.status().message()) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "non-ASCII refusal: " << r.status();
  }
}

TEST(MessagesTest, StructuralRefusals) {
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["x"],"bogus":1})", "unknown field");
  ExpectRefused(R"({"requestId":"a","profile":"pp","argv":["x"]})", "unknown field");
  ExpectRefused(R"({"request_id":"a","request_id":"b","profile":"pp","argv":["x"]})",
                "duplicate key");
  ExpectRefused(R"({"request_id":"a","request\u005fid":"b","profile":"pp","argv":["x"]})",
                "duplicate key");
  ExpectRefused(std::string(R"({"request_id":"a","profile":"pp","argv":["x)") + '\0' + "\"]}",
                "NUL");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["x\u0000"]})", "\\u0000");
  ExpectRefused("{\"request_id\":\"a\",\"profile\":\"pp\",\"argv\":[\"\xff\"]}", "UTF-8");
  ExpectRefused("{\"request_id\":\"a\",\"profile\":\"pp\",\"argv\":[\"\xc0\xaf\"]}", "UTF-8");
  ExpectRefused("{\"request_id\":\"a\",\"profile\":\"pp\",\"argv\":[\"\xed\xa0\x80\"]}", "UTF-8");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["\ud800"]})", "surrogate");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":[[[["x"]]]]})", "an array where");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":"x"})", "not an array");
  ExpectRefused(R"({"request_id":["a"],"profile":"pp","argv":["x"]})", "an array where");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["x"]} x)", "trailing");
  ExpectRefused(R"(["x"])", "not a JSON object");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":{"x":1}})", "not an array");
  ExpectRefused(R"({"request_id":{"x":1},"profile":"pp","argv":["x"]})", "object where");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["x"],)", "expected a quoted key");
  ExpectRefused(R"({"request_id":7,"profile":"pp","argv":["x"]})", "does not fit");
  ExpectRefused("{\"request_id\":\"a\",\"profile\":\"pp\",\"argv\":[\"a\tb\"]}",
                "control character");
}

TEST(MessagesTest, SemanticRefusals) {
  ExpectRefused(R"({"profile":"pp","argv":["x"]})", "request_id must be 1 to 64");
  ExpectRefused(
      absl::StrCat(R"({"request_id":")", std::string(65, 'a'), R"(","profile":"pp","argv":["x"]})"),
      "request_id must be 1 to 64");
  ExpectRefused(R"({"request_id":"a/b","profile":"pp","argv":["x"]})", "outside [A-Za-z0-9._-]");
  ExpectRefused(R"({"request_id":"a","profile":"P!","argv":["x"]})", "not a profile name");
  ExpectRefused(R"({"request_id":"a","profile":"pp"})", "exactly one of command and argv");
  ExpectRefused(R"({"request_id":"a","profile":"pp","command":"ls","argv":["ls"]})",
                "exactly one of command and argv");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["","x"]})", "argv[0] is empty");
  ExpectRefused(R"({"request_id":"a","profile":"pp","argv":["x"],"cwd":"rel"})", "not absolute");
  v1::EscalateRequest big = SampleRequest();
  big.set_justification(std::string(kMaxJustification + 1, 'j'));
  ExpectRefused(SerializeRequest(big), "justification");
  v1::EscalateRequest many = SampleRequest();
  for (int i = 0; i < 4096; ++i) many.add_argv("a");
  ExpectRefused(SerializeRequest(many), "more than 4096");
}

TEST(MessagesTest, RefusalEchoesAtMost64EscapedBytes) {
  const std::string key = std::string(200, 'k') + "\xc3\xa9";
  auto r = ParseRequest(absl::StrCat(R"({")", key, R"(":1})"));
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 64u + 80u) << r.status();
  EXPECT_NE(r.status().message().find("..."), std::string::npos);
  EXPECT_EQ(QuoteForError("a\nb\xff"), "\"a\\nb\\xff\"");
}

TEST(MessagesTest, ServerFramesRoundTrip) {
  v1::ServerFrame pending;
  pending.mutable_pending()->set_request_id("r1");
  pending.mutable_pending()->set_reason("not on the auto-approve list");
  pending.mutable_pending()->set_deadline_unix(1800000000);
  v1::ServerFrame result;
  auto* res = result.mutable_result();
  res->set_request_id("r1");
  res->set_approved(true);
  res->set_exit_code(3);
  res->set_stdout(std::string("\0\xff\n", 3));
  res->add_argv("ls");
  for (const auto& frame : {pending, result}) {
    const std::string json = SerializeServerFrame(frame);
    auto back = ParseServerFrame(json);
    ASSERT_TRUE(back.ok()) << back.status() << json;
    EXPECT_EQ(back->SerializeAsString(), frame.SerializeAsString());
  }
  EXPECT_NE(SerializeServerFrame(result).find("\"exit_code\":3"), std::string::npos);
}

TEST(MessagesTest, FourMebibyteResponseFitsTheServerFrame) {
  v1::ServerFrame frame;
  frame.mutable_result()->set_request_id("r");
  frame.mutable_result()->set_stdout(std::string(1 << 20, 'o'));
  frame.mutable_result()->set_stderr(std::string(1 << 20, 'e'));
  const std::string json = SerializeServerFrame(frame);
  EXPECT_LT(json.size(), kMaxServerFrame);
  StringStream out("");
  ASSERT_TRUE(WriteFrame(out, json).ok());
  StringStream in(out.output(), 4096);
  auto payload = ReadFrame(in, kMaxServerFrame);
  ASSERT_TRUE(payload.ok());
  auto back = ParseServerFrame(*payload);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->result().stdout().size(), 1u << 20);
}

TEST(MessagesTest, ServerFrameRefusals) {
  EXPECT_FALSE(ParseServerFrame("{}").ok());
  EXPECT_FALSE(ParseServerFrame(R"({"pending":{},"result":{}})").ok());
  EXPECT_FALSE(ParseServerFrame(R"({"result":{"exitCode":1}})").ok());
  EXPECT_FALSE(ParseServerFrame(R"({"result":{"stdout":"!!"}})").ok());
  EXPECT_FALSE(ParseServerFrame(R"({"result":{"argv":[["x"]]}})").ok());
  EXPECT_FALSE(ParseServerFrame(R"({"result":"x"})").ok());
  EXPECT_TRUE(ParseServerFrame(R"({"result":{"argv":["x"]}})").ok());
  EXPECT_TRUE(ParseServerFrame(R"({"result":{"argv":null,"reason":null}})").ok());
}

TEST(StrictJsonTest, DepthOverFourIsRefused) {
  // Our messages nest at most three deep, so the limit is checked against a
  // type that nests deeper: FieldDescriptorProto's options.
  const auto& d = *google::protobuf::DescriptorProto::descriptor();
  EXPECT_TRUE(CheckStrictJson(R"({"field":[{"options":{"ctype":1}}]})", d).ok());
  auto deep = CheckStrictJson(R"({"field":[{"options":{"uninterpreted_option":[{}]}}]})", d);
  EXPECT_FALSE(deep.ok());
  EXPECT_NE(deep.message().find("deeper than 4"), std::string::npos) << deep;
}

TEST(MessagesTest, InvalidUtf8NeverReachesTheWire) {
  v1::EscalateRequest r = SampleRequest();
  r.set_argv(1, "\xff");
  EXPECT_EQ(SerializeRequest(r), "");
  v1::ServerFrame frame;
  frame.mutable_result()->add_argv("ok");
  frame.mutable_result()->add_argv("\xc3");
  EXPECT_EQ(SerializeServerFrame(frame), "");
}

}  // namespace
}  // namespace lazaret::escalation
