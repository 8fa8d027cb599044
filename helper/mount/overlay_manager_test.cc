#include "helper/mount/overlay_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "helper/mount/state_file.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::mounthelper {
namespace {

const std::string kA = "aaaaaaaaaaaa";
const std::string kB = "bbbbbbbbbbbb";
const std::string kImg1(64, '1');
const std::string kImg2(64, '2');

class FakeSessions final : public SessionSource {
 public:
  absl::StatusOr<ProfileFacts> ProfileOfSession(const std::string& id) override {
    if (!live.count(id)) return absl::NotFoundError(absl::StrCat("no session ", id));
    return profile;
  }
  absl::StatusOr<bool> IsLive(const std::string& id) override { return live.count(id) > 0; }
  absl::StatusOr<ProfileFacts> Profile(const ProfileQuery& q) override {
    queries.push_back(q);
    return profile;
  }
  std::vector<ProfileQuery> queries;
  ProfileFacts profile;
  std::set<std::string> live;
};

// Mounts nothing: records what the manager asked, with an "image" that is
// a directory of the test.
class FakeOps final : public OverlayOps {
 public:
  explicit FakeOps(std::string image_root) : image_root_(std::move(image_root)) {}
  absl::StatusOr<fs::DirFd> MountImage(const std::string& id) override {
    ++image_mounts[id];
    return fs::DirFd::Open(image_root_);
  }
  absl::Status UnmountImage(const std::string& id) override {
    --image_mounts[id];
    return absl::OkStatus();
  }
  absl::StatusOr<FuseProcess> MountOverlay(const fs::DirFd&, const CheckedOverlay& o,
                                           OverlayDriver driver) override {
    drivers.push_back(driver);
    if (fail_mount == o.directory) return absl::InternalError("fuse-overlayfs failed");
    if (driver == OverlayDriver::kKernel && kernel_refuses) {
      return absl::UnimplementedError("kernel overlayfs: refused");
    }
    mounted.insert(o.paths.merged);
    return driver == OverlayDriver::kFuse ? FuseProcess{12345, 1} : FuseProcess{};
  }
  absl::Status UnmountOverlay(const std::string& merged, FuseProcess) override {
    if (busy.count(merged)) return absl::FailedPreconditionError("busy");
    mounted.erase(merged);
    return absl::OkStatus();
  }
  bool IsMounted(const std::string& merged) override { return mounted.count(merged) > 0; }

  std::map<std::string, int> image_mounts;
  std::set<std::string> mounted;
  std::set<std::string> busy;
  std::string fail_mount;
  bool kernel_refuses = false;
  std::vector<OverlayDriver> drivers;  // of every MountOverlay, in order

 private:
  std::string image_root_;
};

class OverlayManagerTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    fs::ScratchTest::SetUp();
    for (const char* d : {"data", "img", "img/usr", "img/etc", "run"}) {
      ASSERT_EQ(mkdir(P(d).c_str(), 0700), 0);
    }
    sessions_.profile = {"prof", P("data"), P("data/prof"), {"/usr", "/etc"}};
    sessions_.live = {kA, kB};
    ops_ = std::make_unique<FakeOps>(P("img"));
    state_ = P("run/mounts");
    manager_ = std::make_unique<OverlayManager>(&sessions_, ops_.get(), state_, geteuid());
  }
  std::string Merged(const std::string& name) {
    return P(absl::StrCat("data/prof/", name, "_merged"));
  }

  FakeSessions sessions_;
  std::unique_ptr<FakeOps> ops_;
  std::string state_;
  std::unique_ptr<OverlayManager> manager_;
};

TEST_F(OverlayManagerTest, AttachMountsEachPersistentDirOverTheImage) {
  absl::StatusOr<std::vector<Mounted>> m = manager_->Attach(kA, kImg1);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0].directory, "/usr");
  EXPECT_EQ((*m)[0].merged, Merged("usr"));
  EXPECT_EQ((*m)[1].directory, "/etc");
  EXPECT_EQ(ops_->image_mounts[kImg1], 2);  // one image mount per overlay
  EXPECT_TRUE(ops_->IsMounted(Merged("etc")));
}

