#include "services/sessiond/session/trace_config.h"

#include <string>

#include "services/sessiond/session/plan.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;

TEST(TraceConfigTest, OneConnectPointToTheSessionsSocketAndNoSandboxWithoutIt) {
  const std::string json = TraceConfigJson("/run/lazaret/sessions/0123456789ab/trace.sock");
  google::protobuf::Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
  const auto& session = s.fields().at("trace_session").struct_value().fields();
  EXPECT_EQ(session.at("name").string_value(), "Default");
  ASSERT_EQ(session.at("points").list_value().values_size(), 1);
  const auto& point = session.at("points").list_value().values(0).struct_value().fields();
  EXPECT_EQ(point.at("name").string_value(), "syscall/connect/exit");
  ASSERT_EQ(point.at("context_fields").list_value().values_size(), 2);
  ASSERT_EQ(session.at("sinks").list_value().values_size(), 1);
  const auto& sink = session.at("sinks").list_value().values(0).struct_value().fields();
  EXPECT_EQ(sink.at("name").string_value(), "remote");
  // Fail closed: runsc does not start a sandbox whose log socket is absent.
  EXPECT_FALSE(sink.at("ignore_setup_error").bool_value());
  EXPECT_EQ(sink.at("config").struct_value().fields().at("endpoint").string_value(),
            "/run/lazaret/sessions/0123456789ab/trace.sock");
}

TEST(TraceConfigTest, RunscGetsThePodInitConfig) {
  EXPECT_THAT(RunscGlobalFlags(false, "/rt/sessions/x/trace.json"),
              ElementsAre("--runtime-flag=network=host",
                          "--runtime-flag=pod-init-config=/rt/sessions/x/trace.json"));
  EXPECT_EQ(TraceConfigPath("/rt/sessions/x"), "/rt/sessions/x/trace.json");
  EXPECT_EQ(TraceSocketPath("/rt/sessions/x"), "/rt/sessions/x/trace.sock");
}

}  // namespace
}  // namespace lazaret::cli::session
