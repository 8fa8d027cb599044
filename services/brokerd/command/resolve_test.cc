#include "services/brokerd/command/resolve.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

class ResolveTest : public fs::ScratchTest {
 protected:
  void MakeProgram(const std::string& rel, mode_t mode = 0755) {
    Write(rel, "#!/bin/sh\nexit 0\n");
    ASSERT_EQ(chmod(P(rel).c_str(), mode), 0);
  }
};

TEST_F(ResolveTest, RefusesAnythingButABareName) {
  for (const char* name : {"./x", "/bin/sh", "bin/sh", "A=b", "-x", ".x", "", "a b", "a\tb",
                           "sh\xc2\xa0", "..", "gh\u202e"}) {
    const absl::StatusOr<ResolvedBinary> r = ResolveCommandName(name);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << name;
  }
  EXPECT_EQ(ResolveCommandName("/bin/sh").status().message(),
            "argv[0] must be a command name, not a path ('/bin/sh')");
}

TEST_F(ResolveTest, FindsASystemProgramByItsCanonicalPath) {
  const absl::StatusOr<ResolvedBinary> sh = ResolveCommandName("sh");
  ASSERT_TRUE(sh.ok()) << sh.status();
  char* real = realpath("/bin/sh", nullptr);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(sh->path, real);
  free(real);
  struct stat st {};
  ASSERT_EQ(stat("/bin/sh", &st), 0);
  EXPECT_EQ(sh->dev, st.st_dev);
  EXPECT_EQ(sh->ino, st.st_ino);
}

TEST_F(ResolveTest, MissingCommandNamesThePath) {
  const absl::StatusOr<ResolvedBinary> r = ResolveCommandName("lazaret-no-such-command");
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_EQ(r.status().message(),
            "'lazaret-no-such-command' is not a command on the host's PATH "
            "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)");
}

TEST_F(ResolveTest, FirstExecutableRegularFileWins) {
  ASSERT_EQ(mkdir(P("a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("b").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("c").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("a/tool").c_str(), 0755), 0);  // a directory is not a command
  MakeProgram("b/tool", 0644);                     // nor a file without an execute bit
  MakeProgram("c/tool");
  const std::string path = "relative:" + P("a") + "::" + P("b") + ":" + P("c");
  const absl::StatusOr<ResolvedBinary> r = ResolveCommandName("tool", path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->path, P("c/tool"));
}

TEST_F(ResolveTest, SymlinkIsResolvedToItsTarget) {
  ASSERT_EQ(mkdir(P("bin").c_str(), 0755), 0);
  MakeProgram("real-tool");
  ASSERT_EQ(symlink(P("real-tool").c_str(), P("bin/tool").c_str()), 0);
  const absl::StatusOr<ResolvedBinary> r = ResolveCommandName("tool", P("bin"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->path, P("real-tool"));
}

TEST_F(ResolveTest, CurrentDirectoryIsNeverSearched) {
  MakeProgram("tool");
  ASSERT_EQ(chdir(base_.c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(ResolveCommandName("tool", ":.:").status()));
  ASSERT_EQ(chdir("/"), 0);
}

}  // namespace
}  // namespace lazaret::brokerd::command