TEST_F(OverlayManagerTest, BadIdsAndUnknownSessionsRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Attach("AAAAAAAAAAAA", kImg1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Attach(kA, "abc").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Attach(kA, std::string(64, 'G')).status()));
  EXPECT_TRUE(absl::IsNotFound(manager_->Attach("cccccccccccc", kImg1).status()));
  EXPECT_TRUE(ops_->mounted.empty());
}

TEST_F(OverlayManagerTest, NestedPersistentDirsRefused) {
  sessions_.profile.persistent_dirs = {"/usr", "/usr/local"};
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Attach(kA, kImg1).status()));
}

TEST_F(OverlayManagerTest, ImageWithoutTheDirectoryRefusedAndNothingLeftMounted) {
  sessions_.profile.persistent_dirs = {"/usr", "/opt"};
  absl::Status s = manager_->Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("has no directory /opt"), std::string::npos) << s;
  EXPECT_TRUE(ops_->mounted.empty());
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
  EXPECT_TRUE(manager_->List().empty());
}

TEST_F(OverlayManagerTest, SecondSessionSharesAndLastDetachUnmounts) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  absl::StatusOr<std::vector<Mounted>> m = manager_->Attach(kB, kImg1);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)[0].holders, (std::set<std::string>{kA, kB}));
  EXPECT_EQ(ops_->image_mounts[kImg1], 2);
  absl::StatusOr<std::vector<std::string>> u = manager_->Detach(kA);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->empty());
  EXPECT_TRUE(ops_->IsMounted(Merged("usr")));
  u = manager_->Detach(kB);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(std::set<std::string>(u->begin(), u->end()), (std::set<std::string>{"/usr", "/etc"}));
  EXPECT_TRUE(ops_->mounted.empty());
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
}

TEST_F(OverlayManagerTest, OtherImageWhileHeldRefusedThenMountedOnceFree) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  absl::Status s = manager_->Attach(kB, kImg2).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_NE(s.message().find(kA), std::string::npos) << s;
  ASSERT_TRUE(manager_->Detach(kA).ok());
  absl::StatusOr<std::vector<Mounted>> m = manager_->Attach(kB, kImg2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)[0].image_id, kImg2);
}

TEST_F(OverlayManagerTest, OtherImageAllowedWhenTheHolderEndedUnnoticed) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  sessions_.live.erase(kA);  // ended; the registry's event not seen yet
  absl::StatusOr<std::vector<Mounted>> m = manager_->Attach(kB, kImg2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)[0].image_id, kImg2);
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
}

TEST_F(OverlayManagerTest, CleanupDropsEndedHoldersAndUnmounts) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  ASSERT_TRUE(manager_->Attach(kB, kImg1).ok());
  sessions_.live.erase(kA);
  absl::StatusOr<std::vector<Mounted>> u = manager_->Cleanup();
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->empty());
  sessions_.live.erase(kB);
  u = manager_->Cleanup();
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->size(), 2u);
  EXPECT_TRUE(ops_->mounted.empty());
}

TEST_F(OverlayManagerTest, BusyMountStaysListedUntilItCanBeUnmounted) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  ops_->busy.insert(Merged("usr"));
  EXPECT_FALSE(manager_->Detach(kA).ok());
  ASSERT_EQ(manager_->List().size(), 1u);
  ops_->busy.clear();
  absl::StatusOr<std::vector<Mounted>> u = manager_->Cleanup();
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->size(), 1u);
  EXPECT_TRUE(ops_->mounted.empty());
}

