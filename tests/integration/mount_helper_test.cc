// The real lazaret-mount-helper with real podman and fuse-overlayfs,
// rootful, against a fake supervisor registry and a fake configd served by
// the test on the helper's runtime directory: a session's attach mounts
// the image's /usr below the profile's upper layer, what is written in the
// merged directory lands in the upper layer and is described, two sessions
// share one overlay, the last detach (or the registry reporting the end)
// unmounts it, a killed helper's mounts are re-adopted or cleaned at the
// next start, and the helper holds exactly CAP_SYS_ADMIN. The same tests
// run rootless as LAZARET_E2E_USER (RootlessThroughPodmanUnshare re-runs
// this binary as that user), the helper started below `podman unshare` as
// the supervisor starts it; its mounts are then looked at through the
// `podman unshare`, since they exist only in rootless podman's user and
// mount namespace.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/statvfs.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "helper/mount/mounthelper.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/mounthelper/v1/mounthelper.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/capabilities.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret {
namespace {

namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;
namespace mh = ::lazaret::mounthelper::v1;
using std::chrono::milliseconds;

const std::string kA = "aaaaaaaaaaaa";
const std::string kB = "bbbbbbbbbbbb";

// The registry: sessions and their state; ending one is streamed to watchers.
class FakeSupervisor final : public sv::SupervisorService::Service {
 public:
  void Set(const std::string& id, sv::SessionState state) {
    std::lock_guard<std::mutex> l(mu_);
    states_[id] = state;
  }
  void End(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    states_.erase(id);
    ended_.push_back(id);
    cv_.notify_all();
  }
  grpc::Status GetSession(grpc::ServerContext*, const sv::GetSessionRequest* req,
                          sv::SessionInfo* resp) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = states_.find(req->id());
    if (it == states_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such session");
    Fill(req->id(), it->second, resp);
    return grpc::Status::OK;
  }
  grpc::Status ListSessions(grpc::ServerContext*, const sv::ListSessionsRequest*,
                            sv::ListSessionsResponse* resp) override {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [id, st] : states_) Fill(id, st, resp->add_sessions());
    return grpc::Status::OK;
  }
  grpc::Status WatchSessions(grpc::ServerContext* ctx, const sv::WatchSessionsRequest*,
                             grpc::ServerWriter<sv::SessionEvent>* w) override {
    std::unique_lock<std::mutex> l(mu_);
    for (const auto& [id, st] : states_) {
      sv::SessionEvent e;
      e.set_kind(sv::SESSION_EVENT_STARTED);
      Fill(id, st, e.mutable_session());
      w->Write(e);
    }
    size_t next = ended_.size();
    while (!ctx->IsCancelled()) {
      cv_.wait_for(l, milliseconds(100));
      for (; next < ended_.size(); ++next) {
        sv::SessionEvent e;
        e.set_kind(sv::SESSION_EVENT_ENDED);
        e.mutable_session()->mutable_record()->set_id(ended_[next]);
        w->Write(e);
      }
    }
    return grpc::Status::OK;
  }

 private:
  static void Fill(const std::string& id, sv::SessionState st, sv::SessionInfo* out) {
    out->mutable_record()->set_id(id);
    out->mutable_record()->set_profile("prof");
    out->set_state(st);
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, sv::SessionState> states_;
  std::deque<std::string> ended_;
};

class FakeConfig final : public cfg::ConfigService::Service {
 public:
  explicit FakeConfig(std::string data_root) : data_root_(std::move(data_root)) {}
  grpc::Status ResolveProfile(grpc::ServerContext*, const cfg::ResolveProfileRequest*,
                              cfg::ResolveProfileResponse* resp) override {
    cfg::ResolvedProfile* p = resp->mutable_profile();
    p->set_name("prof");
    p->set_data_root(data_root_);
    p->set_profile_dir(data_root_ + "/prof");
    p->add_persistent_dirs("/usr");
    p->set_persistent_cap_bytes(cap_bytes.load());
    return grpc::Status::OK;
  }

  std::atomic<uint64_t> cap_bytes{uint64_t{64} << 20};

 private:
  std::string data_root_;
};

constexpr char kRootlessChildEnv[] = "LAZARET_MOUNT_TEST_ROOTLESS";
bool Rootless() { return getenv(kRootlessChildEnv) != nullptr; }

// Whether `path` is a mount point in the mount namespace of `pid`.
bool IsMountPointIn(pid_t pid, const std::string& path) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" " + path + " ") != std::string::npos) return true;
  }
  return false;
}

