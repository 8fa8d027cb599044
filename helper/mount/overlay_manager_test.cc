#include "helper/mount/overlay_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
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

  // The capped file system: persist.img a file whose content is the cap,
  // persist/ a plain directory, "mounted" while listed in `mounted`.
  absl::StatusOr<CappedMount> MountCapped(const CheckedProfile& p, const std::string&,
                                          std::optional<uint64_t> cap, uid_t,
                                          bool read_only) override {
    capped_calls.push_back({cap, read_only});
    if (!fail_capped.ok()) return fail_capped;
    if (cap) {
      const int fd = openat(p.profile.get(), "persist.img", O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) return absl::InternalError("cannot write persist.img");
      const std::string text = absl::StrCat(*cap);
      (void)!write(fd, text.data(), text.size());
      close(fd);
    } else if (!HasCappedImage(p)) {
      return absl::NotFoundError("no persist.img");
    }
    (void)mkdirat(p.profile.get(), "persist", 0700);
    mounted.insert(PersistMountPath(p.profile_dir));
    return CappedMount{capped_kind, capped_kind == CappedKind::kFuse2fs ? 777 : 0, 1};
  }
  absl::Status UnmountCapped(const std::string& profile_dir, CappedMount m,
                             std::chrono::milliseconds) override {
    const std::string mp = PersistMountPath(profile_dir);
    if (busy.count(mp)) return absl::FailedPreconditionError("busy");
    unmounted_capped.push_back(m);
    mounted.erase(mp);
    return absl::OkStatus();
  }
  absl::StatusOr<CappedUsage> CappedUsageOf(const CheckedProfile&, uid_t) override {
    return CappedUsage{64 << 20, 3 << 20, 61 << 20, 12, 16384};
  }
  bool HasCappedImage(const CheckedProfile& p) override {
    struct stat st {};
    return fstatat(p.profile.get(), "persist.img", &st, AT_SYMLINK_NOFOLLOW) == 0;
  }
  int CappedMounts() const {
    int n = 0;
    for (const std::string& m : mounted) n += m.size() > 8 && m.substr(m.size() - 8) == "/persist";
    return n;
  }

  std::vector<std::pair<std::optional<uint64_t>, bool>> capped_calls;  // cap, read_only
  std::vector<CappedMount> unmounted_capped;
  absl::Status fail_capped;
  CappedKind capped_kind = CappedKind::kLoop;
  std::map<std::string, int> image_mounts;
  std::set<std::string> mounted;
  std::set<std::string> busy;
  std::string fail_mount;
  bool kernel_refuses = false;
  std::vector<OverlayDriver> drivers;  // of every MountOverlay, in order

 private:
  std::string image_root_;
};

std::string Record(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(none)";
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? std::string(buf, n) : "";
}

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
  absl::StatusOr<SavedState> saved = LoadState(state_);
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->mounts.empty());
  EXPECT_TRUE(saved->capped.empty());
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
  Write("data/prof/persist/usr_changes/poisoned", "x");
  Write("data/prof/persist/etc_changes/keep", "x");
  absl::Status s = manager_->Reset({"prof", "", ""}, "/usr").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_NE(s.message().find(kA), std::string::npos);
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->Reset({"prof", "", ""}, "/var").status()));
  absl::StatusOr<std::vector<std::string>> r = manager_->Reset({"prof", "", ""}, "/usr");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, std::vector<std::string>{"/usr"});
  EXPECT_FALSE(Exists("data/prof/persist/usr_changes/poisoned"));
  EXPECT_TRUE(Exists("data/prof/persist/usr_changes"));
  EXPECT_TRUE(Exists("data/prof/persist/etc_changes/keep"));
  EXPECT_TRUE(Exists("data/prof/persist.img"));
  // Mounted as it is for the reset (no resize), and unmounted after.
  EXPECT_EQ(ops_->capped_calls.back(), std::make_pair(std::optional<uint64_t>(), false));
  EXPECT_EQ(ops_->CappedMounts(), 0);
}

// A layer from before the cap (directly in the profile directory) is
// removed by a reset, without following what the sandbox put in it.
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
  EXPECT_FALSE(Exists("data/prof/usr_changes"));
  EXPECT_FALSE(Exists("data/prof/usr_work"));
}

