#include "services/sessiond/session/podman.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "services/configd/toml.h"

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;

template <typename View>
std::vector<std::string> Strings(const View& n) {
  std::vector<std::string> out;
  const toml::array* a = n.as_array();
  if (a == nullptr) return {"<not an array>"};
  for (const toml::node& e : *a) out.push_back(e.value_or(std::string("<not a string>")));
  return out;
}

// Each key a user's containers.conf could use to widen a container is set
// in Lazaret's file, to the value Lazaret wants; the file is valid TOML.
TEST(ContainersConfTest, SetsEveryWideningKeyExplicitly) {
  const std::string text = ContainersConfText("/rt/podman/hooks.d");
  toml::parse_result parsed = toml::parse(text);
  ASSERT_TRUE(parsed) << parsed.error().description();
  toml::table& t = parsed.table();
  const auto c = t["containers"];
  for (const char* empty : {"annotations", "default_sysctls", "default_ulimits", "devices",
                            "dns_options", "dns_searches", "dns_servers", "volumes"}) {
    EXPECT_THAT(Strings(c[empty]), ElementsAre()) << empty;
  }
  EXPECT_THAT(Strings(c["default_capabilities"]),
              ElementsAre("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"));
  EXPECT_THAT(Strings(c["env"]),
              ElementsAre("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  EXPECT_EQ(c["env_host"].value_or(true), false);
  EXPECT_EQ(c["http_proxy"].value_or(true), false);
  EXPECT_EQ(c["init"].value_or(true), false);
  for (const char* ns : {"ipcns", "pidns", "utsns", "cgroupns", "netns"}) {
    EXPECT_EQ(c[ns].value_or(std::string()), "private") << ns;
  }
  EXPECT_EQ(c["userns"].value_or(std::string()), "host");
  EXPECT_EQ(c["cgroups"].value_or(std::string()), "enabled");
  EXPECT_EQ(c["umask"].value_or(std::string()), "0022");
  EXPECT_EQ(c["base_hosts_file"].value_or(std::string("x")), "");
  // seccomp_profile and apparmor_profile unset: podman's defaults.
  EXPECT_FALSE(c["seccomp_profile"]);
  EXPECT_FALSE(c["apparmor_profile"]);
  const auto e = t["engine"];
  EXPECT_THAT(Strings(e["hooks_dir"]), ElementsAre("/rt/podman/hooks.d"));
  EXPECT_THAT(Strings(e["env"]), ElementsAre());
  EXPECT_THAT(Strings(e["network_cmd_options"]), ElementsAre());
  EXPECT_EQ(e["no_pivot_root"].value_or(true), false);
  // No runtime table: both runtimes are passed by absolute path.
  EXPECT_FALSE(e["runtimes"]);
}

TEST(ContainersConfTest, HooksDirIsQuotedAsATomlString) {
  toml::parse_result parsed = toml::parse(ContainersConfText("/r\"t\\x/hooks.d"));
  ASSERT_TRUE(parsed) << parsed.error().description();
  EXPECT_THAT(Strings(parsed.table()["engine"]["hooks_dir"]), ElementsAre("/r\"t\\x/hooks.d"));
}

TEST(ContainersConfTest, InstallWritesTheFileAndPointsPodmanAtIt) {
  char tmpl[] = "/tmp/lazaret-podman-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string rt = tmpl;
  auto path = InstallContainersConf(rt);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, ContainersConfPath(rt));
  EXPECT_STREQ(std::getenv("CONTAINERS_CONF"), path->c_str());
  std::ifstream in(*path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), ContainersConfText(rt + "/podman/hooks.d"));
  // Again (a second session): replaced, not appended to.
  ASSERT_TRUE(InstallContainersConf(rt).ok());
  (void)!std::system(("rm -rf " + rt).c_str());
}

TEST(ContainerLinesTest, ParsesPodmanTemplateOutput) {
  auto c = ParseContainerLines(
      "abc\tlazaret-0123456789ab-sidecar\trunning\t1700000000\t0123456789ab\tp1\tsidecar\t/rt\n"
      "garbage line\n");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].role, "sidecar");
  EXPECT_EQ(c[0].created_unix, 1700000000);
  EXPECT_EQ(c[0].runtime_dir, "/rt");
}

}  // namespace
}  // namespace lazaret::cli::session