// `podman image mount` (rootless: inside `podman unshare`) lists `id`.
bool ImageMounted(const std::string& id) {
  std::vector<std::string> argv = {"podman", "image", "mount"};
  if (Rootless()) argv.insert(argv.begin(), {"podman", "unshare"});
  return test::Run(argv).out.find(id) != std::string::npos;
}

// The child of `pid` (any thread's), or 0.
pid_t ChildOf(pid_t pid) {
  DIR* d = opendir(absl::StrCat("/proc/", pid, "/task").c_str());
  if (d == nullptr) return 0;
  pid_t child = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/task/", e->d_name, "/children"));
    if (in >> child) break;
  }
  closedir(d);
  return child;
}

// A tiny image with /usr/share/greeting (`content`) and a static /bin/cat,
// built once.
std::string BuildImage(const std::string& tag, const std::string& content) {
  test::CommandResult have = test::Run({"podman", "image", "inspect", "--format", "{{.Id}}", tag});
  if (have.exit_code == 0) return std::string(absl::StripAsciiWhitespace(have.out));
  test::TempDir ctx("laz-img");
  mkdir((ctx.path() + "/bin").c_str(), 0755);
  if (test::Run({"cp", test::Binary("mount_test_cat"), ctx.path() + "/bin/cat"}).exit_code != 0) {
    return "";
  }
  mkdir((ctx.path() + "/usr").c_str(), 0755);
  mkdir((ctx.path() + "/usr/share").c_str(), 0755);
  std::ofstream(ctx.path() + "/usr/share/greeting") << content;
  std::ofstream(ctx.path() + "/Containerfile") << "FROM scratch\nCOPY usr /usr\nCOPY bin /bin\n";
  test::CommandResult b = test::Run({"podman", "build", "-q", "-t", tag, ctx.path()});
  if (b.exit_code != 0) return "";
  have = test::Run({"podman", "image", "inspect", "--format", "{{.Id}}", tag});
  return std::string(absl::StripAsciiWhitespace(have.out));
}

