#include "clients/lazaret/image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace lazaret::cli {
namespace {

using ::testing::ElementsAre;

TEST(PackageListTest, CommentsAndBlankLinesAreSkipped) {
  auto p = ParsePackageList("# c\nbash\n\n  git  # vcs\nca-certificates\n");
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(*p, ElementsAre("bash", "git", "ca-certificates"));
  EXPECT_FALSE(ParsePackageList("bash; rm -rf /\n").ok());
  EXPECT_FALSE(ParsePackageList("--include=x\n").ok());
  EXPECT_FALSE(ParsePackageList("# nothing\n").ok());
}

TEST(SandboxInputsHashTest, ChangesWithEveryInputAndOnlyThen) {
  const std::string a = SandboxInputsHash({"bash", "git"}, "http://deb.debian.org/debian");
  EXPECT_EQ(a, SandboxInputsHash({"bash", "git"}, "http://deb.debian.org/debian"));
  EXPECT_NE(a, SandboxInputsHash({"bash", "git", "curl"}, "http://deb.debian.org/debian"));
  EXPECT_NE(a, SandboxInputsHash({"bash", "git"}, "http://mirror.example/debian"));
  EXPECT_EQ(a.size(), 64u);
}

class MirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-apt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    (void)!std::system(("mkdir -p " + dir_ + "/sources.list.d").c_str());
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ + "/" + rel) << text;
  }
  std::string dir_;
};

TEST_F(MirrorTest, Deb822SkipsSecurityAndBackports) {
  Write("sources.list.d/a-backports.sources",
        "Types: deb\nURIs: http://bp.example/debian\nSuites: bookworm-backports\n");
  Write("sources.list.d/debian.sources",
        "Types: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian/\nSuites: bookworm "
        "bookworm-updates\nComponents: main\n");
  EXPECT_EQ(DetectDebianMirror(dir_), "http://mirror.example/debian");
}

TEST_F(MirrorTest, OneLineFormatAndDefault) {
  EXPECT_EQ(DetectDebianMirror(dir_), "http://deb.debian.org/debian");
  Write("sources.list",
        "# deb http://old.example/debian bookworm main\n"
        "deb [arch=amd64] http://list.example/debian bookworm main\n");
  EXPECT_EQ(DetectDebianMirror(dir_), "http://list.example/debian");
}

TEST(LddTest, ParsesLibrariesAndLoader) {
  auto f = ParseLddOutput(
      "\tlinux-vdso.so.1 (0x00007ffd)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].dest, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ((*f)[1].dest, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_FALSE(ParseLddOutput("\tlibx.so => not found\n").ok());
}

}  // namespace
}  // namespace lazaret::cli
