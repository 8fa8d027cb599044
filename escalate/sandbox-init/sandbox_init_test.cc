#include "escalate/sandbox-init/sandbox_init.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace lazaret::sandbox_init {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadLink(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

int RunShell(const std::string& cmd) {
  const int status = system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A git dir on a real tmpfs (/dev/shm), with the directories the runner's
// binds would provide, and a fake shadow next to it.
class BuildGitDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/dev/shm/laz-init-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    git_dir_ = base_ + "/git";
    shadow_ = base_ + "/shadow";
    ASSERT_EQ(mkdir(git_dir_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((git_dir_ + "/refs").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((git_dir_ + "/objects").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(shadow_.c_str(), 0755), 0);
    std::ofstream(base_ + "/index") << "DIRC-fake-index";
    options_.git_dir = git_dir_;
    options_.git_shadow = shadow_;
    options_.git_head = "refs/heads/lazaret/agent-test";
    options_.git_index = base_ + "/index";
    options_.git_links = {"config", "info", "shallow"};
    options_.git_packed_refs = base_ + "/session/packed-refs";
  }
  void TearDown() override { (void)!system(("rm -rf " + base_).c_str()); }

  std::string base_, git_dir_, shadow_;
  Options options_;
};

TEST_F(BuildGitDirTest, WritesHeadLinksHooksAndIndexCopy) {
  ASSERT_TRUE(BuildGitDir(options_).ok());
  EXPECT_EQ(ReadFile(git_dir_ + "/HEAD"), "ref: refs/heads/lazaret/agent-test\n");
  for (const char* name : {"config", "info", "shallow"}) {
    EXPECT_EQ(ReadLink(git_dir_ + "/" + name), shadow_ + "/" + name) << name;
  }
  EXPECT_EQ(ReadLink(git_dir_ + "/packed-refs"), base_ + "/session/packed-refs");
  struct stat st {};
  ASSERT_EQ(lstat((git_dir_ + "/hooks").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(lstat((git_dir_ + "/index").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the index is a copy, not a link to the host's";
  EXPECT_EQ(ReadFile(git_dir_ + "/index"), "DIRC-fake-index");
}

TEST_F(BuildGitDirTest, RefusesADirectoryThatIsNotATmpfs) {
  char tmpl[] = "/var/tmp/laz-init-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string disk = tmpl;
  mkdir((disk + "/refs").c_str(), 0755);
  mkdir((disk + "/objects").c_str(), 0755);
  options_.git_dir = disk;
  const absl::Status r = BuildGitDir(options_);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not a tmpfs"), std::string::npos) << r.message();
  struct stat st {};
  EXPECT_NE(lstat((disk + "/HEAD").c_str(), &st), 0) << "nothing may be written there";
  (void)!system(("rm -rf " + disk).c_str());
}

TEST_F(BuildGitDirTest, RefusesWhenTheRefsMountIsMissing) {
  ASSERT_EQ(rmdir((git_dir_ + "/refs").c_str()), 0);
  const absl::Status r = BuildGitDir(options_);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message().find("refs is missing"), std::string::npos) << r.message();
}

// The CA bundle in a tmpfs of its own (/dev/shm here), the image's bundle
// and the host's certificates next to it.
TEST(CaBundleTest, BundleIsImageBundlePlusHostRefusesNonTmpfs) {
  char tmpl[] = "/dev/shm/laz-ca-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  std::ofstream(base + "/image.crt") << "IMAGE-ROOTS";  // no trailing newline
  std::ofstream(base + "/host.pem") << "HOST-ROOTS\n";
  ASSERT_EQ(mkdir((base + "/bundle").c_str(), 0755), 0);
  Options o;
  ASSERT_TRUE(ParseArgs({"--ca-host=" + base + "/host.pem",
                         "--ca-bundle=" + base + "/bundle/bundle.pem", "--", "true"},
                        &o)
                  .ok());
  // The first readable candidate is the image's bundle; a missing one and
  // a directory are passed over.
  ASSERT_TRUE(BuildCaBundle(o, {base + "/missing.crt", base + "/bundle", base + "/image.crt",
                                base + "/host.pem"})
                  .ok());
  EXPECT_EQ(ReadFile(base + "/bundle/bundle.pem"), "IMAGE-ROOTS\nHOST-ROOTS\n");
  struct stat st {};
  ASSERT_EQ(stat((base + "/bundle/bundle.pem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "every user of the sandbox reads it";
  // An image without a bundle: the host's certificates alone.
  ASSERT_TRUE(BuildCaBundle(o, {base + "/missing.crt"}).ok());
  EXPECT_EQ(ReadFile(base + "/bundle/bundle.pem"), "HOST-ROOTS\n");
  // The host's file missing (the bind absent): refused.
  Options no_host = o;
  no_host.ca_host = base + "/none.pem";
  EXPECT_FALSE(BuildCaBundle(no_host, {base + "/image.crt"}).ok());

  // A directory on disk, not a tmpfs: nothing is written there.
  char disk_tmpl[] = "/var/tmp/laz-ca-XXXXXX";
  ASSERT_NE(mkdtemp(disk_tmpl), nullptr);
  const std::string disk = disk_tmpl;
  Options on_disk = o;
  on_disk.ca_bundle = disk + "/bundle.pem";
  const absl::Status r = BuildCaBundle(on_disk, {base + "/image.crt"});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not a tmpfs"), std::string::npos) << r.message();
  EXPECT_NE(lstat(on_disk.ca_bundle.c_str(), &st), 0) << "nothing may be written there";
  // And the binary does not start the command then.
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " --ca-host=" + base +
                     "/host.pem --ca-bundle=" + disk + "/bundle.pem -- touch " + disk +
                     "/ran 2>/dev/null"),
            125);
  EXPECT_NE(lstat((disk + "/ran").c_str(), &st), 0);
  (void)!system(("rm -rf " + disk + " " + base).c_str());
}

TEST(ParseArgsTest, CaOptionsGoTogetherAsCleanAbsolutePaths) {
  Options o;
  ASSERT_TRUE(ParseArgs({"--ca-host=/run/lazaret/ca/host.pem",
                         "--ca-bundle=/run/lazaret/ca-bundle/bundle.pem"},
                        &o)
                  .ok());
  EXPECT_EQ(o.ca_host, "/run/lazaret/ca/host.pem");
  EXPECT_EQ(o.ca_bundle, "/run/lazaret/ca-bundle/bundle.pem");
  EXPECT_TRUE(o.git_dir.empty());
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--ca-host=/run/lazaret/ca/host.pem"},
           {"--ca-bundle=/run/lazaret/ca-bundle/bundle.pem"},
           {"--ca-host=host.pem", "--ca-bundle=/b/bundle.pem"},
           {"--ca-host=/h.pem", "--ca-bundle=/b/../etc/bundle.pem"},
           {"--ca-host=/h.pem", "--ca-bundle=/bundle.pem"},
       }) {
    Options b;
    EXPECT_FALSE(ParseArgs(bad, &b).ok()) << bad[0];
  }
}

TEST(ParseArgsTest, SplitsOptionsFromCommand) {
  Options o;
  ASSERT_TRUE(ParseArgs({"--git-dir=/workspace/.git", "--git-shadow=/run/lazaret/git",
                         "--git-head=refs/heads/lazaret/agent-x", "--git-link=config", "--", "git",
                         "--version"},
                        &o)
                  .ok());
  EXPECT_EQ(o.git_dir, "/workspace/.git");
  EXPECT_EQ(o.git_links, std::vector<std::string>{"config"});
  EXPECT_EQ(o.command, (std::vector<std::string>{"git", "--version"}));
}

TEST(ParseArgsTest, NoGitOptionsAndNoCommandIsValid) {
  Options o;
  ASSERT_TRUE(ParseArgs({}, &o).ok());
  EXPECT_TRUE(o.git_dir.empty());
  EXPECT_TRUE(o.command.empty());
}

TEST(ParseArgsTest, RefusesUnknownLinkNames) {
  Options o;
  EXPECT_FALSE(ParseArgs({"--git-link=hooks"}, &o).ok());
  EXPECT_FALSE(ParseArgs({"--git-link=../../etc/passwd"}, &o).ok());
}

TEST(ParseArgsTest, RefusesHeadOutsideBranches) {
  for (const char* head : {"refs/tags/v1", "refs/heads/", "refs/heads/a b", "HEAD",
                           "refs/heads/x\nref: refs/heads/main"}) {
    Options o;
    EXPECT_FALSE(
        ParseArgs({"--git-dir=/w/.git", "--git-shadow=/s", std::string("--git-head=") + head}, &o)
            .ok())
        << head;
  }
}

TEST(ParseArgsTest, RefusesRelativeOrDottedPaths) {
  Options o;
  EXPECT_FALSE(
      ParseArgs({"--git-dir=w/.git", "--git-shadow=/s", "--git-head=refs/heads/x"}, &o).ok());
  EXPECT_FALSE(
      ParseArgs({"--git-dir=/w/../.git", "--git-shadow=/s", "--git-head=refs/heads/x"}, &o).ok());
}

TEST(ParseArgsTest, PackedRefsIsEitherLinkedIntoTheShadowOrElsewhere) {
  Options o;
  EXPECT_FALSE(ParseArgs({"--git-dir=/w/.git", "--git-shadow=/s", "--git-head=refs/heads/x",
                          "--git-link=packed-refs", "--git-packed-refs=/p/packed-refs"},
                         &o)
                   .ok());
  Options o2;
  EXPECT_FALSE(ParseArgs({"--git-dir=/w/.git", "--git-shadow=/s", "--git-head=refs/heads/x",
                          "--git-packed-refs=relative"},
                         &o2)
                   .ok());
}

TEST(ParseArgsTest, RefusesGitOptionsWithoutGitDir) {
  Options o;
  EXPECT_FALSE(ParseArgs({"--git-head=refs/heads/x"}, &o).ok());
}

// The sandbox has no host socket to link to any more: the option that made
// /run/lazaret/escalate.sock is gone, and the binary refuses it before the
// command runs.
TEST(ParseArgsTest, NoEscalateLinkOption) {
  Options o;
  EXPECT_FALSE(ParseArgs({"--escalate-link=/run/lazaret/escalate.sock", "--", "true"}, &o).ok());
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) +
                     " --escalate-link=/run/lazaret/escalate.sock -- true 2>/dev/null"),
            125);
}

TEST(SandboxInitBinaryTest, ExitCodeIsTheCommands) {
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " -- sh -c 'exit 42'"), 42);
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " -- true"), 0);
}

