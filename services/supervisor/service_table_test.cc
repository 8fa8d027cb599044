// The service table with a service the launcher starts: the launcher's
// side is played by this test over the two pipes, so every step of the
// protocol is checked against what the table asks and reports.
#include "services/supervisor/service_table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace lazaret::supervisor {
namespace {

namespace pb = ::lazaret::supervisor::v1;

class LaunchedServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int req[2], rep[2];
    ASSERT_EQ(pipe2(req, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(rep, O_CLOEXEC), 0);
    requests_ = req[0];
    reports_ = rep[1];
    // pid and pidfd of a launcher that does not exist: only the pipes are used.
    launcher_ = std::make_unique<LauncherClient>(-1, -1, req[1], rep[0]);
    auto table = ServiceTable::Create(
        "/nonexistent-rt",
        {{.name = "sessiond",
          .binary = "/nonexistent/lazaret-sessiond",
          .capabilities = {},
          .via_launcher = true}},
        {"PATH=/usr/bin:/bin"}, launcher_.get());
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
  }

  void TearDown() override {
    close(requests_);
    close(reports_);
  }

  std::string NextRequest() {
    char buf[kLauncherRequestSize];
    if (read(requests_, buf, sizeof(buf)) != static_cast<ssize_t>(sizeof(buf))) return "";
    return std::string(buf, sizeof(buf));
  }

  void Report(const LauncherReport& r) {
    const std::string bytes = EncodeLauncherReport(r);
    ASSERT_EQ(write(reports_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ASSERT_TRUE(table_->ReadLauncherReport());
  }

  pb::ServiceStatus Status() {
    pb::GetStatusResponse resp;
    table_->Status(&resp);
    EXPECT_EQ(resp.services_size(), 1);
    return resp.services(0);
  }

  int requests_ = -1, reports_ = -1;
  std::unique_ptr<LauncherClient> launcher_;
  std::unique_ptr<ServiceTable> table_;
};

TEST_F(LaunchedServiceTest, StartedAndRestartedThroughTheLauncher) {
  table_->StartAll();
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kStart));
  EXPECT_EQ(Status().state(), pb::SERVICE_STATE_STARTING);
  EXPECT_EQ(Status().socket(), "/nonexistent-rt/sessiond.sock");
  Report({LauncherReport::Kind::kStarted, 4321});
  EXPECT_EQ(Status().pid(), 4321);
  Report({LauncherReport::Kind::kExited, SIGKILL});
  EXPECT_EQ(Status().state(), pb::SERVICE_STATE_BACKOFF);
  EXPECT_EQ(Status().pid(), -1);
  EXPECT_NE(Status().last_exit().find("killed by"), std::string::npos) << Status().last_exit();
  // After the backoff (200 ms first) the table asks for it again.
  usleep(300 * 1000);
  table_->Tick();
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kStart));
  EXPECT_EQ(Status().restarts(), 1u);
}

TEST_F(LaunchedServiceTest, AFailedStartIsRetriedLikeAnExit) {
  table_->StartAll();
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kStart));
  Report({LauncherReport::Kind::kFailed, 0});
  EXPECT_EQ(Status().state(), pb::SERVICE_STATE_BACKOFF);
  EXPECT_NE(Status().last_exit().find("could not be started"), std::string::npos);
}

TEST_F(LaunchedServiceTest, StopAllAsksTheLauncherAndWaitsForTheExit) {
  table_->StartAll();
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kStart));
  Report({LauncherReport::Kind::kStarted, 4321});
  // The exit the launcher will report once asked to terminate.
  const std::string exited = EncodeLauncherReport({LauncherReport::Kind::kExited, SIGTERM});
  ASSERT_EQ(write(reports_, exited.data(), exited.size()), static_cast<ssize_t>(exited.size()));
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  ASSERT_GE(sfd, 0);
  table_->StopAll(sfd);
  close(sfd);
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kTerminate));
  EXPECT_EQ(Status().state(), pb::SERVICE_STATE_STOPPED);
  EXPECT_EQ(Status().pid(), -1);
}

TEST_F(LaunchedServiceTest, ALostLauncherIsReportedAndItsServiceIsGone) {
  table_->StartAll();
  EXPECT_EQ(NextRequest(), EncodeLauncherRequest(LauncherRequest::kStart));
  Report({LauncherReport::Kind::kStarted, 4321});
  const std::string garbage = "started 00000000x1\n";
  ASSERT_EQ(write(reports_, garbage.data(), garbage.size()),
            static_cast<ssize_t>(garbage.size()));
  EXPECT_FALSE(table_->ReadLauncherReport());
  EXPECT_EQ(Status().pid(), -1);
}

TEST(ServiceTableTest, ALaunchedServiceNeedsALauncher) {
  auto table = ServiceTable::Create(
      "/rt",
      {{.name = "sessiond", .binary = "/x/lazaret-sessiond", .capabilities = {}, .via_launcher = true}},
      {},
      nullptr);
  EXPECT_FALSE(table.ok());
}

}  // namespace
}  // namespace lazaret::supervisor