// Each test runs with either overlay driver (LAZARET_OVERLAY): the
// kernel's overlayfs and fuse-overlayfs.
class MountHelperTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (geteuid() != 0 && !Rootless()) {
      GTEST_SKIP() << "the rootful mount helper test needs root";
    }
    if (access("/usr/bin/fuse-overlayfs", X_OK) != 0 || access("/usr/bin/podman", X_OK) != 0) {
      GTEST_SKIP() << "needs podman and fuse-overlayfs (deploy/setup-host.sh installs them)";
    }
    test::BecomeSubreaper();
    img1_ = BuildImage("localhost/lazaret-mount-test:cat1", "one\n");
    img2_ = BuildImage("localhost/lazaret-mount-test:cat2", "two\n");
    ASSERT_EQ(img1_.size(), 64u);
    ASSERT_EQ(img2_.size(), 64u);
    dir_ = std::make_unique<test::TempDir>("laz-mh");
    rt_ = dir_->path() + "/rt";
    data_ = dir_->path() + "/data";
    ASSERT_EQ(mkdir(rt_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(data_.c_str(), 0700), 0);
    config_ = std::make_unique<FakeConfig>(data_);
    supervisor_.Set(kA, sv::SESSION_STATE_ATTACHED);
    supervisor_.Set(kB, sv::SESSION_STATE_ATTACHED);
    Serve(&supervisor_, "supervisor", &sup_server_);
    Serve(config_.get(), "configd", &cfg_server_);
    StartHelper();
    merged_ = data_ + "/prof/usr_merged";
  }

  void TearDown() override {
    if (helper_ > 0) {
      // Every session ended: the helper unmounts what is left.
      for (const char* id : {"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"}) supervisor_.End(id);
      mh::CleanupResponse gone;
      if (stub_) stub_->Cleanup(Ctx().get(), mh::CleanupRequest{}, &gone);
      StopHelper(SIGTERM);
    }
    if (!Rootless() && !merged_.empty() && IsMountPoint(merged_)) {
      umount2(merged_.c_str(), MNT_DETACH);
    }
    if (!Rootless() && IsMountPoint(data_ + "/prof/persist")) {
      umount2((data_ + "/prof/persist").c_str(), MNT_DETACH);
    }
    if (sup_server_) sup_server_->Shutdown();
    if (cfg_server_) cfg_server_->Shutdown();
    test::ReapOrphans();
  }

  void Serve(grpc::Service* s, const std::string& name, std::unique_ptr<GrpcUnixServer>* out) {
    absl::StatusOr<std::unique_ptr<UnixListener>> l = UnixListener::Bind(SocketPath(name));
    ASSERT_TRUE(l.ok()) << l.status();
    absl::StatusOr<std::unique_ptr<GrpcUnixServer>> srv =
        GrpcUnixServer::Start(std::move(*l), {s}, PeerPolicy{.allowed_uid = geteuid()});
    ASSERT_TRUE(srv.ok()) << srv.status();
    *out = std::move(*srv);
  }
  std::string SocketPath(const std::string& name) { return rt_ + "/" + name + ".sock"; }
  // Files in the merged directory. Rootless, the FUSE mount exists only in
  // podman's user namespace, and the kernel refuses FUSE access from
  // outside it, so each access goes through `podman unshare` (argv only).
  std::vector<std::string> InNs(std::vector<std::string> argv) {
    if (Rootless()) argv.insert(argv.begin(), {"podman", "unshare"});
    return argv;
  }
  std::string ReadMerged(const std::string& rel) {
    return test::Run(InNs({"cat", merged_ + rel})).out;
  }
  void WriteMerged(const std::string& rel, const std::string& content) {
    ASSERT_EQ(test::Run(InNs({"tee", merged_ + rel}), {}, content).exit_code, 0);
  }
  bool RemoveMerged(const std::string& rel) {
    return test::Run(InNs({"rm", merged_ + rel})).exit_code == 0;
  }
  bool ExistsMerged(const std::string& rel) {
    return test::Run(InNs({"test", "-e", merged_ + rel})).exit_code == 0;
  }
  // The file system type of the mount at `path` (mountinfo), "" if none.
  std::string MountType(const std::string& path) {
    const std::string info =
        Rootless() ? test::Run({"podman", "unshare", "cat", "/proc/self/mountinfo"}).out
                   : test::ReadFile("/proc/self/mountinfo");
    for (absl::string_view line : absl::StrSplit(info, '\n')) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      if (f.size() < 10 || f[4] != path) continue;
      for (size_t i = 6; i + 1 < f.size(); ++i) {
        if (f[i] == "-") return std::string(f[i + 1]);
      }
    }
    return "";
  }
  bool IsMountPoint(const std::string& path) {
    if (!Rootless()) return IsMountPointIn(getpid(), path);
    const std::string info = test::Run({"podman", "unshare", "cat", "/proc/self/mountinfo"}).out;
    return info.find(" " + path + " ") != std::string::npos;
  }

  void StartHelper() {
    const std::string bin = test::Binary("lazaret-mount-helper");
    const std::string flag = "--runtime-dir=" + rt_;
    helper_ = fork();
    if (helper_ == 0) {
      setenv("LAZARET_OVERLAY", GetParam().c_str(), 1);
      if (Rootless()) {
        execl("/usr/bin/podman", "podman", "unshare", bin.c_str(), flag.c_str(),
              static_cast<char*>(nullptr));
      } else {
        execl(bin.c_str(), bin.c_str(), flag.c_str(), static_cast<char*>(nullptr));
      }
      _exit(127);
    }
    ASSERT_TRUE(test::WaitFor([&] { return CheckHealth(SocketPath("mount-helper"), 500).ok(); },
                              milliseconds(20000)));
    helper_pid_ = Rootless() ? ChildOf(helper_) : helper_;
    ASSERT_GT(helper_pid_, 0);
    stub_ = mh::MountHelperService::NewStub(DialUnix(SocketPath("mount-helper")));
  }
  // The signal goes to the helper itself; rootless, podman unshare exits
  // with it.
  void StopHelper(int sig) {
    kill(helper_pid_, sig);
    int ws;
    waitpid(helper_, &ws, 0);
    helper_ = -1;
    stub_.reset();
  }
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return c;
  }
  grpc::Status Attach(const std::string& id, const std::string& image,
                      mh::AttachSessionResponse* resp) {
    mh::AttachSessionRequest req;
    req.set_session_id(id);
    req.set_image_id(image);
    return stub_->AttachSession(Ctx().get(), req, resp);
  }
  mh::DetachSessionResponse Detach(const std::string& id) {
    mh::DetachSessionRequest req;
    req.set_session_id(id);
    mh::DetachSessionResponse resp;
    grpc::Status st = stub_->DetachSession(Ctx().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }
  mh::DescribeStateResponse Describe() {
    mh::DescribeStateRequest req;
    req.set_profile("prof");
    mh::DescribeStateResponse resp;
    grpc::Status st = stub_->DescribeState(Ctx().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }

  FakeSupervisor supervisor_;
  std::unique_ptr<FakeConfig> config_;
  std::unique_ptr<GrpcUnixServer> sup_server_, cfg_server_;
  std::unique_ptr<test::TempDir> dir_;
  std::string rt_, data_, merged_, img1_, img2_;
  pid_t helper_ = -1;      // what was started (rootless: podman unshare)
  pid_t helper_pid_ = -1;  // lazaret-mount-helper itself
  std::unique_ptr<mh::MountHelperService::Stub> stub_;
};

TEST_P(MountHelperTest, HelperHoldsSysAdminAndOnlyHandsOnTheFileCapabilities) {
  const uint64_t mask = caps::Mask(mounthelper::kCapabilities);
  const uint64_t handed = caps::Mask(mounthelper::kDelegatedCapabilities);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "CapEff"), mask);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "CapPrm"), mask | handed);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "CapBnd"), mask | handed);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "CapInh"), 0u);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "CapAmb"), 0u);
  EXPECT_EQ(test::ProcStatusHex(helper_pid_, "NoNewPrivs"), 1u);
}