TEST_F(OverlayManagerTest, RestartReadoptsLiveHoldersAndUnmountsTheRest) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  struct stat st {};
  ASSERT_EQ(stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A new helper, the same system.
  auto again = std::make_unique<OverlayManager>(&sessions_, ops_.get(), state_, geteuid());
  ASSERT_TRUE(again->Recover().ok());
  ASSERT_EQ(again->List().size(), 1u);
  EXPECT_EQ(again->List()[0].holders, std::set<std::string>{kA});
  sessions_.live.clear();
  auto third = std::make_unique<OverlayManager>(&sessions_, ops_.get(), state_, geteuid());
  ASSERT_TRUE(third->Recover().ok());
  EXPECT_TRUE(third->List().empty());
  EXPECT_TRUE(ops_->mounted.empty());
  absl::StatusOr<std::vector<Mounted>> saved = LoadState(state_);
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->empty());
}

TEST_F(OverlayManagerTest, RestartIgnoresARecordNamingAnotherPath) {
  MountTable t;
  Mounted m;
  m.profile_dir = P("data/prof");
  m.directory = "/usr";
  m.merged = "/etc";  // not what the layout derives
  m.image_id = kImg1;
  m.holders = {kA};
  t.Add(m);
  ASSERT_TRUE(SaveState(state_, t).ok());
  ops_->mounted.insert("/etc");
  ASSERT_TRUE(manager_->Recover().ok());
  EXPECT_TRUE(manager_->List().empty());
  EXPECT_TRUE(ops_->IsMounted("/etc"));
}

TEST_F(OverlayManagerTest, ResetRefusedWhileHeldThenEmptiesTheLayers) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  Write("data/prof/usr_changes/poisoned", "x");
  Write("data/prof/etc_changes/keep", "x");
  absl::Status s = manager_->Reset({"prof", "", ""}, "/usr").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_NE(s.message().find(kA), std::string::npos);
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Reset({"prof", "", ""}, "/var").status()));
  absl::StatusOr<std::vector<std::string>> r = manager_->Reset({"prof", "", ""}, "/usr");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, std::vector<std::string>{"/usr"});
  EXPECT_FALSE(Exists("data/prof/usr_changes/poisoned"));
  EXPECT_TRUE(Exists("data/prof/usr_changes"));
  EXPECT_TRUE(Exists("data/prof/etc_changes/keep"));
}

TEST_F(OverlayManagerTest, ResetDoesNotFollowASymlinkOutOfTheLayer) {
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("data/prof/usr_changes").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("data/prof/usr_work").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("data/prof/usr_merged").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("precious").c_str(), 0700), 0);
  Write("precious/file", "x");
  ASSERT_EQ(symlink(P("precious").c_str(), P("data/prof/usr_changes/link").c_str()), 0);
  ASSERT_TRUE(manager_->Reset({"prof", "", ""}, "/usr").ok());
  EXPECT_TRUE(Exists("precious/file"));
  EXPECT_FALSE(Exists("data/prof/usr_changes/link"));
}

TEST_F(OverlayManagerTest, DescribeReportsChangesAndHolders) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  Write("data/prof/usr_changes/newfile", "abc");
  absl::StatusOr<ProfileState> s = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->directories.size(), 2u);
  EXPECT_EQ(s->directories[0].stats.changed, std::vector<std::string>{"newfile"});
  EXPECT_EQ(s->directories[0].stats.bytes, 3u);
  EXPECT_TRUE(s->directories[0].mounted);
  EXPECT_EQ(s->directories[0].sessions, std::vector<std::string>{kA});
}

// `lazaret state --config FILE` in a workspace: the profile is looked up
// as `lazaret run` there would look it up.
TEST_F(OverlayManagerTest, StateCommandsPassTheWorkspaceAndConfigToTheLookup) {
  ASSERT_TRUE(manager_->Describe({"prof", "/home/u/ws", "/home/u/alt.toml"}).ok());
  ASSERT_TRUE(manager_->Reset({"prof", "/home/u/ws2", "/home/u/alt2.toml"}, "").ok());
  ASSERT_EQ(sessions_.queries.size(), 2u);
  EXPECT_EQ(sessions_.queries[0].name, "prof");
  EXPECT_EQ(sessions_.queries[0].workspace, "/home/u/ws");
  EXPECT_EQ(sessions_.queries[0].explicit_config, "/home/u/alt.toml");
  EXPECT_EQ(sessions_.queries[1].workspace, "/home/u/ws2");
  EXPECT_EQ(sessions_.queries[1].explicit_config, "/home/u/alt2.toml");
}

}  // namespace
}  // namespace lazaret::mounthelper