TEST_F(OverlayManagerTest, DescribeReportsChangesAndHolders) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  Write("data/prof/persist/usr_changes/newfile", "abc");
  absl::StatusOr<ProfileState> s = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->directories.size(), 2u);
  EXPECT_EQ(s->directories[0].stats.changed, std::vector<std::string>{"newfile"});
  EXPECT_EQ(s->directories[0].stats.bytes, 3u);
  EXPECT_TRUE(s->directories[0].mounted);
  EXPECT_EQ(s->directories[0].sessions, std::vector<std::string>{kA});
  EXPECT_EQ(s->directories[0].changes, P("data/prof/persist/usr_changes"));
  EXPECT_TRUE(s->usage.exists);
  EXPECT_EQ(s->usage.cap_bytes, kDefaultPersistentCap);
  EXPECT_EQ(s->usage.usage.used_bytes, 3u << 20);
  EXPECT_EQ(s->usage.held_by, "loop-mounted ext4 image");
  EXPECT_EQ(ops_->image_mounts[kImg1], 2);  // the overlays' own; Describe's are undone
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

TEST_F(OverlayManagerTest, OneCappedMountPerProfileSharedAndUnmountedAfterTheLast) {
  sessions_.profile.persistent_cap_bytes = 64 << 20;
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  ASSERT_TRUE(manager_->Attach(kB, kImg1).ok());
  // Made to the cap once, before the first overlay; shared by both
  // directories and both sessions.
  ASSERT_EQ(ops_->capped_calls.size(), 1u);
  EXPECT_EQ(ops_->capped_calls[0], std::make_pair(std::optional<uint64_t>(64 << 20), false));
  EXPECT_EQ(ops_->CappedMounts(), 1);
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_EQ(ops_->CappedMounts(), 1);
  ASSERT_TRUE(manager_->Detach(kB).ok());
  EXPECT_EQ(ops_->CappedMounts(), 0);
  EXPECT_EQ(ops_->unmounted_capped.size(), 1u);
  EXPECT_TRUE(ops_->mounted.empty());
}

// A sandbox's mount namespace may keep a copy of an overlay for a moment
// after its session ended, which keeps the capped file system busy.
TEST_F(OverlayManagerTest, BusyCappedMountIsKeptReusedAndUnmountedByAReset) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  ops_->busy.insert(P("data/prof/persist"));
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_EQ(ops_->CappedMounts(), 1);
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  EXPECT_EQ(ops_->capped_calls.size(), 1u);  // the kept one, not a second mount
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_TRUE(manager_->Cleanup().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(manager_->Reset({"prof", "", ""}, "").status()));
  EXPECT_TRUE(Exists("data/prof/persist.img"));
  ops_->busy.clear();
  ASSERT_TRUE(manager_->Reset({"prof", "", ""}, "").ok());
  EXPECT_EQ(ops_->CappedMounts(), 0);
  EXPECT_FALSE(Exists("data/prof/persist.img"));
}

TEST_F(OverlayManagerTest, CappedMountFailureMountsNoOverlay) {
  ops_->fail_capped = absl::ResourceExhaustedError("only 1 MiB free");
  absl::Status s = manager_->Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(ops_->mounted.empty());
  EXPECT_TRUE(ops_->drivers.empty());
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
}

TEST_F(OverlayManagerTest, FailedOverlayUnmountsTheCappedMountToo) {
  ops_->fail_mount = "/usr";
  EXPECT_FALSE(manager_->Attach(kA, kImg1).ok());
  EXPECT_TRUE(ops_->mounted.empty());
  EXPECT_EQ(ops_->unmounted_capped.size(), 1u);
}

TEST_F(OverlayManagerTest, CappedMountReadoptedAfterRestartAndCleanedWithoutHolders) {
  ops_->capped_kind = CappedKind::kFuse2fs;
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  absl::StatusOr<SavedState> saved = LoadState(state_);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(saved->capped.size(), 1u);
  EXPECT_EQ(saved->capped[0].profile_dir, P("data/prof"));
  EXPECT_EQ(saved->capped[0].mount.kind, CappedKind::kFuse2fs);
  EXPECT_EQ(saved->capped[0].mount.pid, 777);
  auto again = std::make_unique<OverlayManager>(&sessions_, ops_.get(), state_, geteuid());
  ASSERT_TRUE(again->Recover().ok());
  EXPECT_EQ(again->List().size(), 2u);
  EXPECT_EQ(ops_->capped_calls.size(), 1u);  // adopted, not mounted again
  sessions_.live.clear();
  auto third = std::make_unique<OverlayManager>(&sessions_, ops_.get(), state_, geteuid());
  ASSERT_TRUE(third->Recover().ok());
  EXPECT_TRUE(ops_->mounted.empty());
  ASSERT_EQ(ops_->unmounted_capped.size(), 1u);
  EXPECT_EQ(ops_->unmounted_capped[0].pid, 777);  // the adopted fuse2fs is waited for
}