TEST_P(MountHelperTest, WrittenFileLandsInChangesAndDetachUnmounts) {
  mh::AttachSessionResponse resp;
  grpc::Status st = Attach(kA, img1_, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.mounts_size(), 1);
  EXPECT_EQ(resp.mounts(0).merged(), merged_);
  EXPECT_TRUE(IsMountPoint(merged_));
  EXPECT_EQ(ReadMerged("/share/greeting"), "one\n");
  WriteMerged("/share/installed", "package");
  ASSERT_TRUE(RemoveMerged("/share/greeting"));
  EXPECT_EQ(test::Run(InNs({"cat", data_ + "/prof/persist/usr_changes/share/installed"})).out,
            "package");

  mh::DescribeStateResponse d = Describe();
  ASSERT_EQ(d.directories_size(), 1);
  EXPECT_EQ(d.directories(0).directory(), "/usr");
  ASSERT_EQ(d.directories(0).changed_size(), 1);
  EXPECT_EQ(d.directories(0).changed(0), "share/installed");
  ASSERT_EQ(d.directories(0).deleted_size(), 1);
  EXPECT_EQ(d.directories(0).deleted(0), "share/greeting");
  EXPECT_TRUE(d.directories(0).mounted());
  // The driver asked for mounted it, and the layer says so.
  EXPECT_EQ(d.directories(0).overlay(), GetParam());
  EXPECT_EQ(test::ReadFile(data_ + "/prof/usr_layer"), GetParam() + "\n");
  EXPECT_EQ(MountType(merged_), GetParam() == "kernel" ? "overlay" : "fuse.fuse-overlayfs");

  mh::DetachSessionResponse u = Detach(kA);
  ASSERT_EQ(u.unmounted_size(), 1);
  EXPECT_FALSE(IsMountPoint(merged_));
  EXPECT_FALSE(ImageMounted(img1_));
  // Still there for the next session.
  ASSERT_TRUE(Attach(kA, img1_, &resp).ok());
  EXPECT_EQ(ReadMerged("/share/installed"), "package");
  EXPECT_FALSE(ExistsMerged("/share/greeting"));
}

TEST_P(MountHelperTest, ContainerOfTheSameUserSeesTheMergedDirectory) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  WriteMerged("/share/fromhost", "written in merged\n");
  test::CommandResult c = test::Run({"podman", "run", "--rm", "--runtime=runc", "--network=none",
                                     "--http-proxy=false", "-v", merged_ + ":/mnt", img1_,
                                     "/bin/cat", "/mnt/share/greeting", "/mnt/share/fromhost"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "one\nwritten in merged\n");
}

