// CheckEndpoint against real directories: a socket directory with a bound
// Unix socket under a temporary socket_dir, and a certificate directory on
// /dev/shm (tmpfs) - and each way an answer can be wrong.
#include "clients/lazaret/escalation/endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "tests/support/test_support.h"

namespace lazaret::cli::escalation {
namespace {

namespace bpb = ::lazaret::broker::v1;
using ::testing::HasSubstr;

constexpr char kId[] = "0123456789ab";

void BindSocket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  close(fd);
}

class CheckEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_root_ = tmp_.path() + "/escalation";
    ASSERT_EQ(mkdir(socket_root_.c_str(), 0700), 0);
    socket_dir_ = SessionSocketDir(socket_root_, kId);
    ASSERT_EQ(mkdir(socket_dir_.c_str(), 0700), 0);
    BindSocket(socket_dir_ + "/escalate.sock");
    char tmpl[] = "/dev/shm/laz-ep-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    shm_ = tmpl;
    certs_dir_ = shm_ + "/" + kId;
    MakeCertsDir(certs_dir_);
    answer_.set_session_id(kId);
    answer_.set_socket_dir(socket_dir_);
    answer_.set_certs_dir(certs_dir_);
    answer_.set_certificate_not_after(1700003600);
  }
  void TearDown() override { (void)!system(("rm -rf " + shm_).c_str()); }

  static void MakeCertsDir(const std::string& dir) {
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << dir;
    for (const char* f : kCertificateFiles) {
      const std::string p = dir + "/" + f;
      std::ofstream(p) << "-----BEGIN-----\n";
      ASSERT_EQ(chmod(p.c_str(), 0600), 0);
    }
  }

  absl::StatusOr<CheckedEndpoint> Check(uid_t owner = geteuid()) {
    return CheckEndpoint(answer_, kId, socket_dir_, owner);
  }
  std::string Refusal(uid_t owner = geteuid()) {
    absl::StatusOr<CheckedEndpoint> e = Check(owner);
    EXPECT_FALSE(e.ok());
    return e.ok() ? "" : std::string(e.status().message());
  }

  test::TempDir tmp_{"laz-ep"};
  std::string socket_root_, socket_dir_, shm_, certs_dir_;
  bpb::Endpoint answer_;
};

TEST_F(CheckEndpointTest, AcceptsTheBrokersRealEndpoint) {
  absl::StatusOr<CheckedEndpoint> e = Check();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->session_id(), kId);
  EXPECT_EQ(e->socket_dir(), socket_dir_);
  EXPECT_EQ(e->certs_dir(), certs_dir_);
  EXPECT_EQ(e->certificate_not_after(), 1700003600);
}

TEST_F(CheckEndpointTest, RefusesAnAnswerForAnotherSession) {
  answer_.set_session_id("ba9876543210");
  EXPECT_THAT(Refusal(), HasSubstr("answered for session \"ba9876543210\""));
}

TEST_F(CheckEndpointTest, RefusesASocketDirectoryOtherThanTheProfilesOneForThisSession) {
  // A real, good-looking directory elsewhere is not the one the plan mounts.
  const std::string other = tmp_.path() + "/other";
  ASSERT_EQ(mkdir(other.c_str(), 0700), 0);
  BindSocket(other + "/escalate.sock");
  answer_.set_socket_dir(other);
  EXPECT_THAT(Refusal(), HasSubstr("named the socket directory"));
  answer_.set_socket_dir(socket_root_);
  EXPECT_THAT(Refusal(), HasSubstr("named the socket directory"));
}

TEST_F(CheckEndpointTest, RefusesASymlinkedSocketDirectory) {
  const std::string real = tmp_.path() + "/real";
  ASSERT_EQ(rename(socket_dir_.c_str(), real.c_str()), 0);
  ASSERT_EQ(symlink(real.c_str(), socket_dir_.c_str()), 0);
  EXPECT_THAT(Refusal(), HasSubstr("a symlink"));
}

