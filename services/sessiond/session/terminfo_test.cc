#include "services/sessiond/session/terminfo.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace lazaret::cli::session {
namespace {

class TerminfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-ti-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + root_).c_str()); }
  void Touch(const std::string& rel) {
    const std::string path = root_ + "/" + rel;
    (void)!std::system(("mkdir -p " + path.substr(0, path.rfind('/'))).c_str());
    std::ofstream(path) << "entry";
  }
  TerminfoSearch Search() {
    TerminfoSearch s;
    s.system_dirs = {root_ + "/sys1", root_ + "/sys2"};
    return s;
  }
  std::string root_;
};

TEST_F(TerminfoTest, FindsFirstLetterAndHexLayouts) {
  Touch("sys2/x/xterm-kitty");
  Touch("sys1/78/xterm-ghostty");
  auto k = FindTerminfo("xterm-kitty", Search());
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->host_path, root_ + "/sys2/x/xterm-kitty");
  EXPECT_EQ(k->container_path, "/run/lazaret/terminfo/x/xterm-kitty");
  auto g = FindTerminfo("xterm-ghostty", Search());
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->host_path, root_ + "/sys1/78/xterm-ghostty");
  EXPECT_EQ(g->container_path, "/run/lazaret/terminfo/x/xterm-ghostty");
}

TEST_F(TerminfoTest, SearchOrderIsTerminfoHomeDirsThenSystem) {
  Touch("sys1/a/alacritty");
  Touch("dirs/a/alacritty");
  Touch("home/.terminfo/a/alacritty");
  Touch("ti/a/alacritty");
  TerminfoSearch s = Search();
  s.terminfo_dirs = root_ + "/dirs";
  EXPECT_EQ(FindTerminfo("alacritty", s)->host_path, root_ + "/dirs/a/alacritty");
  s.home = root_ + "/home";
  EXPECT_EQ(FindTerminfo("alacritty", s)->host_path, root_ + "/home/.terminfo/a/alacritty");
  s.terminfo = root_ + "/ti";
  EXPECT_EQ(FindTerminfo("alacritty", s)->host_path, root_ + "/ti/a/alacritty");
}

TEST_F(TerminfoTest, EmptyTerminfoDirsElementMeansSystemDirs) {
  TerminfoSearch s = Search();
  s.terminfo_dirs = "/nonexistent::/other";
  auto dirs = TerminfoDirectories(s);
  ASSERT_GE(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], "/nonexistent");
  EXPECT_EQ(dirs[1], root_ + "/sys1");
}

TEST_F(TerminfoTest, ResolvesSymlinksToTheRealFile) {
  Touch("real/entry");
  (void)!std::system(("mkdir -p " + root_ + "/sys1/k").c_str());
  ASSERT_EQ(symlink((root_ + "/real/entry").c_str(), (root_ + "/sys1/k/kitty").c_str()), 0);
  EXPECT_EQ(FindTerminfo("kitty", Search())->host_path, root_ + "/real/entry");
}

TEST_F(TerminfoTest, RejectsNamesThatAreNotFileNames) {
  Touch("sys1/x/x");
  for (const char* bad : {"", "../x", "x/y", ".x", "a b", "x\n"}) {
    EXPECT_FALSE(IsValidTermName(bad)) << bad;
    EXPECT_FALSE(FindTerminfo(bad, Search()).has_value());
  }
  EXPECT_FALSE(FindTerminfo("missing", Search()).has_value());
}

}  // namespace
}  // namespace lazaret::cli::session
