#include "services/sessiond/gitshadow/tree.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "services/sessiond/gitshadow/classify.h"

namespace lazaret::cli::gitshadow {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GitShadowFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-gsfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    // Something outside the tree that a planted symlink points at.
    outside_ = base_ + "/outside";
    mkdir(outside_.c_str(), 0755);
    std::ofstream(outside_ + "/secret") << "secret";
  }
  void TearDown() override { (void)!system(("rm -rf " + base_).c_str()); }

  void MkDir(const std::string& rel) { ASSERT_EQ(mkdir((base_ + "/" + rel).c_str(), 0755), 0); }
  void Write(const std::string& rel, const std::string& contents) {
    std::ofstream(base_ + "/" + rel) << contents;
  }
  std::string P(const std::string& rel) const { return base_ + "/" + rel; }

  Classifier ObjectClassifier() const {
    return [](const std::vector<std::string>& rel, EntryKind kind) {
      return ClassifyObjectStoreEntry(40, rel, kind);
    };
  }

  std::string base_, outside_;
};

TEST_F(GitShadowFsTest, SweepRemovesSymlinksFifosSocketsAndDevicesWithoutFollowing) {
  MkDir("s");
  MkDir("s/ab");
  const std::string obj(38, 'c');
  Write("s/ab/" + obj, "x");
  ASSERT_EQ(symlink((outside_ + "/secret").c_str(), P("s/ab/" + std::string(38, 'd')).c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), P("s/cd").c_str()), 0);  // a symlinked fan-out dir
  ASSERT_EQ(mkfifo(P("s/ab/" + std::string(38, 'e')).c_str(), 0644), 0);
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = P("s/ab/" + std::string(38, 'f'));
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path.c_str());
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(sock);
  const bool root = geteuid() == 0;
  if (root) {
    ASSERT_EQ(mknod(P("s/ab/" + std::string(38, '1')).c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
  }

  std::vector<std::string> removed;
  ASSERT_TRUE(SweepTree(P("s"), ObjectClassifier(), WalkLimits{}, &removed).ok());
  EXPECT_TRUE(Exists(P("s/ab/" + obj)));
  EXPECT_FALSE(Exists(P("s/ab/" + std::string(38, 'd'))));
  EXPECT_FALSE(Exists(P("s/cd")));
  EXPECT_FALSE(Exists(P("s/ab/" + std::string(38, 'e'))));
  EXPECT_FALSE(Exists(sock_path));
  EXPECT_EQ(removed.size(), root ? 5u : 4u);
  EXPECT_EQ(Slurp(outside_ + "/secret"), "secret") << "the symlink target is untouched";
  EXPECT_TRUE(Exists(outside_));
}

TEST_F(GitShadowFsTest, SweepRemovesUnexpectedNamesAndHttpAlternates) {
  MkDir("s");
  MkDir("s/info");
  MkDir("s/pack");
  MkDir("s/zz");
  MkDir("s/ab");
  MkDir("s/ab/nested");
  Write("s/info/alternates", "/run/lazaret/git/objects\n");
  Write("s/info/http-alternates", "http://evil/\n");
  Write("s/pack/pack-" + std::string(40, 'a') + ".pack", "P");
  Write("s/pack/pack-" + std::string(40, 'a') + ".idx", "I");
  Write("s/pack/tmp_pack_123", "T");
  Write("s/pack/evil.sh", "#!/bin/sh");
  Write("s/README", "x");
  Write("s/maintenance.lock", "");  // git gc holds it while it runs
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepTree(P("s"), ObjectClassifier(), WalkLimits{}, &removed).ok());
  EXPECT_TRUE(Exists(P("s/info/alternates")));  // checked by content elsewhere
  EXPECT_FALSE(Exists(P("s/info/http-alternates")));
  EXPECT_TRUE(Exists(P("s/pack/pack-" + std::string(40, 'a') + ".pack")));
  EXPECT_TRUE(Exists(P("s/pack/tmp_pack_123")));
  EXPECT_FALSE(Exists(P("s/pack/evil.sh")));
  EXPECT_FALSE(Exists(P("s/zz")));
  EXPECT_FALSE(Exists(P("s/ab/nested")));
  EXPECT_FALSE(Exists(P("s/README")));
  EXPECT_TRUE(Exists(P("s/maintenance.lock")));
}

TEST_F(GitShadowFsTest, RefTreeKeepsValidNamesAndLocksOnly) {
  MkDir("r");
  MkDir("r/feature");
  Write("r/agent-x", "a");
  Write("r/agent-x.lock", "a");
  Write("r/feature/one", "a");
  Write("r/.hidden", "a");
  Write("r/bad..name", "a");
  ASSERT_EQ(symlink("/etc/passwd", P("r/feature/link").c_str()), 0);
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepTree(P("r"), ClassifyRefTreeEntry, WalkLimits{}, &removed).ok());
  EXPECT_TRUE(Exists(P("r/agent-x")));
  EXPECT_TRUE(Exists(P("r/agent-x.lock")));
  EXPECT_TRUE(Exists(P("r/feature/one")));
  EXPECT_FALSE(Exists(P("r/.hidden")));
  EXPECT_FALSE(Exists(P("r/bad..name")));
  EXPECT_FALSE(Exists(P("r/feature/link")));
  auto files = ListRefFiles(P("r"), 100);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
}