TEST_F(CheckEndpointTest, RefusesAnotherOwnerOrAnOpenMode) {
  EXPECT_THAT(Refusal(geteuid() + 1), HasSubstr("is owned by uid"));
  ASSERT_EQ(chmod(socket_dir_.c_str(), 0750), 0);
  EXPECT_THAT(Refusal(), HasSubstr("has mode 0750, not 0700"));
  ASSERT_EQ(chmod(socket_dir_.c_str(), 0700), 0);
  ASSERT_EQ(chmod(certs_dir_.c_str(), 0711), 0);
  EXPECT_THAT(Refusal(), HasSubstr("the certificate directory"));
}

TEST_F(CheckEndpointTest, RefusesASocketDirectoryHoldingAnythingButTheSocket) {
  std::ofstream(socket_dir_ + "/extra") << "x";
  EXPECT_THAT(Refusal(), HasSubstr("must hold only escalate.sock"));
  ASSERT_EQ(unlink((socket_dir_ + "/extra").c_str()), 0);
  ASSERT_EQ(unlink((socket_dir_ + "/escalate.sock").c_str()), 0);
  EXPECT_THAT(Refusal(), HasSubstr("it holds: nothing"));
  std::ofstream(socket_dir_ + "/escalate.sock") << "not a socket";
  EXPECT_THAT(Refusal(), HasSubstr("is not a socket"));
}

TEST_F(CheckEndpointTest, RefusesCertificatesOnADisk) {
  char tmpl[] = "/var/tmp/laz-ep-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string disk = std::string(tmpl) + "/" + kId;
  MakeCertsDir(disk);
  answer_.set_certs_dir(disk);
  EXPECT_THAT(Refusal(), HasSubstr("not on a memory filesystem"));
  (void)!system((std::string("rm -rf ") + tmpl).c_str());
}

TEST_F(CheckEndpointTest, RefusesAMissingOrReadableOrLinkedCertificateFile) {
  const std::string key = certs_dir_ + "/client.key";
  ASSERT_EQ(chmod(key.c_str(), 0640), 0);
  EXPECT_THAT(Refusal(), HasSubstr("client.key is not owned by uid"));
  ASSERT_EQ(unlink(key.c_str()), 0);
  EXPECT_THAT(Refusal(), HasSubstr("client.key"));
  ASSERT_EQ(symlink((certs_dir_ + "/ca.pem").c_str(), key.c_str()), 0);
  EXPECT_THAT(Refusal(), HasSubstr("client.key is not a regular file"));
}

TEST_F(CheckEndpointTest, RefusesARelativeOrEmptyCertificateDirectory) {
  answer_.set_certs_dir("");
  EXPECT_THAT(Refusal(), HasSubstr("not a clean absolute path"));
  answer_.set_certs_dir(certs_dir_ + "/../" + kId);
  EXPECT_THAT(Refusal(), HasSubstr("not a clean absolute path"));
}

TEST_F(CheckEndpointTest, RefusesACertificateDirectoryNotNamedForTheSession) {
  const std::string other = shm_ + "/ba9876543210";
  MakeCertsDir(other);
  answer_.set_certs_dir(other);
  EXPECT_THAT(Refusal(), HasSubstr("ending in the session id"));
}

// A root others can enter (or another user's, like a squatted
// /dev/shm/lazaret-<uid>) is never mounted from.
TEST_F(CheckEndpointTest, RefusesACertificateRootOthersCanEnter) {
  ASSERT_EQ(chmod(shm_.c_str(), 0755), 0);
  EXPECT_THAT(Refusal(), HasSubstr("the certificate root"));
  ASSERT_EQ(chmod(shm_.c_str(), 0700), 0);
  EXPECT_TRUE(Check().ok()) << Check().status();
}

TEST(ExpectedPathsTest, SocketAndCertificateDirectoriesAreNamedBySession) {
  EXPECT_EQ(SessionSocketDir("/run/user/1000/lazaret/escalation", kId),
            "/run/user/1000/lazaret/escalation/0123456789ab");
  EXPECT_EQ(ExpectedCertsDir(1000, kId), "/dev/shm/lazaret-1000.XXXXXX/0123456789ab");
}

}  // namespace
}  // namespace lazaret::cli::escalation
