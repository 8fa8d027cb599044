#include "clients/lazaret/images/debian_mirror.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace lazaret::cli::images {
namespace {

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

}  // namespace
}  // namespace lazaret::cli::images
