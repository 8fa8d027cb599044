#include "services/supervisor/registry.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace lazaret::supervisor {
namespace {

common::v1::SessionRecord GoodRecord() {
  common::v1::SessionRecord r;
  r.set_id("0123456789ab");
  r.set_profile("default");
  r.set_workspace("/home/u/project");
  r.set_git_state_dir("/home/u/.local/share/lazaret/profiles/default/git");
  r.set_pid(getpid());
  r.set_started_unix(1700000000);
  return r;
}

PeerProcess Self() {
  return PeerProcess{.uid = getuid(),
                     .pid = getpid(),
                     .pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0))};
}

TEST(SessionRecordTest, EachBadFieldIsNamed) {
  EXPECT_TRUE(ValidateSessionRecord(GoodRecord()).ok());
  auto with = [](auto mutate) {
    common::v1::SessionRecord r = GoodRecord();
    mutate(r);
    return std::string(ValidateSessionRecord(r).message());
  };
  EXPECT_NE(with([](auto& r) { r.set_id("../../x"); }).find("session id"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.set_profile("a/b"); }).find("profile"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.set_workspace("/a/../etc"); }).find("workspace"),
            std::string::npos);
  EXPECT_NE(with([](auto& r) { r.set_git_state_dir("rel"); }).find("git_state_dir"),
            std::string::npos);
  EXPECT_NE(with([](auto& r) { r.set_pid(0); }).find("pid"), std::string::npos);
}

TEST(SessionRecordTest, ExplicitConfigIsEmptyOrACleanAbsolutePath) {
  auto check = [](const std::string& path) {
    common::v1::SessionRecord r = GoodRecord();
    r.set_explicit_config(path);
    return ValidateSessionRecord(r);
  };
  EXPECT_TRUE(check("").ok());
  EXPECT_TRUE(check("/home/u/lazaret-ci.toml").ok());
  const std::vector<std::string> bads = {"rel.toml",   "/a/../etc/passwd", "/a//b.toml",
                                         "/a/b.toml/", "/a/b\nc.toml",     std::string("/a\0b", 4)};
  for (const std::string& bad : bads) {
    const absl::Status s = check(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("explicit_config"), std::string::npos) << bad;
  }
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
  void TearDown() override { close(wake_); }
  int wake_ = -1;
};

TEST_F(RegistryTest, RegistersTheCallerAndDerivesEveryName) {
  SessionRegistry reg("/run/user/1/lazaret", wake_);
  absl::StatusOr<v1::SessionInfo> info = reg.Register(GoodRecord(), Self());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->sidecar_container(), "lazaret-0123456789ab-sidecar");
  EXPECT_EQ(info->sandbox_container(), "lazaret-0123456789ab-sandbox");
  EXPECT_EQ(info->router_socket(), "/run/user/1/lazaret/sessions/0123456789ab/router/router.sock");
  EXPECT_EQ(reg.List().size(), 1u);
  EXPECT_EQ(reg.WatchedPidfds().size(), 1u);
}

TEST_F(RegistryTest, DuplicateIdIsRefused) {
  SessionRegistry reg("/rt", wake_);
  ASSERT_TRUE(reg.Register(GoodRecord(), Self()).ok());
  absl::StatusOr<v1::SessionInfo> again = reg.Register(GoodRecord(), Self());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(RegistryTest, ARecordNamingAnotherProcessIsRefused) {
  SessionRegistry reg("/rt", wake_);
  common::v1::SessionRecord r = GoodRecord();
  r.set_pid(1);  // init, not the caller
  EXPECT_EQ(reg.Register(r, Self()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(reg.empty());
}

TEST_F(RegistryTest, BeginReapStopsWatchingAndForgetEndsIt) {
  SessionRegistry reg("/rt", wake_);
  ASSERT_TRUE(reg.Register(GoodRecord(), Self()).ok());
  EXPECT_TRUE(reg.BeginReap("0123456789ab"));
  EXPECT_FALSE(reg.BeginReap("0123456789ab"));
  EXPECT_TRUE(reg.WatchedPidfds().empty());
  EXPECT_EQ(reg.Get("0123456789ab")->state(), v1::SESSION_STATE_REAPING);
  reg.Forget("0123456789ab");
  EXPECT_TRUE(reg.empty());
}

TEST_F(RegistryTest, WatchSeesTheStartAndTheEnd) {
  SessionRegistry reg("/rt", wake_);
  ASSERT_TRUE(reg.Register(GoodRecord(), Self()).ok());
  std::atomic<int> started{0}, ended{0};
  std::thread t([&] {
    reg.Watch(
        [&](const v1::SessionEvent& e) {
          (e.kind() == v1::SESSION_EVENT_STARTED ? started : ended)++;
          return true;
        },
        [&] { return ended.load() > 0; });
  });
  while (started.load() == 0) std::this_thread::yield();  // the snapshot arrived
  reg.Forget("0123456789ab");
  t.join();
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(ended.load(), 1);
}

}  // namespace
}  // namespace lazaret::supervisor