namespace lazaret::mounthelper {
namespace {

std::string Record(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(none)";
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? std::string(buf, n) : "";
}

TEST_F(OverlayManagerTest, KernelOverlayByDefaultAndRecordedPerLayer) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  EXPECT_EQ(ops_->drivers, std::vector<OverlayDriver>{OverlayDriver::kKernel});
  EXPECT_EQ(Record(P("data/prof/usr_layer")), "kernel\n");
  absl::StatusOr<ProfileState> st = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->directories[0].overlay, "kernel");
}

TEST_F(OverlayManagerTest, AutoFallsBackToFuseWhereTheKernelRefusesAndKeepsIt) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ops_->kernel_refuses = true;
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  EXPECT_EQ(ops_->drivers,
            (std::vector<OverlayDriver>{OverlayDriver::kKernel, OverlayDriver::kFuse}));
  EXPECT_EQ(Record(P("data/prof/usr_layer")), "fuse-overlayfs\n");
  ASSERT_TRUE(manager_->Detach(kA).ok());
  // The layer stays fuse-overlayfs's, even where the kernel would now mount it.
  ops_->kernel_refuses = false;
  ops_->drivers.clear();
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  EXPECT_EQ(ops_->drivers, std::vector<OverlayDriver>{OverlayDriver::kFuse});
}

TEST_F(OverlayManagerTest, ForcedKernelDoesNotFallBack) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ops_->kernel_refuses = true;
  OverlayManager kernel_only(&sessions_, ops_.get(), "", geteuid(), OverlayPreference::kKernel);
  absl::Status s = kernel_only.Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
  EXPECT_EQ(ops_->drivers, std::vector<OverlayDriver>{OverlayDriver::kKernel});
  EXPECT_EQ(Record(P("data/prof/usr_layer")), "(none)");
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
}

TEST_F(OverlayManagerTest, ALayerIsNeverMountedByTheOtherDriver) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());  // kernel
  ASSERT_TRUE(manager_->Detach(kA).ok());
  OverlayManager fuse_only(&sessions_, ops_.get(), "", geteuid(), OverlayPreference::kFuse);
  absl::Status s = fuse_only.Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("written by kernel"), std::string::npos) << s;
  // A reset drops the record with the layer: the next mount decides anew.
  ASSERT_TRUE(fuse_only.Reset({"prof", "", ""}, "/usr").ok());
  EXPECT_EQ(Record(P("data/prof/usr_layer")), "(none)");
  ASSERT_TRUE(fuse_only.Attach(kA, kImg1).ok());
  EXPECT_EQ(Record(P("data/prof/usr_layer")), "fuse-overlayfs\n");
}

TEST_F(OverlayManagerTest, AForgedLayerRecordIsRefused) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(symlink("/etc/passwd", P("data/prof/usr_layer").c_str()), 0);
  EXPECT_FALSE(manager_->Attach(kA, kImg1).ok());
  ASSERT_EQ(unlink(P("data/prof/usr_layer").c_str()), 0);
  const int fd = open(P("data/prof/usr_layer").c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "btrfs\n", 6), 6);
  close(fd);
  absl::Status s = manager_->Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(ops_->mounted.empty());
}

TEST(OverlayPreferenceTest, ParsesTheEnvironmentValue) {
  EXPECT_EQ(*ParsePreference(""), OverlayPreference::kAuto);
  EXPECT_EQ(*ParsePreference("auto"), OverlayPreference::kAuto);
  EXPECT_EQ(*ParsePreference("kernel"), OverlayPreference::kKernel);
  EXPECT_EQ(*ParsePreference("fuse-overlayfs"), OverlayPreference::kFuse);
  absl::StatusOr<OverlayPreference> bad = ParsePreference("fuse");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("auto (the default), kernel or fuse-overlayfs"),
            std::string::npos);
}

}  // namespace
}  // namespace lazaret::mounthelper