TEST_F(GitShadowFsTest, SweepBoundsDepth) {
  std::string rel = "r";
  MkDir(rel);
  for (int i = 0; i < 20; ++i) {
    rel += "/d";
    MkDir(rel);
  }
  Write(rel + "/deep", "x");
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepTree(P("r"), ClassifyRefTreeEntry, WalkLimits{}, &removed).ok());
  EXPECT_FALSE(Exists(P(rel)));
  EXPECT_EQ(removed.size(), 1u);
}

TEST_F(GitShadowFsTest, MirrorCopiesLooseObjectsAndCompletePacksOnly) {
  MkDir("s");
  MkDir("s/ab");
  MkDir("s/pack");
  MkDir("s/info");
  MkDir("t");
  const std::string obj(38, 'c');
  Write("s/ab/" + obj, "object");
  ASSERT_EQ(symlink((outside_ + "/secret").c_str(), P("s/ab/" + std::string(38, 'd')).c_str()), 0);
  const std::string pack = "pack-" + std::string(40, '1');
  Write("s/pack/" + pack + ".pack", "PACK");
  Write("s/pack/" + pack + ".idx", "IDX");
  const std::string lone = "pack-" + std::string(40, '2');
  Write("s/pack/" + lone + ".idx", "IDX only");
  Write("s/info/alternates", "/somewhere/else\n");
  MirrorStats stats;
  ASSERT_TRUE(MirrorObjectFiles(P("s"), P("t"), 40, MirrorLimits{}, &stats).ok());
  EXPECT_EQ(Slurp(P("t/ab/" + obj)), "object");
  EXPECT_FALSE(Exists(P("t/ab/" + std::string(38, 'd'))));
  EXPECT_EQ(Slurp(P("t/pack/" + pack + ".pack")), "PACK");
  EXPECT_FALSE(Exists(P("t/pack/" + pack + ".idx"))) << "the sandbox's index is never copied";
  EXPECT_EQ(stats.packs_to_index, std::vector<std::string>{"pack/" + pack + ".pack"});
  EXPECT_FALSE(Exists(P("t/pack/" + lone + ".idx")));
  EXPECT_FALSE(Exists(P("t/info")));
  EXPECT_EQ(stats.files_copied, 2u);

  // Unchanged: nothing copied. Removed in the source: removed in the copy.
  MirrorStats again;
  ASSERT_EQ(unlink(P("s/ab/" + obj).c_str()), 0);
  ASSERT_TRUE(MirrorObjectFiles(P("s"), P("t"), 40, MirrorLimits{}, &again).ok());
  EXPECT_EQ(again.files_copied, 0u);
  EXPECT_EQ(again.files_removed, 1u);
  EXPECT_FALSE(Exists(P("t/ab/" + obj)));
}

// Rootless podman: the sandbox's root is the developer's uid, so the agent
// can leave owned-but-unreadable entries. Sweep and mirror still work.
TEST_F(GitShadowFsTest, UnreadableEntriesOwnedByTheUserAreStillSweptAndCopied) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another uid (CI runs as root)";
  constexpr uid_t kUser = 65534;
  MkDir("s");
  MkDir("s/ab");
  MkDir("s/zz");
  MkDir("s/zz/deep");
  const std::string obj(38, 'c');
  Write("s/ab/" + obj, "object");
  ASSERT_EQ(symlink("/etc/passwd", P("s/zz/deep/link").c_str()), 0);
  MkDir("t");
  ASSERT_EQ(
      system(
          ("chown -R 65534:65534 " + base_ + "/s " + base_ + "/t && chmod 755 " + base_).c_str()),
      0);
  ASSERT_EQ(chmod(P("s/ab/" + obj).c_str(), 0), 0);
  ASSERT_EQ(chmod(P("s/zz/deep").c_str(), 0), 0);
  ASSERT_EQ(chmod(P("s/ab").c_str(), 0500), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kUser, kUser, kUser) != 0 ||
        setresuid(kUser, kUser, kUser) != 0) {
      _exit(10);
    }
    std::vector<std::string> removed;
    if (!SweepTree(P("s"), ObjectClassifier(), WalkLimits{}, &removed).ok()) _exit(11);
    MirrorStats stats;
    if (!MirrorObjectFiles(P("s"), P("t"), 40, MirrorLimits{}, &stats).ok()) _exit(12);
    _exit(stats.files_copied == 1 ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(Exists(P("s/zz")));
  EXPECT_EQ(Slurp(P("t/ab/" + obj)), "object");
}

TEST_F(GitShadowFsTest, MirrorEnforcesSizeLimits) {
  MkDir("s");
  MkDir("s/ab");
  MkDir("t");
  Write("s/ab/" + std::string(38, 'c'), std::string(1000, 'x'));
  MirrorLimits limits;
  limits.max_file_bytes = 100;
  MirrorStats stats;
  EXPECT_EQ(MirrorObjectFiles(P("s"), P("t"), 40, limits, &stats).code(),
            absl::StatusCode::kResourceExhausted);
  limits.max_file_bytes = 10000;
  limits.max_total_bytes = 500;
  EXPECT_EQ(MirrorObjectFiles(P("s"), P("t"), 40, limits, &stats).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace lazaret::cli::gitshadow