TEST_P(MountHelperTest, TwoSessionsShareAndAnotherImageWaitsForThem) {
  mh::AttachSessionResponse ra, rb;
  ASSERT_TRUE(Attach(kA, img1_, &ra).ok());
  WriteMerged("/share/kept", "kept");
  ASSERT_TRUE(Attach(kB, img1_, &rb).ok());
  EXPECT_EQ(rb.mounts(0).sessions_size(), 2);
  mh::AttachSessionResponse r2;
  supervisor_.Set("cccccccccccc", sv::SESSION_STATE_ATTACHED);
  grpc::Status st = Attach("cccccccccccc", img2_, &r2);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find(kA), std::string::npos) << st.error_message();
  EXPECT_EQ(Detach(kA).unmounted_size(), 0);
  EXPECT_TRUE(IsMountPoint(merged_));
  EXPECT_EQ(Detach(kB).unmounted_size(), 1);
  EXPECT_FALSE(IsMountPoint(merged_));
  // The new image is the new lower layer; the upper layer stays.
  ASSERT_TRUE(Attach("cccccccccccc", img2_, &r2).ok());
  EXPECT_EQ(ReadMerged("/share/greeting"), "two\n");
  EXPECT_EQ(ReadMerged("/share/kept"), "kept");
}

TEST_P(MountHelperTest, EndedSessionIsUnmountedThroughTheRegistry) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  ASSERT_TRUE(IsMountPoint(merged_));
  supervisor_.End(kA);
  EXPECT_TRUE(test::WaitFor([&] { return !IsMountPoint(merged_); }, milliseconds(10000)));
}

TEST_P(MountHelperTest, KilledHelperMountsReadoptedOrCleanedAtRestart) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  StopHelper(SIGKILL);
  ASSERT_TRUE(IsMountPoint(merged_));
  StartHelper();
  mh::ListMountsResponse list;
  ASSERT_TRUE(test::WaitFor(
      [&] {
        list.Clear();
        stub_->ListMounts(Ctx().get(), mh::ListMountsRequest{}, &list);
        return list.mounts_size() == 1;
      },
      milliseconds(10000)));
  EXPECT_EQ(list.mounts(0).sessions(0), kA);
  EXPECT_TRUE(IsMountPoint(merged_));

  StopHelper(SIGKILL);
  supervisor_.Set(kA, sv::SESSION_STATE_REAPING);  // being reaped: not live
  StartHelper();
  EXPECT_TRUE(test::WaitFor([&] { return !IsMountPoint(merged_); }, milliseconds(10000)));
  EXPECT_TRUE(test::WaitFor([&] { return !ImageMounted(img1_); }, milliseconds(10000)));
}

TEST_P(MountHelperTest, ResetRefusedWhileHeldThenDropsTheUpperLayer) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  WriteMerged("/share/poisoned", "x");
  mh::ResetStateRequest req;
  req.set_profile("prof");
  mh::ResetStateResponse resp;
  grpc::Status st = stub_->ResetState(Ctx().get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find(kA), std::string::npos);
  Detach(kA);
  st = stub_->ResetState(Ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_NE(access((data_ + "/prof/persist.img").c_str(), F_OK), 0);
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  EXPECT_FALSE(ExistsMerged("/share/poisoned"));
  EXPECT_EQ(ReadMerged("/share/greeting"), "one\n");
}

TEST_P(MountHelperTest, SymlinkedProfileDirRefused) {
  test::TempDir elsewhere("laz-mh-x");
  ASSERT_EQ(symlink(elsewhere.path().c_str(), (data_ + "/prof").c_str()), 0);
  mh::AttachSessionResponse r;
  grpc::Status st = Attach(kA, img1_, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("not a real directory"), std::string::npos);
  EXPECT_NE(access((elsewhere.path() + "/usr_changes").c_str(), F_OK), 0);
  EXPECT_NE(access((elsewhere.path() + "/persist.img").c_str(), F_OK), 0);
  merged_.clear();
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}
uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}
uint64_t HostAvailable(const std::string& path) {
  struct statvfs v {};
  return statvfs(path.c_str(), &v) == 0 ? static_cast<uint64_t>(v.f_bavail) * v.f_frsize : 0;
}

