// Profile persistence end to end: the real `lazaret run` asks the real
// lazaret-mount-helper for overlays of /usr, /etc and /root (the kernel's
// overlayfs, and fuse-overlayfs for one profile; rootless always
// fuse-overlayfs, over fuse2fs), their upper layers in the profile's
// capped file system (persistent_cap), the sandbox (runsc) installs a
// package into them, and every outcome is judged on the host: the upper
// layers in the image on disk (read with debugfs), the host's free space,
// the helper's mount table (rootless: through `podman unshare`), its state
// file, its capabilities, `lazaret state`. Rootful and rootless by LAZARET_E2E_MODE; the services
// come from the e2e_up_<mode> fixture. One process runs every test (they
// share one configuration and one image of their own). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "helper/mount/mounthelper.h"
#include "tests/e2e/persist_e2e_world.h"
#include "tests/support/tmux_session.h"

namespace lazaret::test::e2e::persist {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

PersistWorld* world = nullptr;

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

std::string StateFile() { return Env().runtime_dir + "/mount-helper/mounts"; }

// The file system type of the capped mount in the helper's mount table.
std::string CappedType() { return IsRootless() ? " - fuse" : " - ext4 "; }

// The number a `state show --json` field holds ("used_bytes": "123"), -1
// when it is missing.
int64_t JsonNumber(const std::string& json, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + field + "\": \"?([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

class PersistE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { world = new PersistWorld(); }
  static void TearDownTestSuite() {
    delete world;
    world = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ASSERT_EQ(world->error(), "");
    ws_ = std::make_unique<UserDir>("pws");
  }
  void TearDown() override {
    EXPECT_THAT(LeftBehind(), IsEmpty()) << "containers or session directories left behind";
  }

  // Nothing of `profile` is mounted and the helper's state names none of it.
  void ExpectNothingMounted(const std::string& profile) {
    const std::string dir = world->ProfileDir(profile);
    test::WaitFor([&] { return MountsUnder(dir).empty(); }, std::chrono::seconds(10));
    EXPECT_THAT(MountsUnder(dir), IsEmpty()) << "still mounted for " << profile;
    if (Exists(StateFile())) {
      EXPECT_THAT(test::ReadFile(StateFile()), Not(HasSubstr(dir))) << "state file names " << dir;
    }
  }

  std::string StateJson(const std::string& profile) {
    CommandResult r = Lazaret("/", {"state", "show", profile, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  std::unique_ptr<UserDir> ws_;
};

// The package lifecycle with either overlay driver: the kernel's (kPkg, the
// default) and fuse-overlayfs (kPkgFuse, its layers recorded as
// fuse-overlayfs's before the first session).
class PersistDriverE2eTest : public PersistE2eTest,
                             public ::testing::WithParamInterface<std::string> {
 protected:
  const char* profile() const { return GetParam() == "kernel" ? kPkg : kPkgFuse; }
  // The driver the helper uses: rootless, fuse-overlayfs whatever the
  // record says (the kernel's overlayfs refuses a fuse2fs upper layer in
  // a user namespace).
  std::string Driver() const { return IsRootless() ? "fuse-overlayfs" : GetParam(); }
  // The file system type the helper's overlays of the profile show.
  std::string MountType() const { return Driver() == "kernel" ? " - overlay " : " - fuse."; }
};

// 1, 2 and 8: a package installed with dpkg -i stays for the next session,
// an image update shows below it, and a reset drops it (refused while a
// session holds the overlays).
TEST_P(PersistDriverE2eTest, PackageSurvivesSessionsAndImageUpdatesUntilReset) {
  const std::string pkg = profile();
  ASSERT_EQ(world->BuildOwnImage("v1"), "");
  if (GetParam() != "kernel") {
    ASSERT_EQ(world->RecordLayers(pkg, {"usr", "etc", "root"}, GetParam()), "");
  }
  // A tiny package built on the host, no network.
  ws_->Write("control",
             "Package: laz-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: e2e <e2e@x>\n"
             "Description: prints a line\n");
  ws_->Write("laz-hello", "#!/bin/sh\necho laz-hello-ran\n");
    ASSERT_EQ(RunAs(ws_->path(), {"sh", "-c",
                                "mkdir -p pkg/DEBIAN pkg/usr/bin && mv control pkg/DEBIAN/ && "
                                "install -m 0755 laz-hello pkg/usr/bin/laz-hello && rm laz-hello &&"
                                " dpkg-deb --root-owner-group --build pkg laz-hello.deb && "
                                "rm -r pkg"})
                .exit_code,
            0);

  CommandResult install = RunIn(ws_->path(), pkg, "dpkg -i /workspace/laz-hello.deb && laz-hello");
  EXPECT_EQ(install.exit_code, 0) << install.out << install.err;
  EXPECT_THAT(install.out, HasSubstr("laz-hello-ran"));
  ExpectNothingMounted(pkg);
  // On the host: the file is in the upper layer (in the profile's image)
  // with the package's mode.
  const std::string pdir = world->ProfileDir(pkg);
  const std::string upper_file = "usr_changes/bin/laz-hello";
  const std::optional<mode_t> mode = LayerMode(pdir, upper_file);
  ASSERT_TRUE(mode.has_value()) << upper_file << " is not in " << pdir << "/persist.img";
  EXPECT_EQ(*mode & 07777, 0755u) << "dpkg's chmod of the file it created (mode 0) was lost";
  if ((*mode & 07777) != 0755) {
    // The rest of the lifecycle still gets its checks: give the file the
    // package's mode from the host.
    ASSERT_EQ(SetLayerMode(pdir, upper_file, 0755), "");
  }
  // state show lists it.
  const std::string json = StateJson(pkg);
  EXPECT_THAT(json, HasSubstr("\"/usr\""));
  EXPECT_THAT(json, HasSubstr("\"bin/laz-hello\"")) << json;

  CommandResult again = RunIn(ws_->path(), pkg, "laz-hello; cat /usr/share/laz-version");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("laz-hello-ran"));
  EXPECT_THAT(again.out, HasSubstr("v1"));

  // 2: the same image name, a new /usr/share/laz-version.
  ASSERT_EQ(world->BuildOwnImage("v2-updated"), "");
  CommandResult updated = RunIn(ws_->path(), pkg, "cat /usr/share/laz-version; laz-hello");
  ASSERT_EQ(updated.exit_code, 0) << updated.err;
  EXPECT_THAT(updated.out, HasSubstr("v2-updated"));
  EXPECT_THAT(updated.out, HasSubstr("laz-hello-ran"));

  // 8: reset is refused while a session holds the overlays.
  const std::string log = ws_->path() + "/hold.log";
  const pid_t holder = SpawnLazaret(ws_->path(), {"run", pkg, "--", "sleep", "120"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  // Mounted by the driver asked for, over the one capped file system, and
  // `state show` says which.
  const std::vector<std::string> mounts = OverlayMountsOf(pdir);
  EXPECT_EQ(mounts.size(), 3u) << testing::PrintToString(MountsUnder(pdir));
  for (const std::string& m : mounts) EXPECT_THAT(m, HasSubstr(MountType()));
  const std::vector<std::string> capped = CappedMountsOf(pdir);
  ASSERT_EQ(capped.size(), 1u) << testing::PrintToString(MountsUnder(pdir));
  EXPECT_THAT(capped[0], HasSubstr(CappedType()));
  EXPECT_THAT(capped[0], HasSubstr("nodev"));
  EXPECT_THAT(capped[0], HasSubstr("nosuid"));
  EXPECT_THAT(StateJson(pkg), HasSubstr(absl::StrCat("\"overlay\": \"", Driver(), "\"")));
  CommandResult refused = Lazaret("/", {"state", "reset", pkg, "/usr", "--yes"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr(id));
  EXPECT_TRUE(LayerMode(pdir, upper_file).has_value());
  kill(holder, SIGTERM);
  EXPECT_EQ(WaitChild(holder, 60), 128 + SIGTERM);
  ExpectNothingMounted(pkg);

  CommandResult reset = Lazaret("/", {"state", "reset", pkg, "/usr", "--yes"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_FALSE(LayerMode(pdir, upper_file).has_value());
  // Only /usr was reset: the others' layers stay in the image.
  EXPECT_TRUE(LayerMode(pdir, "etc_changes").has_value());
  CommandResult gone = RunIn(ws_->path(), pkg, "command -v laz-hello || echo no-laz-hello");
  EXPECT_THAT(gone.out, HasSubstr("no-laz-hello")) << gone.err;
  EXPECT_THAT(gone.out, Not(HasSubstr("/usr/bin/laz-hello")));
}

// Issue 22: each persistent directory's root shows the image's own mode,
// owner, group and mtime (not the 0700 directory the helper made), in the
// first session and the next, and a non-root user inside reads it.
TEST_P(PersistDriverE2eTest, RootsShowTheImagesModeOwnerAndTimesAndNobodyReadsThem) {
  const char* modes = GetParam() == "kernel" ? kModes : kModesFuse;
  if (GetParam() != "kernel") {
    ASSERT_EQ(world->RecordLayers(modes, {"usr%2Flocal", "etc"}, GetParam()), "");
  }
  const std::string probe =
      "stat -c %n:%a:%u:%g /usr/local /etc; stat -c mtime:%Y /usr/local; "
      "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
      "'ls /usr/local/bin >/dev/null && ls /etc >/dev/null && cat /etc/passwd >/dev/null' "
      "&& echo nobody-reads";
  CommandResult image = RunIn(ws_->path(), kNoEtc, probe);
  ASSERT_EQ(image.exit_code, 0) << image.err;
  ASSERT_THAT(image.out, HasSubstr("/usr/local:755:0:0")) << image.out;
  ASSERT_THAT(image.out, HasSubstr("nobody-reads")) << image.out;
  for (const char* round : {"first", "next"}) {
    SCOPED_TRACE(round);
    CommandResult persisted = RunIn(ws_->path(), modes, probe);
    ASSERT_EQ(persisted.exit_code, 0) << persisted.err;
    EXPECT_EQ(persisted.out, image.out);
    EXPECT_THAT(MountsUnder(world->ProfileDir(modes)), IsEmpty());
  }
  // On the host the layers stay behind the 0700 profile directory.
  struct stat st {};
  ASSERT_EQ(lstat(world->ProfileDir(modes).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

// Issue 22: what the agent does to hide a poisoned binary in a persistent
// /usr/local from `state show` and `state reset`: the binary, then its
// directory given to another uid with mode 0711; a directory of the image
// re-attributed with nothing in it changed; a 0000 directory holding a
// file, a 0000 file, a file named like a whiteout, a tree deeper than 512
// levels, and an attempt at the immutable flag. Show names them all (the
// re-attributed directories with what changed, and no directory merely
// copied up), reset removes them all, and the next session runs the
// image's git.
TEST_P(PersistDriverE2eTest, PoisonedBinaryCannotHideFromShowOrReset) {
  const char* poison = GetParam() == "kernel" ? kPoison : kPoisonFuse;
  if (GetParam() != "kernel") {
    ASSERT_EQ(world->RecordLayers(poison, {"usr%2Flocal"}, GetParam()), "");
  }
  std::string deep = "/usr/local/zdeep";
  for (int i = 0; i < 600; ++i) deep += "/d";
  const std::string plant = absl::StrCat(
      "set -e; printf '#!/bin/sh\\necho poisoned-git\\n' > /usr/local/bin/git; "
      "chmod 0755 /usr/local/bin/git; "
      "mkdir -p /usr/local/share/hide/deep; echo x > /usr/local/share/hide/deep/f; "
      "chmod 000 /usr/local/share/hide/deep /usr/local/share/hide; "
      "echo y > /usr/local/nomode; chmod 000 /usr/local/nomode; "
      "mkdir -p ", deep, "; echo bottom > ", deep, "/f; "
      "(echo z > /usr/local/.wh.decoy && echo decoy-made) || echo decoy-refused; "
      "perl -e 'open(F, \"<\", \"/usr/local/nomode\") or die \"open: $!\"; "
      "my $f = pack(\"L\", 0x10); ioctl(F, 0x40086602, $f) or die \"immutable: $!\\n\"; "
      "print \"immutable-set\\n\"' "
      "|| true; "
      "chown 4242:4242 /usr/local/bin; chmod 0711 /usr/local/bin; "
      "chown 4242 /usr/local/games; chmod 0711 /usr/local/games; "
      "git; ls -ld /usr/local/bin");
  CommandResult planted = RunIn(ws_->path(), poison, plant);
  ASSERT_EQ(planted.exit_code, 0) << planted.out << planted.err;
  EXPECT_THAT(planted.out, HasSubstr("poisoned-git"));
  // gVisor refuses FS_IOC_SETFLAGS: no immutable file reset cannot remove.
  EXPECT_THAT(planted.out, Not(HasSubstr("immutable-set"))) << planted.err;
  EXPECT_THAT(planted.err, HasSubstr("immutable: ")) << "perl's ioctl did not run";
  RecordProperty("immutable_attempt", planted.err);
  // fuse-overlayfs refuses whiteout-shaped names through its mount.
  EXPECT_THAT(planted.out, HasSubstr(Driver() == "kernel" ? "decoy-made" : "decoy-refused"));

  const std::string json = StateJson(poison);
  for (const char* path : {"\"bin/git\"", "\"nomode\"", "\"share/hide/deep/f\""}) {
    EXPECT_THAT(json, HasSubstr(path)) << json;
  }
  EXPECT_THAT(json, HasSubstr(absl::StrCat(deep.substr(strlen("/usr/local/")), "/f\"")));
  EXPECT_THAT(json, HasSubstr("\"limit\": \"\""));
  // share/ was only copied up (hide/ was made in it): no change of its own.
  EXPECT_THAT(json, Not(HasSubstr("\"share/ ("))) << json;
  if (Driver() == "kernel") {
    // A file named like a whiteout is a file (fuse-overlayfs's own
    // bookkeeping may add whiteouts of names the image never had).
    EXPECT_THAT(json, HasSubstr("\".wh.decoy\""));
    EXPECT_THAT(json, HasSubstr("\"deleted_total\": \"0\"")) << "nothing was deleted";
  }
  CommandResult text = Lazaret("/", {"state", "show", poison});
  EXPECT_THAT(text.out, Not(HasSubstr("no changes"))) << text.out;
  EXPECT_THAT(text.out, HasSubstr("bin/git")) << text.out;
  // The re-attributed directories, the one with no file changed in it too,
  // compared with the image's (the JSON escapes '>').
  EXPECT_THAT(text.out, HasSubstr(" bin/ (mode 0755->0711, owner 0->4242, group 0->4242) "))
      << text.out;
  EXPECT_THAT(text.out, HasSubstr(" games/ (mode 0755->0711, owner 0->4242)")) << text.out;

  // Only this directory: the image stays, its layer emptied.
  CommandResult reset = Lazaret("/", {"state", "reset", poison, "/usr/local", "--yes"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_THAT(LayerNames(world->ProfileDir(poison), "usr%2Flocal_changes"), IsEmpty())
      << "left in the upper layer after the reset";
  EXPECT_THAT(StateJson(poison), Not(HasSubstr("/ (mode "))) << "still listed after the reset";
  CommandResult next = RunIn(ws_->path(), poison,
                             "test -e /usr/local/bin/git && echo poison-left; git --version; "
                             "stat -c %a:%u:%g /usr/local/bin");
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_THAT(next.out, Not(HasSubstr("poison")));
  EXPECT_THAT(next.out, HasSubstr("git version"));
  EXPECT_THAT(next.out, HasSubstr("755:0:0"));
  ASSERT_EQ(Lazaret("/", {"state", "reset", poison, "--yes"}).exit_code, 0);
}

// Rootless, every overlay is fuse-overlayfs (over fuse2fs): one driver,
// one run.
std::vector<std::string> DriversOfThisMode() {
  if (IsRootless()) return {"fuse-overlayfs"};
  return {"kernel", "fuse-overlayfs"};
}

INSTANTIATE_TEST_SUITE_P(Drivers, PersistDriverE2eTest, ::testing::ValuesIn(DriversOfThisMode()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param == "kernel" ? std::string("Kernel")
                                                      : std::string("FuseOverlayfs");
                         });

// Issue 22: apt from Debian's real mirror in a profile persisting /usr with
// dpkg's and apt's databases. apt verifies the mirror's signature as _apt
// (uid 42), so this fails whenever a persistent root is closed to non-root
// users. The package stays for the next session (where apt-get update runs
// again and the package runs as nobody) and is gone after a reset.
TEST_F(PersistE2eTest, AptInstallsFromTheMirrorAndThePackageStaysUntilReset) {
  CommandResult reach =
      RunIn(ws_->path(), kNoEtc,
            "timeout 20 bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' && echo mirror-reachable");
  if (reach.out.find("mirror-reachable") == std::string::npos) {
    GTEST_SKIP() << "deb.debian.org:80 cannot be reached from a sandbox here: " << reach.out
                 << reach.err;
  }
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  CommandResult install = RunIn(
      ws_->path(), kApt,
      absl::StrCat("apt-get update && apt-get install -y --no-install-recommends hello && ",
                   as_nobody, "hello"));
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  EXPECT_THAT(install.out, HasSubstr("Hello, world!"));
  EXPECT_THAT(install.out + install.err, Not(HasSubstr("not signed")));
  ExpectNothingMounted(kApt);

  CommandResult again = RunIn(ws_->path(), kApt,
                              absl::StrCat("dpkg -s hello | grep '^Status'; ", as_nobody,
                                           "hello && apt-get update && echo updated-again"));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("Status: install ok installed"));
  EXPECT_THAT(again.out, HasSubstr("Hello, world!"));
  EXPECT_THAT(again.out, HasSubstr("updated-again"));

  CommandResult reset = Lazaret("/", {"state", "reset", kApt, "--yes"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  CommandResult gone = RunIn(ws_->path(), kApt,
                             "command -v hello || echo no-hello; dpkg -s hello || echo no-status");
  EXPECT_THAT(gone.out, HasSubstr("no-hello")) << gone.out << gone.err;
  EXPECT_THAT(gone.out, HasSubstr("no-status"));
}

// Issue 22: persistent_cap. The profile's persistent data lives in one
// image of the cap's size, preallocated: writing past the cap fails inside
// with ENOSPC, and the host's free space drops by the preallocation, not
// by what the sandbox tried to write. `state show` reports usage against
// the cap; after `state reset` the next session writes again.
TEST_F(PersistE2eTest, WritesPastTheCapFailAndTakeNoMoreOfTheHost) {
  const std::string pdir = world->ProfileDir(kCap);
  ASSERT_EQ(Lazaret("/", {"state", "reset", kCap, "--yes"}).exit_code, 0);
  ASSERT_FALSE(Exists(pdir + "/persist.img"));
  const uint64_t before = HostAvailableBytes(world->data_root());
  ASSERT_GT(before, 0u);
  CommandResult fill = RunIn(ws_->path(), kCap,
                             "dd if=/dev/zero of=/root/fill bs=1M count=200 2>&1; "
                             "echo dd-exit:$?; sync; ls -s /root/fill");
  EXPECT_EQ(fill.exit_code, 0) << fill.out << fill.err;
  EXPECT_THAT(fill.out, HasSubstr("No space left on device")) << fill.out;
  EXPECT_THAT(fill.out, Not(HasSubstr("dd-exit:0"))) << fill.out;
  ExpectNothingMounted(kCap);
  const uint64_t after = HostAvailableBytes(world->data_root());
  // Allowance for the rest of the machine writing meanwhile.
  constexpr uint64_t kSlack = uint64_t{16} << 20;
  EXPECT_LE(before > after ? before - after : 0, kCapSmallBytes + kSlack)
      << "the host lost " << (before - after) << " bytes for a cap of " << kCapSmallBytes;
  RecordProperty("host_bytes_taken", std::to_string(before > after ? before - after : 0));
  // The image: the cap's size, all of it allocated, the helper's user's only.
  struct stat st {};
  ASSERT_EQ(lstat((pdir + "/persist.img").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kCapSmallBytes);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, kCapSmallBytes) << "not preallocated";
  EXPECT_TRUE(LayerMode(pdir, "root_changes/fill").has_value());

  // Usage against the cap, read from the image while nobody holds it.
  const std::string json = StateJson(kCap);
  EXPECT_EQ(JsonNumber(json, "cap_bytes"), static_cast<int64_t>(kCapSmallBytes)) << json;
  EXPECT_GE(JsonNumber(json, "used_bytes"), int64_t{48} << 20) << json;
  EXPECT_GE(JsonNumber(json, "inodes_total"), 1) << json;
  EXPECT_THAT(json, HasSubstr(IsRootless() ? "fuse2fs" : "loop-mounted ext4")) << json;
  CommandResult text = Lazaret("/", {"state", "show", kCap});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("64.0 MiB")) << text.out;
  ExpectNothingMounted(kCap);

  CommandResult reset = Lazaret("/", {"state", "reset", kCap, "--yes"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_FALSE(Exists(pdir + "/persist.img"));
  CommandResult again =
      RunIn(ws_->path(), kCap,
            "test -e /root/fill && echo fill-left; "
            "dd if=/dev/zero of=/root/fill bs=1M count=16 2>&1 && echo wrote-again");
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("wrote-again"));
  EXPECT_THAT(again.out, Not(HasSubstr("fill-left")));
  ASSERT_EQ(Lazaret("/", {"state", "reset", kCap, "--yes"}).exit_code, 0);
}

// Issue 22: `lazaret state show|reset --config FILE` resolve the profile
// as `lazaret run --config FILE` does (here one only that file defines),
// and `lazaret state show` without a profile works in a workspace and
// outside one.
TEST_F(PersistE2eTest, StateTakesConfigLikeRunAndShowWorksFromAnyDirectory) {
  UserDir outside("pcfgstate");
  const std::string cfg = outside.Write(
      "extra.toml", absl::StrCat("[profiles.p3cfgonly]\nimage = \"", kBaseImage,
                                 "\"\npersistent_dirs = [\"/root\"]\npersistent_cap = \"",
                                 kCapDefault, "\"\n"));
  CommandResult wrote =
      Lazaret(ws_->path(), {"run", "--config", cfg, "p3cfgonly", "--", "sh", "-c",
                            "echo cfg > /root/laz-cfg-marker"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  const std::string cfg_dir = world->data_root() + "/p3cfgonly";
  const std::string marker = "root_changes/laz-cfg-marker";
  ASSERT_TRUE(LayerMode(cfg_dir, marker).has_value());

  CommandResult without = Lazaret(ws_->path(), {"state", "show", "p3cfgonly"});
  EXPECT_NE(without.exit_code, 0) << "the profile exists only in " << cfg;
  CommandResult with =
      Lazaret(ws_->path(), {"state", "show", "p3cfgonly", "--config", cfg, "--json"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_THAT(with.out, HasSubstr("\"laz-cfg-marker\""));
  // --config=FILE, relative to the current directory, as run takes it.
  const std::string rel = "--config=../" + outside.path().substr(outside.path().rfind('/') + 1) +
                          "/extra.toml";
  CommandResult relative = Lazaret(ws_->path(), {"state", "show", rel, "p3cfgonly"});
  EXPECT_EQ(relative.exit_code, 0) << relative.err;
  EXPECT_THAT(relative.out, HasSubstr("laz-cfg-marker"));

  // / is no workspace `lazaret run` accepts (it holds the configuration);
  // show still answers, from the user's own configuration, and says so.
  for (const std::string& dir : {ws_->path(), std::string("/")}) {
    CommandResult show = Lazaret(dir, {"state", "show"});
    EXPECT_EQ(show.exit_code, 0) << dir << ": " << show.err;
    EXPECT_THAT(show.out, HasSubstr("Profile ")) << dir;
    EXPECT_THAT(show.err, Not(HasSubstr("must be an absolute path")));
    if (dir == "/") {
      EXPECT_THAT(show.err, HasSubstr("no workspace"));
    }
  }
  CommandResult from_root = Lazaret("/", {"state", "show", "p3cfgonly", "--config", cfg});
  EXPECT_EQ(from_root.exit_code, 0) << from_root.err;
  EXPECT_THAT(from_root.out, HasSubstr("laz-cfg-marker"));

  CommandResult reset =
      Lazaret(ws_->path(), {"state", "reset", "p3cfgonly", "--config", cfg, "--yes"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_FALSE(LayerMode(cfg_dir, marker).has_value());
  // A reset of every directory deletes the image.
  EXPECT_FALSE(Exists(cfg_dir + "/persist.img"));
}

// 4: `lazaret state reset` asks on a terminal (typed in tmux, as a person
// does): "n" keeps the layer, "y" drops it; without a terminal it needs
// --yes and drops nothing.
TEST_F(PersistE2eTest, ResetAsksOnATerminalAndNeedsYesWithout) {
  ASSERT_TRUE(test::TmuxSession::Available()) << "tmux is missing (deploy/setup-host.sh installs it)";
  CommandResult wrote = RunIn(ws_->path(), kReset, "echo kept > /root/laz-reset-marker");
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  const std::string pdir = world->ProfileDir(kReset);
  const std::string marker = "root_changes/laz-reset-marker";
  ASSERT_TRUE(LayerMode(pdir, marker).has_value());

  CommandResult untold = Lazaret("/", {"state", "reset", kReset});
  EXPECT_EQ(untold.exit_code, 2);
  EXPECT_THAT(untold.err, HasSubstr("--yes"));
  EXPECT_TRUE(LayerMode(pdir, marker).has_value());

  test::TempDir dir("laz-e2e-reset");
  test::TmuxSession tmux(dir.path());
  std::string line = "exec";
  for (const auto& a : AsMode({test::Binary("lazaret"), "state", "reset", kReset})) {
    line += " '" + a + "'";
  }
  for (const char* answer : {"n", "y"}) {
    SCOPED_TRACE(answer);
    const std::string w = std::string("reset-") + answer;
    ASSERT_TRUE(tmux.NewWindow(w, 100, 30, line));
    ASSERT_TRUE(tmux.WaitForText(w, "Reset? [y/N]", std::chrono::seconds(30)));
    EXPECT_THAT(tmux.Capture(w), HasSubstr("/root"));
    tmux.Keys(w, {answer, "Enter"});
    ASSERT_TRUE(tmux.WaitForExit(w, std::chrono::seconds(30)));
    if (std::string(answer) == "n") {
      EXPECT_THAT(tmux.Capture(w), HasSubstr("Nothing was reset."));
      EXPECT_EQ(tmux.PaneExitStatus(w), 1);
      EXPECT_TRUE(LayerMode(pdir, marker).has_value());
    } else {
      EXPECT_THAT(tmux.Capture(w), HasSubstr("Reset /root of profile p3reset"));
      EXPECT_EQ(tmux.PaneExitStatus(w), 0);
      EXPECT_FALSE(LayerMode(pdir, marker).has_value());
    }
  }
  CommandResult gone = RunIn(ws_->path(), kReset, "cat /root/laz-reset-marker || echo no-marker");
  EXPECT_THAT(gone.out, HasSubstr("no-marker"));
}

// 3: two live sessions of one profile share its overlays.
TEST_F(PersistE2eTest, ConcurrentSessionsShareTheOverlays) {
  UserDir ws2("pws2");
  const std::string log_a = ws_->path() + "/a.log";
  const std::string log_b = ws2.path() + "/b.log";
  const auto script = [](const std::string& self, const std::string& other) {
    return absl::StrCat("echo from-", self, " > /root/from-", self, "; i=0; until [ -f /root/from-",
                        other, " ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; echo saw-",
                        other, ":$(cat /root/from-", other, "); sleep 120");
  };
  const pid_t a =
      SpawnLazaret(ws_->path(), {"run", kShared, "--", "sh", "-c", script("a", "b")}, {}, log_a);
  const pid_t b =
      SpawnLazaret(ws2.path(), {"run", kShared, "--", "sh", "-c", script("b", "a")}, {}, log_b);
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return test::ReadFile(log_a).find("saw-b:from-b") != std::string::npos &&
               test::ReadFile(log_b).find("saw-a:from-a") != std::string::npos;
      },
      std::chrono::seconds(90)))
      << test::ReadFile(log_a) << test::ReadFile(log_b);
  // Both sessions hold the overlays.
  const std::vector<std::string> ids = PsSessions();
  EXPECT_EQ(ids.size(), 2u);
  const std::string json = StateJson(kShared);
  for (const auto& id : ids) EXPECT_THAT(json, HasSubstr(id)) << json;
  // One overlay per directory, shared: three overlays, not six, over one
  // capped file system.
  const std::string pdir = world->ProfileDir(kShared);
  EXPECT_EQ(OverlayMountsOf(pdir).size(), 3u) << testing::PrintToString(MountsUnder(pdir));
  EXPECT_EQ(CappedMountsOf(pdir).size(), 1u) << testing::PrintToString(MountsUnder(pdir));
  kill(a, SIGTERM);
  EXPECT_EQ(WaitChild(a, 60), 128 + SIGTERM);
  // The last one still has them.
  EXPECT_EQ(OverlayMountsOf(pdir).size(), 3u);
  EXPECT_EQ(CappedMountsOf(pdir).size(), 1u);
  kill(b, SIGTERM);
  EXPECT_EQ(WaitChild(b, 60), 128 + SIGTERM);
  ExpectNothingMounted(kShared);
}

// 4: a session whose worker was SIGKILLed leaves nothing mounted once reaped.
TEST_F(PersistE2eTest, KilledSessionIsUnmountedByTheReaper) {
  const std::string log = ws_->path() + "/k.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", kKilled, "--", "sleep", "120"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  ASSERT_EQ(OverlayMountsOf(world->ProfileDir(kKilled)).size(), 3u);
  const pid_t worker = SessionWorkerPid(id);
  ASSERT_GT(worker, 0);
  kill(worker, SIGKILL);
  WaitChild(pid, 30);
  // The reap (or else `lazaret clean`) detaches it.
  if (!test::WaitFor([&] { return MountsUnder(world->ProfileDir(kKilled)).empty(); },
                     std::chrono::seconds(30))) {
    RecordProperty("unmounted_by", "lazaret clean");
    CommandResult clean = Lazaret("/", {"clean"});
    EXPECT_EQ(clean.exit_code, 0) << clean.err;
  } else {
    RecordProperty("unmounted_by", "the reap");
  }
  test::WaitFor([] { return SessionContainers().empty() && SessionDirs().empty(); },
                std::chrono::seconds(60));
  ExpectNothingMounted(kKilled);
  EXPECT_THAT(StateJson(kKilled), Not(HasSubstr(id)));
}

// 5: symlinks planted in the profile directory and crafted directories.
TEST_F(PersistE2eTest, PathAttacksAreRefusedAndMountNothing) {
  const std::string pdir = world->ProfileDir(kLink);
  UserDir elsewhere("pelse");
  ASSERT_EQ(RunAs("/", {"mkdir", "-p", pdir}).exit_code, 0);
  // The capped file system's image and mount point, an overlay's mount
  // point, and a layer where it was before the cap.
  for (const char* name : {"persist.img", "persist", "usr_merged", "usr_changes"}) {
    ASSERT_EQ(RunAs("/", {"ln", "-s", elsewhere.path(), pdir + "/" + name}).exit_code, 0);
    CommandResult r = RunIn(ws_->path(), kLink, "echo must-not-run");
    EXPECT_NE(r.exit_code, 0) << name;
    EXPECT_THAT(r.out, Not(HasSubstr("must-not-run")));
    EXPECT_THAT(r.err, HasSubstr(name)) << r.err;
    EXPECT_THAT(MountsUnder(pdir), IsEmpty());
    EXPECT_THAT(MountsUnder(elsewhere.path()), IsEmpty());
    unlink((pdir + "/" + name).c_str());
  }
  ASSERT_EQ(HostCommand({"rm", "-rf", pdir}), "");

  // The profile directory itself a symlink.
  ASSERT_EQ(RunAs("/", {"ln", "-s", elsewhere.path(), pdir}).exit_code, 0);
  CommandResult linked = RunIn(ws_->path(), kLink, "echo must-not-run");
  EXPECT_NE(linked.exit_code, 0);
  EXPECT_THAT(linked.out, Not(HasSubstr("must-not-run")));
  EXPECT_THAT(linked.err, HasSubstr(kLink)) << linked.err;
  EXPECT_THAT(MountsUnder(elsewhere.path()), IsEmpty());
  unlink(pdir.c_str());

  // persistent_dirs the configuration refuses (a --config file outside the
  // workspace).
  UserDir outside("pcfg");
  struct Crafted {
    std::string dirs;
    std::string says;
  };
  for (const Crafted& c : std::vector<Crafted>{{"[\"/proc/x\"]", "/proc"},
                                               {"[\"../etc\"]", "absolute"},
                                               {"[\"/usr\", \"/usr/local\"]", "may not nest"},
                                               {"[\"/usr/../etc\"]", "clean"}}) {
    const std::string cfg =
        outside.Write("crafted.toml", absl::StrCat("[profiles.p3crafted]\nimage = \"", kBaseImage,
                                                   "\"\npersistent_dirs = ", c.dirs,
                                                   "\npersistent_cap = \"", kCapDefault, "\"\n"));
    CommandResult r = Lazaret(ws_->path(), {"run", "--config", cfg, "p3crafted", "--", "true"});
    EXPECT_EQ(r.exit_code, 125) << c.dirs;
    EXPECT_THAT(r.err, HasSubstr("persistent_dirs")) << c.dirs << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.dirs << ": " << r.err;
    EXPECT_THAT(MountsUnder(world->data_root() + "/p3crafted"), IsEmpty());
    unlink(cfg.c_str());
  }
}

// 6: the helper holds exactly what mounthelper.h declares: effective only
// its own, permitted also what it hands fuse-overlayfs, nothing inheritable
// or ambient.
TEST_F(PersistE2eTest, HelperHoldsOnlyItsDeclaredCapabilities) {
  const pid_t pid = MountHelperPid();
  ASSERT_NE(pid, 0) << "no lazaret-mount-helper for " << Env().runtime_dir;
  uint64_t own = 0;
  for (cap_value_t c : mounthelper::kCapabilities) own |= uint64_t{1} << c;
  uint64_t handed = 0;
  for (cap_value_t c : mounthelper::kDelegatedCapabilities) handed |= uint64_t{1} << c;
  EXPECT_EQ(test::ProcStatusHex(pid, "CapEff"), own);
  EXPECT_EQ(test::ProcStatusHex(pid, "CapPrm"), own | handed);
  EXPECT_EQ(test::ProcStatusHex(pid, "CapInh"), 0u);
  EXPECT_EQ(test::ProcStatusHex(pid, "CapAmb"), 0u);
}

// 7: with /etc persistent, podman's resolv.conf, hosts and hostname win.
TEST_F(PersistE2eTest, PodmansEtcFilesStayPodmans) {
  const std::string show =
      "cat /etc/resolv.conf; echo ---; hostname; cat /etc/hostname; echo ---; cat /etc/hosts";
  CommandResult plain = RunIn(ws_->path(), kNoEtc, show);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  CommandResult first =
      RunIn(ws_->path(), kEtc,
            show +
                "; echo 203.0.113.9 laz-planted >> /etc/hosts; "
                "echo nameserver 203.0.113.9 >> /etc/resolv.conf; echo planted > /etc/hostname;"
                " echo kept > /etc/laz-etc-file");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string resolv = plain.out.substr(0, plain.out.find("---"));
  EXPECT_EQ(first.out.substr(0, first.out.find("---")), resolv);
  CommandResult second = RunIn(ws_->path(), kEtc, show + "; cat /etc/laz-etc-file");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("kept"));  // /etc does persist
  EXPECT_THAT(second.out, Not(HasSubstr("laz-planted")));
  EXPECT_THAT(second.out, Not(HasSubstr("203.0.113.9")));
  EXPECT_THAT(second.out, Not(HasSubstr("planted\n")));
  EXPECT_EQ(second.out.substr(0, second.out.find("---")), resolv);
  // hostname and /etc/hostname agree (podman's file, this session's name).
  const size_t h = second.out.find("---\n") + 4;
  const std::string names = second.out.substr(h, second.out.find("---", h) - h);
  const std::string host = names.substr(0, names.find('\n'));
  EXPECT_FALSE(host.empty());
  EXPECT_EQ(Trim(names), host + "\n" + host);
  ExpectNothingMounted(kEtc);
}

}  // namespace
}  // namespace lazaret::test::e2e::persist
