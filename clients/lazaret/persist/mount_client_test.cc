// MountClient, CheckAttachedMounts and DetachSessionBestEffort against a
// fake MountHelperService on a real Unix socket.
#include "clients/lazaret/persist/mount_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "clients/lazaret/persist/fake_mount_helper_service.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::persist {
namespace {

namespace pb = ::lazaret::mounthelper::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kId[] = "0123456789ab";
const std::string kImage(64, 'c');

pb::OverlayMount Overlay(const std::string& d, const std::string& merged,
                         const std::string& image = kImage) {
  pb::OverlayMount m;
  m.set_profile("p1");
  m.set_directory(d);
  m.set_merged(merged);
  m.set_image_id(image);
  m.add_sessions(kId);
  return m;
}

class MountClientTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }
  void StartHelper() {
    auto listener = UnixListener::Bind(MountHelperSocket(tmp_.path()));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  MountClient Client() { return MountClient(MountHelperSocket(tmp_.path())); }

  test::TempDir tmp_{"laz-mc"};
  FakeMountHelperService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
};

TEST_F(MountClientTest, SocketIsTheSupervisorsName) {
  EXPECT_EQ(MountHelperSocket("/rt"), "/rt/mount-helper.sock");
}

TEST_F(MountClientTest, AttachSendsTheSessionAndImageAndReturnsTheMounts) {
  StartHelper();
  *fake_.attach.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  absl::StatusOr<pb::AttachSessionResponse> r = Client().AttachSession(kId, kImage);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->mounts_size(), 1);
  EXPECT_EQ(r->mounts(0).merged(), "/d/p1/usr_merged");
  EXPECT_THAT(fake_.Calls(), ElementsAre(std::string("AttachSession ") + kId + " " + kImage));
}

TEST_F(MountClientTest, NoHelperNamesTheSocketAndLazaretUp) {
  absl::StatusOr<pb::AttachSessionResponse> r = Client().AttachSession(kId, kImage);
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(MountHelperSocket(tmp_.path())));
  EXPECT_THAT(r.status().message(), HasSubstr("lazaret up"));
}

TEST_F(MountClientTest, ARefusalKeepsTheHelpersCodeAndMessage) {
  StartHelper();
  fake_.status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                              "session aaaaaaaaaaaa holds the overlays over another image");
  absl::StatusOr<pb::AttachSessionResponse> r = Client().AttachSession(kId, kImage);
  ASSERT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("refused AttachSession: session aaaaaaaaaaaa"));
}

TEST_F(MountClientTest, StateCallsSendTheirArguments) {
  StartHelper();
  fake_.describe.set_profile("p1");
  fake_.reset.add_reset("/usr");
  *fake_.cleanup.add_unmounted() = Overlay("/etc", "/d/p1/etc_merged");
  MountClient c = Client();
  ASSERT_TRUE(c.DescribeState("p1").ok());
  absl::StatusOr<pb::ResetStateResponse> reset = c.ResetState("p1", "/usr");
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_THAT(reset->reset(), ElementsAre("/usr"));
  absl::StatusOr<pb::CleanupResponse> clean = c.Cleanup();
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(clean->unmounted(0).directory(), "/etc");
  ASSERT_TRUE(c.DetachSession(kId).ok());
  EXPECT_THAT(fake_.Calls(), ElementsAre("DescribeState p1", "ResetState p1 /usr", "Cleanup",
                                         std::string("DetachSession ") + kId));
}

TEST_F(MountClientTest, DetachBestEffortIsQuietWhenTheHelperIsDown) {
  EXPECT_TRUE(DetachSessionBestEffort(tmp_.path(), kId).ok());
}

TEST_F(MountClientTest, DetachBestEffortReportsARefusal) {
  StartHelper();
  fake_.status = grpc::Status(grpc::StatusCode::INTERNAL, "umount failed: busy");
  absl::Status s = DetachSessionBestEffort(tmp_.path(), kId);
  EXPECT_THAT(s.message(), HasSubstr("umount failed: busy"));
  EXPECT_THAT(fake_.Calls(), ElementsAre(std::string("DetachSession ") + kId));
}

TEST(CheckAttachedMountsTest, AcceptsExactlyThePlannedOverlays) {
  pb::AttachSessionResponse a;
  *a.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  *a.add_mounts() = Overlay("/etc", "/d/p1/etc_merged");
  const std::vector<PlannedOverlay> planned = {{"/usr", "/d/p1/usr_merged"},
                                               {"/etc", "/d/p1/etc_merged"}};
  EXPECT_TRUE(CheckAttachedMounts(planned, kImage, a).ok());
}

TEST(CheckAttachedMountsTest, RefusesEveryDifference) {
  const std::vector<PlannedOverlay> planned = {{"/usr", "/d/p1/usr_merged"},
                                               {"/etc", "/d/p1/etc_merged"}};
  struct Case {
    const char* name;
    pb::AttachSessionResponse answer;
    const char* error;
  };
  pb::AttachSessionResponse fewer;
  *fewer.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  pb::AttachSessionResponse swapped;
  *swapped.add_mounts() = Overlay("/etc", "/d/p1/etc_merged");
  *swapped.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  pb::AttachSessionResponse elsewhere;
  *elsewhere.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  *elsewhere.add_mounts() = Overlay("/etc", "/home/u/.ssh");
  pb::AttachSessionResponse other_image;
  *other_image.add_mounts() = Overlay("/usr", "/d/p1/usr_merged");
  *other_image.add_mounts() = Overlay("/etc", "/d/p1/etc_merged", std::string(64, 'd'));
  for (const Case& c : {Case{"fewer", fewer, "answered 1 overlays for 2"},
                        Case{"swapped", swapped, "overlay 1 for /etc, planned for /usr"},
                        Case{"elsewhere", elsewhere, "mounted /etc at /home/u/.ssh, not at"},
                        Case{"image", other_image, "is over image dddd"}}) {
    absl::Status s = CheckAttachedMounts(planned, kImage, c.answer);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_THAT(s.message(), HasSubstr(c.error)) << c.name;
  }
}

}  // namespace
}  // namespace lazaret::cli::persist
