#include "clients/lazaret/approve/approver_client.h"

#include <unistd.h>

#include <memory>
#include <thread>

#include "clients/lazaret/approve/fake_approver_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;
using ::testing::HasSubstr;

class ApproverClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto listener = UnixListener::Bind(socket_);
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  test::TempDir dir_{"laz-apc"};
  std::string socket_ = SocketPath(dir_.path(), "brokerd");
  FakeApproverService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
};

TEST_F(ApproverClientTest, WatchDeliversEventsUntilCancelled) {
  pb::PendingRequest r;
  r.set_request_id("r-1");
  fake_.Add(r);
  ApproverClient client(socket_);
  std::mutex mu;
  std::vector<std::string> seen;
  absl::Status ended = absl::UnknownError("not ended");
  std::thread t([&] {
    absl::Status s = client.Watch(pb::WatchPendingRequest(), [&](const pb::PendingEvent& e) {
      std::lock_guard<std::mutex> l(mu);
      seen.push_back(e.request().request_id());
    });
    std::lock_guard<std::mutex> l(mu);
    ended = s;
  });
  ASSERT_TRUE(test::WaitFor(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return !seen.empty();
      },
      std::chrono::seconds(10)));
  client.Cancel();
  t.join();
  EXPECT_TRUE(ended.ok()) << ended;
  EXPECT_EQ(seen, std::vector<std::string>{"r-1"});
}

TEST_F(ApproverClientTest, SecondDecisionKeepsTheBrokersWordOnWhoDecided) {
  ApproverClient client(socket_);
  pb::DecideRequest d;
  d.set_id("q1");
  d.mutable_approve();
  ASSERT_TRUE(client.Decide(d).ok());
  absl::StatusOr<pb::DecideResponse> again = client.Decide(d);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("already decided: approved by ci-script"));
}

TEST_F(ApproverClientTest, ParseAndGetRequestReachTheBroker) {
  ApproverClient client(socket_);
  pb::ParseCommandRequest p;
  p.set_command("git status");
  absl::StatusOr<pb::ParseCommandResponse> parsed = client.ParseCommand(p);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->binary(), "/usr/bin/git");
  pb::GetRequestRequest get;
  get.set_id("q9");
  absl::StatusOr<pb::RequestState> state = client.GetRequest(get);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->stdout(), "output of q9\n");
}

TEST_F(ApproverClientTest, ABrokerThatIsNotRunningIsNamed) {
  server_->Shutdown();
  server_.reset();
  ApproverClient client(socket_);
  const absl::Status s = client.Watch(pb::WatchPendingRequest(), [](const pb::PendingEvent&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("lazaret up"));
  EXPECT_THAT(s.message(), HasSubstr(socket_));
}

}  // namespace
}  // namespace lazaret::cli::approve