// Past the cap a write in the merged directory fails with ENOSPC, and the
// host's free space does not pay for it: the image was preallocated to the
// cap up front and never grows.
TEST_P(MountHelperTest, WritesPastTheCapFailWithEnospcAndTakeNoHostSpace) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  const std::string image = data_ + "/prof/persist.img";
  EXPECT_EQ(FileSize(image), uint64_t{64} << 20);
  EXPECT_GE(AllocatedBytes(image), uint64_t{64} << 20);  // preallocated
  EXPECT_EQ(MountType(data_ + "/prof/persist"), Rootless() ? "fuse.ext4" : "ext4");
  const uint64_t allocated = AllocatedBytes(image);
  const uint64_t before = HostAvailable(data_);
  // No fsync: the write itself must fail (a sandbox does not see an error
  // that comes only at close).
  test::CommandResult dd = test::Run(InNs({"dd", "if=/dev/zero", "of=" + merged_ + "/share/big",
                                           "bs=1M", "count=100"}));
  EXPECT_NE(dd.exit_code, 0);
  EXPECT_NE(dd.err.find("No space left on device"), std::string::npos) << dd.err;
  EXPECT_EQ(dd.err.find("closing output file"), std::string::npos) << dd.err;
  EXPECT_EQ(AllocatedBytes(image), allocated);
  // 100 MiB written uncapped would show; others may write to this disk
  // meanwhile, hence the slack.
  const uint64_t after = HostAvailable(data_);
  EXPECT_LT(before > after ? before - after : 0, uint64_t{40} << 20);

  mh::DescribeStateResponse d = Describe();
  EXPECT_TRUE(d.usage().exists());
  EXPECT_EQ(d.usage().cap_bytes(), uint64_t{64} << 20);
  EXPECT_EQ(d.usage().size_bytes(), uint64_t{64} << 20);  // the image's, not ext4's usable
  EXPECT_GT(d.usage().used_bytes(), uint64_t{50} << 20);
  EXPECT_LT(d.usage().free_bytes(), uint64_t{4} << 20);
  EXPECT_GT(d.usage().inodes_total(), 0u);
  EXPECT_EQ(d.usage().held_by(),
            Rootless() ? "ext4 image served by fuse2fs" : "loop-mounted ext4 image");
  if (Rootless()) {
    // In a user namespace fuse-overlayfs deletes by creating a ".wh." file,
    // which fuse2fs refuses in a full file system (docs/persistence.md).
    EXPECT_FALSE(RemoveMerged("/share/big"));
    return;
  }
  // Deleting makes room again.
  ASSERT_TRUE(RemoveMerged("/share/big"));
  WriteMerged("/share/small", "fits");
  EXPECT_EQ(ReadMerged("/share/small").substr(0, 16), "fits");
}

// A changed cap applies at the next mount: grown keeping the data, shrunk
// when the data fits, refused with the fix when it does not.
TEST_P(MountHelperTest, CapGrowsAndShrinksAtTheNextMount) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  ASSERT_EQ(test::Run(InNs({"dd", "if=/dev/urandom", "of=" + merged_ + "/share/data", "bs=1M",
                            "count=40", "conv=fsync"}))
                .exit_code,
            0);
  Detach(kA);
  EXPECT_FALSE(IsMountPoint(data_ + "/prof/persist"));
  const std::string image = data_ + "/prof/persist.img";

  config_->cap_bytes = uint64_t{32} << 20;
  grpc::Status st = Attach(kA, img1_, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("more than persistent_cap 32 MiB"), std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("lazaret state reset prof"), std::string::npos);
  EXPECT_FALSE(IsMountPoint(merged_));
  EXPECT_EQ(FileSize(image), uint64_t{64} << 20);

  config_->cap_bytes = uint64_t{96} << 20;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  EXPECT_EQ(FileSize(image), uint64_t{96} << 20);
  EXPECT_GE(AllocatedBytes(image), uint64_t{96} << 20);
  EXPECT_EQ(test::Run(InNs({"stat", "-c", "%s", merged_ + "/share/data"})).out, "41943040\n");
  mh::DescribeStateResponse d = Describe();
  EXPECT_GT(d.usage().free_bytes(), uint64_t{30} << 20);
  ASSERT_TRUE(RemoveMerged("/share/data"));
  Detach(kA);

  config_->cap_bytes = uint64_t{32} << 20;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok()) << "the data fits now";
  EXPECT_EQ(FileSize(image), uint64_t{32} << 20);
  EXPECT_EQ(ReadMerged("/share/greeting"), "one\n");
}