TEST(SandboxInitBinaryTest, MissingCommandIs127AndBadFlagsAre125) {
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " -- /nonexistent/cmd 2>/dev/null"),
            127);
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " --bogus=1 -- true 2>/dev/null"),
            125);
}

TEST(SandboxInitBinaryTest, SetupFailureNeverRunsTheCommand) {
  char tmpl[] = "/var/tmp/laz-init-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string marker = dir + "/ran";
  EXPECT_EQ(RunShell(std::string(LAZARET_SANDBOX_INIT_BIN) + " --git-dir=" + dir +
                     " --git-shadow=/run/lazaret/git --git-head=refs/heads/lazaret/x -- touch " +
                     marker + " 2>/dev/null"),
            125);
  struct stat st {};
  EXPECT_NE(lstat(marker.c_str(), &st), 0);
  (void)!system(("rm -rf " + dir).c_str());
}

TEST(SandboxInitBinaryTest, IsStaticallyLinked) {
  EXPECT_EQ(RunShell(std::string("file -L ") + LAZARET_SANDBOX_INIT_BIN +
                     " | grep -q 'statically linked'"),
            0);
}

TEST(SandboxInitBinaryTest, NoCommandRunsTheShell) {
  EXPECT_EQ(RunShell(std::string("echo 'exit 7' | SHELL=/bin/sh ") + LAZARET_SANDBOX_INIT_BIN), 7);
}

}  // namespace
}  // namespace lazaret::sandbox_init
