// Image tags follow the inputs hash, and the package list is found where
// FindImagesDir says.
#include "clients/lazaret/images/tags.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "clients/lazaret/images/sandbox_inputs.h"

namespace lazaret::cli::images {
namespace {

TEST(TagsTest, TagsCarryTheFirstSixteenHexDigitsOfTheInputsHash) {
  const std::string hash(64, 'a');
  EXPECT_EQ(SandboxTag(hash), "localhost/lazaret-sandbox:trixie-aaaaaaaaaaaaaaaa");
  EXPECT_EQ(SidecarTag(hash), "localhost/lazaret-sidecar:aaaaaaaaaaaaaaaa");
}

TEST(TagsTest, SandboxTagFollowsThePackageListAndMirror) {
  char tmpl[] = "/tmp/laz-images-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  absl::StatusOr<std::string> missing = SandboxImageTag(dir, "http://m.example/debian");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), kImagesDirEnv)) << missing.status();
  ASSERT_EQ(system(("mkdir " + dir + "/sandbox").c_str()), 0);
  std::ofstream(dir + "/sandbox/packages.txt") << "bash\n";
  absl::StatusOr<std::string> tag = SandboxImageTag(dir, "http://m.example/debian/");
  ASSERT_TRUE(tag.ok()) << tag.status();
  EXPECT_EQ(*tag, SandboxTag(SandboxInputsHash({"bash"}, "http://m.example/debian")));
  (void)!std::system(("rm -rf " + dir).c_str());
}

TEST(ImagesDirTest, EnvironmentOverridesAndTheSourceTreeIsTheFallback) {
  ASSERT_EQ(setenv(kImagesDirEnv, "/somewhere/images", 1), 0);
  EXPECT_EQ(FindImagesDir("/nonexistent/bin"), "/somewhere/images");
  unsetenv(kImagesDirEnv);
  const std::string source = FindImagesDir("/nonexistent/bin");
  EXPECT_TRUE(absl::EndsWith(source, "/deploy/images")) << source;
  EXPECT_EQ(access((source + "/sandbox/packages.txt").c_str(), R_OK), 0) << source;
}

}  // namespace
}  // namespace lazaret::cli::images
