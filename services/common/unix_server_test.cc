#include "services/common/unix_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace lazaret {
namespace {

class UnixServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-uds-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/svc.sock";
  }
  void TearDown() override { (void)!system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
  std::string path_;
};

TEST_F(UnixServerTest, OwnerConnectionIsServedWithHealth) {
  auto listener = UnixListener::Bind(path_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto server = GrpcUnixServer::Start(std::move(*listener), {}, {.allowed_uid = geteuid()});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(CheckHealth(path_, 2000).ok());
  EXPECT_EQ((*server)->refused_connections(), 0u);
  (*server)->Shutdown();
  struct stat st {};
  EXPECT_NE(lstat(path_.c_str(), &st), 0) << "socket must be removed on shutdown";
}

TEST_F(UnixServerTest, ConnectionFromAnotherUidIsRefusedBeforeAnyHandler) {
  auto listener = UnixListener::Bind(path_);
  ASSERT_TRUE(listener.ok());
  // Pretend the owner is someone else: our own connection is then "another uid".
  auto server = GrpcUnixServer::Start(std::move(*listener), {}, {.allowed_uid = geteuid() + 4242});
  ASSERT_TRUE(server.ok());
  absl::Status health = CheckHealth(path_, 1000);
  EXPECT_FALSE(health.ok());
  EXPECT_GE((*server)->refused_connections(), 1u);
}

TEST_F(UnixServerTest, SocketIsCreatedOwnerOnly) {
  auto listener = UnixListener::Bind(path_);
  ASSERT_TRUE(listener.ok());
  struct stat st {};
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(UnixServerTest, RefusesToReplaceARegularFile) {
  std::ofstream(path_) << "not a socket";
  auto listener = UnixListener::Bind(path_);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.status().message().find("not a socket"), std::string::npos);
  std::ifstream in(path_);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "not a socket") << "the file must be left untouched";
}

TEST_F(UnixServerTest, RefusesWhenAnotherProcessIsServing) {
  auto first = UnixListener::Bind(path_);
  ASSERT_TRUE(first.ok());
  auto second = UnixListener::Bind(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(UnixServerTest, ReplacesStaleSocketLeftByACrash) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // bound but never listening: what a crashed server leaves
  auto listener = UnixListener::Bind(path_);
  EXPECT_TRUE(listener.ok()) << listener.status();
}

TEST_F(UnixServerTest, OverlongPathIsAClearError) {
  auto listener = UnixListener::Bind(dir_ + "/" + std::string(200, 'x'));
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.status().message().find("LAZARET_RUNTIME_DIR"), std::string::npos);
}

}  // namespace
}  // namespace lazaret
