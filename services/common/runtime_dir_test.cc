#include "services/common/runtime_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lazaret {
namespace {

class RuntimeDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-rtdir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override { (void)!system(("rm -rf " + base_).c_str()); }
  std::string base_;
};

TEST_F(RuntimeDirTest, CreatesMissingDirectoryWithMode0700) {
  const std::string dir = base_ + "/rt";
  ASSERT_TRUE(EnsurePrivateDir(dir).ok());
  struct stat st {};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(RuntimeDirTest, RefusesSymlinkInPlaceOfDirectory) {
  const std::string dir = base_ + "/rt";
  ASSERT_EQ(symlink("/tmp", dir.c_str()), 0);
  auto r = EnsurePrivateDir(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos);
}

TEST_F(RuntimeDirTest, RefusesGroupOrWorldAccessibleDirectory) {
  const std::string dir = base_ + "/rt";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  auto r = EnsurePrivateDir(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chmod 700"), std::string::npos);
}

TEST_F(RuntimeDirTest, RefusesRelativePath) { EXPECT_FALSE(EnsurePrivateDir("relative/dir").ok()); }

TEST(DefaultRuntimeDirTest, ExplicitOverrideWins) {
  setenv("LAZARET_RUNTIME_DIR", "/tmp/laz-explicit", 1);
  EXPECT_EQ(DefaultRuntimeDir(), "/tmp/laz-explicit");
  unsetenv("LAZARET_RUNTIME_DIR");
}

// Sets (or, for nullptr, unsets) variables for the test's lifetime.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = getenv(name);
      saved_.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
      if (value == nullptr) {
        unsetenv(name);
      } else {
        setenv(name, value, 1);
      }
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value.has_value()) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// /tmp/lazaret-<uid> is a name any local user can create first; the
// fallback is never in a directory others can write.
TEST(DefaultRuntimeDirTest, FallbackWithoutXdgIsNeverInTmp) {
  ScopedEnv env({{"LAZARET_RUNTIME_DIR", nullptr},
                 {"XDG_RUNTIME_DIR", nullptr},
                 {"XDG_STATE_HOME", nullptr},
                 {"HOME", "/home/someone"}});
  const std::string dir = DefaultRuntimeDir();
  EXPECT_EQ(dir.rfind("/tmp/", 0), std::string::npos) << dir;
  if (geteuid() == 0) {
    EXPECT_EQ(dir, "/run/lazaret");
  } else {
    EXPECT_EQ(dir, "/home/someone/.local/state/lazaret/run");
  }
}

// XDG_RUNTIME_DIR passes through su and sudo unchanged: another user's is
// never used.
TEST_F(RuntimeDirTest, XdgRuntimeDirOfAnotherUserIsNotUsed) {
  std::string xdg = "/";  // root's: another user's for everyone but root
  if (geteuid() == 0) {
    xdg = base_ + "/other";
    ASSERT_EQ(mkdir(xdg.c_str(), 0700), 0);
    ASSERT_EQ(chown(xdg.c_str(), 65534, 65534), 0);
  }
  ScopedEnv env({{"LAZARET_RUNTIME_DIR", nullptr},
                 {"XDG_RUNTIME_DIR", xdg.c_str()},
                 {"XDG_STATE_HOME", "/home/someone/state"},
                 {"HOME", "/home/someone"}});
  const std::string dir = DefaultRuntimeDir();
  EXPECT_NE(dir, xdg + "/lazaret");
  EXPECT_NE(dir, "//lazaret");
}

// What DefaultRuntimeDir gives a user that is not root: in a child that
// became uid 65534 when the test runs as root (as CI does).
std::string AsNonRoot(const std::function<std::string()>& fn) {
  if (geteuid() != 0) return fn();
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (setresuid(65534, 65534, 65534) != 0) _exit(1);
    const std::string out = fn();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

TEST(DefaultRuntimeDirTest, NonRootFallbackIsBelowTheStateHomeOrHome) {
  ScopedEnv env({{"LAZARET_RUNTIME_DIR", nullptr},
                 {"XDG_RUNTIME_DIR", nullptr},
                 {"XDG_STATE_HOME", "/home/someone/state"},
                 {"HOME", "/home/someone"}});
  EXPECT_EQ(AsNonRoot(DefaultRuntimeDir), "/home/someone/state/lazaret/run");
  unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(AsNonRoot(DefaultRuntimeDir), "/home/someone/.local/state/lazaret/run");
}

TEST_F(RuntimeDirTest, CreatesMissingParentsOwnerOnly) {
  const std::string dir = base_ + "/home/.local/state/lazaret/run";
  ASSERT_TRUE(EnsurePrivateDir(dir).ok()) << EnsurePrivateDir(dir).status();
  struct stat st {};
  ASSERT_EQ(lstat((base_ + "/home/.local").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

}  // namespace
}  // namespace lazaret
