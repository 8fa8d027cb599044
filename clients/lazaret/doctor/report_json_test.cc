#include "clients/lazaret/doctor/report_json.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::cli::doctor {
namespace {

const HostUser kUser{.name = "dev", .uid = 1000, .rootless = true};

TEST(ReportJsonTest, FindingsAreExactlyTheDocumentedObject) {
  // A detail as a host program might print it: a quote, a backslash, a
  // newline and a control byte.
  const std::vector<Finding> findings = {
      {Verdict::kOk, "podman", "podman version 4.3.1", ""},
      {Verdict::kWarn, "services", "not running", "lazaret up"},
      {Verdict::kFail, "runsc (gVisor)", "exit 1: \"bad\\path\"\n\x07", "apt-get install runsc"},
  };
  EXPECT_EQ(ReportJson(kUser, findings),
            R"({"ok":false,"user":"dev","rootless":true,"failures":1,"warnings":1,"checks":[)"
            R"({"name":"podman","status":"ok","detail":"podman version 4.3.1","fix":""},)"
            R"({"name":"services","status":"warn","detail":"not running","fix":"lazaret up"},)"
            R"j({"name":"runsc (gVisor)","status":"fail",)j"
            R"("detail":"exit 1: \"bad\\path\"\u000a\u0007","fix":"apt-get install runsc"}]})");
}

TEST(ReportJsonTest, ParsesBackWithTheSameText) {
  const std::string detail = "exit 1: \"bad\\path\"\n\x07\xc3\xa9";
  const std::vector<Finding> findings = {
      {Verdict::kWarn, "host CAs", detail, "set trust_host_ca = true"},
  };
  google::protobuf::Struct doc;
  const std::string text = ReportJson(kUser, findings);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &doc).ok()) << text;
  EXPECT_TRUE(doc.fields().at("ok").bool_value());
  EXPECT_EQ(doc.fields().at("warnings").number_value(), 1);
  const auto& check = doc.fields().at("checks").list_value().values(0).struct_value().fields();
  EXPECT_EQ(check.at("name").string_value(), "host CAs");
  EXPECT_EQ(check.at("status").string_value(), "warn");
  EXPECT_EQ(check.at("detail").string_value(), detail);
  EXPECT_EQ(check.at("fix").string_value(), "set trust_host_ca = true");
}

TEST(ReportJsonTest, OnlyAFailureMakesTheHostUnfit) {
  EXPECT_TRUE(HostCanRun({}));
  EXPECT_TRUE(HostCanRun({{Verdict::kOk, "a", "", ""}, {Verdict::kWarn, "b", "", ""}}));
  EXPECT_FALSE(HostCanRun({{Verdict::kOk, "a", "", ""}, {Verdict::kFail, "b", "", ""}}));
  EXPECT_EQ(ReportJson(kUser, {}),
            R"({"ok":true,"user":"dev","rootless":true,"failures":0,"warnings":0,"checks":[]})");
}

TEST(ReportJsonTest, VerdictNames) {
  EXPECT_STREQ(VerdictName(Verdict::kOk), "ok");
  EXPECT_STREQ(VerdictName(Verdict::kWarn), "warn");
  EXPECT_STREQ(VerdictName(Verdict::kFail), "fail");
}

}  // namespace
}  // namespace lazaret::cli::doctor