TEST_F(OverlayManagerTest, CappedRecordWithoutOverlaysUnmountedAtRestart) {
  MountTable t;
  t.AddCapped(P("data/prof"), CappedMount{CappedKind::kLoop, 0, 0});
  ASSERT_TRUE(SaveState(state_, t).ok());
  ops_->mounted.insert(P("data/prof/persist"));
  ASSERT_TRUE(manager_->Recover().ok());
  EXPECT_TRUE(ops_->mounted.empty());
}

TEST_F(OverlayManagerTest, FuseOverlayOverFuse2fsWithoutTryingTheKernel) {
  sessions_.profile.persistent_dirs = {"/usr"};
  ops_->capped_kind = CappedKind::kFuse2fs;
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  EXPECT_EQ(ops_->drivers, std::vector<OverlayDriver>{OverlayDriver::kFuse});
}

TEST_F(OverlayManagerTest, PreCapLayersRefusedWithThePathAndTheFix) {
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("data/prof/etc_changes").c_str(), 0700), 0);
  Write("data/prof/etc_changes/hosts", "old");
  absl::Status s = manager_->Attach(kA, kImg1).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find(P("data/prof/etc_changes")), std::string::npos) << s;
  EXPECT_NE(s.message().find("lazaret state reset prof"), std::string::npos) << s;
  EXPECT_TRUE(ops_->mounted.empty());
  EXPECT_TRUE(ops_->capped_calls.empty());
  // state show names it; the data is still there.
  absl::StatusOr<ProfileState> st = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->directories[1].uncapped_changes, P("data/prof/etc_changes"));
  EXPECT_TRUE(st->directories[0].uncapped_changes.empty());
  EXPECT_TRUE(Exists("data/prof/etc_changes/hosts"));
  ASSERT_TRUE(manager_->Reset({"prof", "", ""}, "").ok());
  EXPECT_FALSE(Exists("data/prof/etc_changes"));
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
}

TEST_F(OverlayManagerTest, ResetOfEveryDirectoryDeletesTheImage) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  Write("data/prof/persist/usr_changes/f", "x");
  EXPECT_TRUE(absl::IsFailedPrecondition(manager_->Reset({"prof", "", ""}, "").status()));
  EXPECT_TRUE(Exists("data/prof/persist.img"));
  ASSERT_TRUE(manager_->Detach(kA).ok());
  absl::StatusOr<std::vector<std::string>> r = manager_->Reset({"prof", "", ""}, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<std::string>{"/usr", "/etc"}));
  EXPECT_FALSE(Exists("data/prof/persist.img"));
  EXPECT_FALSE(Exists("data/prof/usr_layer"));
  EXPECT_FALSE(Exists("data/prof/usr_image"));
  absl::StatusOr<ProfileState> st = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_FALSE(st->usage.exists);
}

TEST_F(OverlayManagerTest, DescribeMountsAnUnheldImageReadOnlyAndComparesWithTheImage) {
  ASSERT_TRUE(manager_->Attach(kA, kImg1).ok());
  ASSERT_TRUE(manager_->Detach(kA).ok());
  EXPECT_EQ(Record(P("data/prof/usr_image")), kImg1 + "\n");
  ops_->capped_calls.clear();
  absl::StatusOr<ProfileState> st = manager_->Describe({"prof", "", ""});
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_EQ(ops_->capped_calls.size(), 1u);
  EXPECT_EQ(ops_->capped_calls[0], std::make_pair(std::optional<uint64_t>(), true));
  EXPECT_EQ(ops_->CappedMounts(), 0);
  EXPECT_EQ(ops_->image_mounts[kImg1], 0);
  EXPECT_EQ(st->usage.usage.inodes_total, 16384u);
  EXPECT_TRUE(st->directories[0].stats.limit.empty()) << st->directories[0].stats.limit;
}

}  // namespace
}  // namespace lazaret::mounthelper

namespace lazaret::mounthelper {
namespace {

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