// Nobody holds the profile: show mounts the image read-only for its walk.
TEST_P(MountHelperTest, DescribeLooksIntoAnUnheldImage) {
  mh::AttachSessionResponse r;
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
  WriteMerged("/share/kept", "kept");
  Detach(kA);
  mh::DescribeStateResponse d = Describe();
  ASSERT_EQ(d.directories_size(), 1);
  EXPECT_FALSE(d.directories(0).mounted());
  ASSERT_EQ(d.directories(0).changed_size(), 1);
  EXPECT_EQ(d.directories(0).changed(0), "share/kept");
  EXPECT_TRUE(d.usage().exists());
  EXPECT_GT(d.usage().used_bytes(), 0u);
  EXPECT_FALSE(d.usage().held_by().empty());
  EXPECT_TRUE(d.usage().note().empty()) << d.usage().note();
  EXPECT_FALSE(IsMountPoint(data_ + "/prof/persist"));
  // A reset of one directory mounts it as well, and unmounts it after.
  mh::ResetStateRequest req;
  req.set_profile("prof");
  req.set_directory("/usr");
  mh::ResetStateResponse resp;
  grpc::Status st = stub_->ResetState(Ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(IsMountPoint(data_ + "/prof/persist"));
  EXPECT_EQ(Describe().directories(0).changed_size(), 0);
}

// A layer from before the cap is never used uncapped, nor dropped unasked.
TEST_P(MountHelperTest, PreCapLayerRefusedUntilReset) {
  ASSERT_EQ(mkdir((data_ + "/prof").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((data_ + "/prof/usr_changes").c_str(), 0700), 0);
  mh::AttachSessionResponse r;
  grpc::Status st = Attach(kA, img1_, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find(data_ + "/prof/usr_changes"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(Describe().directories(0).uncapped_changes(), data_ + "/prof/usr_changes");
  mh::ResetStateRequest req;
  req.set_profile("prof");
  mh::ResetStateResponse resp;
  ASSERT_TRUE(stub_->ResetState(Ctx().get(), req, &resp).ok());
  EXPECT_NE(access((data_ + "/prof/usr_changes").c_str(), F_OK), 0);
  ASSERT_TRUE(Attach(kA, img1_, &r).ok());
}

// The kernel's overlayfs, forced: rootful over the loop-mounted ext4;
// rootless, where fuse2fs serves the capped data and the kernel refuses it
// as an upper layer, a clear error instead.
class MountHelperRootlessOnlyTest : public MountHelperTest {};
TEST_P(MountHelperRootlessOnlyTest, ForcedKernelOverlayOnlyOverTheLoopMount) {
  mh::AttachSessionResponse r;
  grpc::Status st = Attach(kA, img1_, &r);
  if (!Rootless()) {
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(MountType(merged_), "overlay");
    return;
  }
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("served by fuse2fs"), std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("LAZARET_OVERLAY"), std::string::npos) << st.error_message();
  EXPECT_FALSE(IsMountPoint(merged_));
}
INSTANTIATE_TEST_SUITE_P(Kernel, MountHelperRootlessOnlyTest, ::testing::Values("kernel"));

INSTANTIATE_TEST_SUITE_P(Drivers, MountHelperTest, ::testing::Values("kernel", "fuse-overlayfs"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param == "kernel" ? std::string("Kernel")
                                                      : std::string("FuseOverlayfs");
                         });

TEST(MountHelperRootlessTest, RootlessThroughPodmanUnshare) {
  if (Rootless()) GTEST_SKIP() << "this is the rootless run";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the tests as " LAZARET_E2E_USER;
  const passwd* pw = getpwnam(LAZARET_E2E_USER);
  // ctest's e2e_user fixture makes the user; run by hand, make it first.
  ASSERT_NE(pw, nullptr) << "no user " LAZARET_E2E_USER
                            "; create it with tests/e2e/run_fixture.sh user-setup";
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  test::CommandResult r = test::Run(
      {"setpriv", absl::StrCat("--reuid=", pw->pw_uid), absl::StrCat("--regid=", pw->pw_gid),
       "--init-groups", "--", "env", "-i", absl::StrCat("HOME=", pw->pw_dir),
       absl::StrCat("USER=", pw->pw_name), absl::StrCat("XDG_RUNTIME_DIR=/run/user/", pw->pw_uid),
       "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", absl::StrCat(kRootlessChildEnv, "=1"),
       exe, "--gtest_filter=*MountHelperTest.*/FuseOverlayfs:*MountHelperRootlessOnlyTest.*"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SKIPPED"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lazaret
