#include "clients/lazaret/doctor/host_facts.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace lazaret::cli::doctor {
namespace {

TEST(HostFactsTest, RunscReleaseDateReadsDebiansAndGvisorsVersions) {
  EXPECT_EQ(RunscReleaseDate("runsc version 0.0~20240729.0"), 20240729);
  EXPECT_EQ(RunscReleaseDate("runsc version 0.0~20221219.0"), 20221219);
  EXPECT_EQ(RunscReleaseDate("runsc version release-20250512.0"), 20250512);
  EXPECT_EQ(RunscReleaseDate("runsc version 0.0~2024"), 0);
  EXPECT_EQ(RunscReleaseDate("runsc version VERSION_MISSING"), 0);
  EXPECT_EQ(RunscReleaseDate(""), 0);
  EXPECT_LT(RunscReleaseDate("runsc version 0.0~20221219.0"), kRunscMinReleaseDate);
}

TEST(HostFactsTest, GitAtLeastComparesMajorThenMinor) {
  EXPECT_TRUE(GitAtLeast("git version 2.39.5", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 2.35.0", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 3.0", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 2.43.0.windows.1", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 2.34.1", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 1.99.9", 2, 35));
}

TEST(HostFactsTest, AnUnreadableGitVersionIsTooOld) {
  EXPECT_FALSE(GitAtLeast("", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 2", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version x.y", 2, 35));
}

TEST(HostFactsTest, FirstLineIsTrimmed) {
  EXPECT_EQ(FirstLine("  podman version 4.3.1 \nmore\n"), "podman version 4.3.1");
  EXPECT_EQ(FirstLine("one"), "one");
  EXPECT_EQ(FirstLine(""), "");
}

TEST(HostFactsTest, ASubordinateRangeIsFoundByNameOrUid) {
  const char kText[] = "root:100000:65536\nalice:165536:65536\n1001:231072:65536\n";
  EXPECT_TRUE(HasSubordinateRange(kText, "alice", 1000));
  EXPECT_TRUE(HasSubordinateRange(kText, "bob", 1001));
  EXPECT_FALSE(HasSubordinateRange(kText, "carol", 1002));
  EXPECT_FALSE(HasSubordinateRange("", "alice", 1000));
}

TEST(HostFactsTest, ASmallOrMalformedRangeDoesNotCount) {
  EXPECT_FALSE(HasSubordinateRange("alice:100000:65535\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000:many\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000:65536:x\n", "alice", 1000));
  EXPECT_TRUE(HasSubordinateRange("# comment\nalice:100000:1000000\n", "alice", 1000));
}

// A fake /etc/ssl/certs as update-ca-certificates leaves it, with two
// CAs added locally, one copied in as a file, and a Fedora anchors dir.
TEST(HostFactsTest, CountsNonMozillaLinks) {
  char tmpl[] = "/tmp/laz-doctor-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  CaStoreLayout layout;
  layout.certs_dir = base + "/etc/ssl/certs";
  layout.public_dir = base + "/usr/share/ca-certificates/mozilla/";
  layout.anchors_dir = base + "/etc/pki/ca-trust/source/anchors";
  ASSERT_EQ(system(("mkdir -p " + layout.certs_dir + "/java " + layout.public_dir + " " + base +
                    "/usr/local/share/ca-certificates")
                       .c_str()),
            0);
  auto link = [&](const std::string& target, const std::string& name) {
    ASSERT_EQ(symlink(target.c_str(), (layout.certs_dir + "/" + name).c_str()), 0) << name;
  };
  link(layout.public_dir + "GlobalSign_Root_R46.crt", "GlobalSign_Root_R46.pem");
  link("GlobalSign_Root_R46.pem", "002c0b4f.0");
  link(base + "/usr/local/share/ca-certificates/custom-ca.crt", "custom-ca.pem");
  link("custom-ca.pem", "1a2b3c4d.0");
  link(base + "/usr/local/share/ca-certificates/sandboxing-egress-ca.crt",
       "sandboxing-egress-ca.pem");
  std::ofstream(layout.certs_dir + "/ca-certificates.crt") << "bundle";
  std::ofstream(layout.certs_dir + "/README") << "not a certificate";
  EXPECT_EQ(HostExtraCas(layout), (std::vector<std::string>{"custom-ca", "sandboxing-egress-ca"}));

  // A certificate copied in as a file, a name with a control byte, and an
  // anchor (Fedora's way) count too.
  std::ofstream(layout.certs_dir + "/copied.crt") << "x";
  link("/opt/ca/\x1b[31mred.crt", "\x1b[31mred.pem");
  ASSERT_EQ(system(("mkdir -p " + layout.anchors_dir).c_str()), 0);
  std::ofstream(layout.anchors_dir + "/corp-root.pem") << "x";
  EXPECT_EQ(HostExtraCas(layout), (std::vector<std::string>{"\\x1b[31mred", "copied", "corp-root",
                                                            "custom-ca", "sandboxing-egress-ca"}));

  // Only the public set, and no directory at all: nothing.
  ASSERT_EQ(system(("rm -rf " + layout.anchors_dir + " " + layout.certs_dir + "/copied.crt " +
                    layout.certs_dir + "/custom-ca.pem " + layout.certs_dir +
                    "/sandboxing-egress-ca.pem " + layout.certs_dir + "/*red.pem")
                       .c_str()),
            0);
  EXPECT_TRUE(HostExtraCas(layout).empty());
  layout.certs_dir = base + "/missing";
  EXPECT_TRUE(HostExtraCas(layout).empty());
  (void)!system(("rm -rf " + base).c_str());
}

}  // namespace
}  // namespace lazaret::cli::doctor
