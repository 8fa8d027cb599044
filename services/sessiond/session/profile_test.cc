#include "services/sessiond/session/profile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace lazaret::cli::session {
namespace {

TEST(CheckNoSymlinkComponentsTest, RefusesALinkAnywhereInThePath) {
  char tmpl[] = "/tmp/laz-sym-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(mkdir((root + "/real").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/real/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink((root + "/real").c_str(), (root + "/link").c_str()), 0);
  EXPECT_TRUE(CheckNoSymlinkComponents(root + "/real/sub").ok());
  EXPECT_FALSE(CheckNoSymlinkComponents(root + "/link/sub").ok());
  EXPECT_FALSE(CheckNoSymlinkComponents(root + "/link").ok());
  EXPECT_FALSE(CheckNoSymlinkComponents(root + "/missing").ok());
  EXPECT_FALSE(CheckNoSymlinkComponents("relative").ok());
  (void)!std::system(("rm -rf " + root).c_str());
}

}  // namespace
}  // namespace lazaret::cli::session
