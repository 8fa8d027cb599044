// AttachEndpoint and DetachSessionBestEffort against a fake
// EscalationEndpointService on a real Unix socket, with the endpoint's
// directories real (a bound socket, certificates on /dev/shm).
#include "clients/lazaret/escalation/attach.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "clients/lazaret/escalation/fake_broker_service.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::escalation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kAttachId[] = "0123456789ab";

class AttachEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_dir_ = SessionSocketDir(tmp_.path() + "/escalation", kAttachId);
    ASSERT_EQ(mkdir((tmp_.path() + "/escalation").c_str(), 0700), 0);
    ASSERT_EQ(mkdir(socket_dir_.c_str(), 0700), 0);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string sock = socket_dir_ + "/escalate.sock";
    std::memcpy(addr.sun_path, sock.c_str(), sock.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
    char tmpl[] = "/dev/shm/laz-att-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    shm_ = tmpl;
    certs_dir_ = shm_ + "/" + kAttachId;
    ASSERT_EQ(mkdir(certs_dir_.c_str(), 0700), 0);
    for (const char* f : kCertificateFiles) {
      std::ofstream(certs_dir_ + "/" + f) << "pem";
      ASSERT_EQ(chmod((certs_dir_ + "/" + f).c_str(), 0600), 0);
    }
    fake_.endpoint.set_session_id(kAttachId);
    fake_.endpoint.set_socket_dir(socket_dir_);
    fake_.endpoint.set_certs_dir(certs_dir_);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    (void)!system(("rm -rf " + shm_).c_str());
  }
  void StartBroker() {
    auto listener = UnixListener::Bind(BrokerSocket(tmp_.path()));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  absl::StatusOr<CheckedEndpoint> Attach() {
    BrokerClient client(BrokerSocket(tmp_.path()));
    return AttachEndpoint(client, kAttachId, socket_dir_, geteuid());
  }

  test::TempDir tmp_{"laz-att"};
  std::string socket_dir_, shm_, certs_dir_;
  FakeEndpointService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
};

TEST_F(AttachEndpointTest, AsksForOurSessionAndReturnsTheCheckedDirectories) {
  StartBroker();
  absl::StatusOr<CheckedEndpoint> e = Attach();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->socket_dir(), socket_dir_);
  EXPECT_EQ(e->certs_dir(), certs_dir_);
  EXPECT_THAT(fake_.calls, ElementsAre(std::string("AttachSession ") + kAttachId));
}

void ExpectNotSetUp(const absl::Status& s, const std::string& why) {
  EXPECT_FALSE(s.ok());
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("host escalation could not be set up: "));
  EXPECT_THAT(m, HasSubstr(why));
  EXPECT_THAT(m, HasSubstr("; the sandbox was not started; set [escalation] enabled = false to "
                           "run without it"));
}

TEST_F(AttachEndpointTest, NoBrokerIsAClearErrorNamingLazaretUp) {
  absl::StatusOr<CheckedEndpoint> e = Attach();
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsUnavailable(e.status())) << e.status();
  ExpectNotSetUp(e.status(), "Start Lazaret: lazaret up");
}

TEST_F(AttachEndpointTest, ARefusalKeepsTheBrokersCodeAndMessage) {
  StartBroker();
  fake_.status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "socket_dir pre-exists");
  absl::StatusOr<CheckedEndpoint> e = Attach();
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(e.status()));
  ExpectNotSetUp(e.status(), "lazaret-brokerd refused AttachSession: socket_dir pre-exists");
}

TEST_F(AttachEndpointTest, AnAnswerThatFailsTheCheckIsRefused) {
  StartBroker();
  fake_.endpoint.set_socket_dir(tmp_.path());
  ExpectNotSetUp(Attach().status(), "named the socket directory");
  fake_.endpoint.set_socket_dir(socket_dir_);
  fake_.endpoint.set_session_id("ba9876543210");
  ExpectNotSetUp(Attach().status(), "answered for session");
  fake_.endpoint.set_session_id(kAttachId);
  fake_.endpoint.set_certs_dir(tmp_.path());
  ExpectNotSetUp(Attach().status(), "the certificate directory");
}

TEST_F(AttachEndpointTest, DetachIsBestEffortButAnUnexpectedRefusalIsShown) {
  EXPECT_TRUE(DetachSessionBestEffort(tmp_.path(), kAttachId).ok()) << "no broker running";
  StartBroker();
  EXPECT_TRUE(DetachSessionBestEffort(tmp_.path(), kAttachId).ok());
  fake_.status = grpc::Status(grpc::StatusCode::NOT_FOUND, "no such session");
  EXPECT_TRUE(DetachSessionBestEffort(tmp_.path(), kAttachId).ok());
  fake_.status = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours");
  absl::Status s = DetachSessionBestEffort(tmp_.path(), kAttachId);
  EXPECT_THAT(std::string(s.message()), HasSubstr("refused DetachSession: not yours"));
  EXPECT_THAT(fake_.calls, ElementsAre(std::string("DetachSession ") + kAttachId,
                                       std::string("DetachSession ") + kAttachId,
                                       std::string("DetachSession ") + kAttachId));
}

}  // namespace
}  // namespace lazaret::cli::escalation
