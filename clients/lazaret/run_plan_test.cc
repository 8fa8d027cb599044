#include "clients/lazaret/run_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "clients/lazaret/git_shadow.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::config::v1;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(ParseRunArgsTest, NoArgumentsIsTheDefaultProfileAndTheShell) {
  auto a = ParseRunArgs({}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "");
  EXPECT_TRUE(a->command.empty());
}

TEST(ParseRunArgsTest, DoubleDashKeepsTheDefaultProfile) {
  auto a = ParseRunArgs({"--", "sh", "-c", "exit 7"}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "");
  EXPECT_THAT(a->command, ElementsAre("sh", "-c", "exit 7"));
}

TEST(ParseRunArgsTest, FirstPositionalIsAlwaysTheProfile) {
  auto a = ParseRunArgs({"claude-code"}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "claude-code");
  EXPECT_TRUE(a->command.empty());
  auto b = ParseRunArgs({"p1", "bash", "-l"}, "/w");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->profile, "p1");
  EXPECT_THAT(b->command, ElementsAre("bash", "-l"));
  auto c = ParseRunArgs({"p1", "--", "--version"}, "/w");
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->command, ElementsAre("--version"));
}

TEST(ParseRunArgsTest, OptionsOnlyBeforeTheProfile) {
  auto a = ParseRunArgs(
      {"--config", "x.toml", "--branch=feat", "--worktree", "--dry-run", "p", "ls", "--dry-run"},
      "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->explicit_config, "/w/x.toml");
  EXPECT_EQ(a->branch, "feat");
  EXPECT_TRUE(a->worktree);
  EXPECT_TRUE(a->dry_run);
  EXPECT_EQ(a->profile, "p");
  EXPECT_THAT(a->command, ElementsAre("ls", "--dry-run"));
}

TEST(ParseRunArgsTest, UnknownOrIncompleteOptionsAreErrors) {
  EXPECT_FALSE(ParseRunArgs({"--bogus"}, "/w").ok());
  EXPECT_FALSE(ParseRunArgs({"--config"}, "/w").ok());
  EXPECT_FALSE(ParseRunArgs({"--branch="}, "/w").ok());
}

pb::ResolvedProfile ProfileWithEnv() {
  pb::ResolvedProfile p;
  p.set_name("p1");
  auto* a = p.add_env();
  a->set_name("LIT");
  a->set_literal("hello world=1");
  auto* b = p.add_env();
  b->set_name("TOKEN");
  b->set_host_var("HOST_TOKEN");
  return p;
}

TEST(ResolveProfileEnvTest, LiteralsAndHostVariablesAreSecret) {
  auto env = ResolveProfileEnv(ProfileWithEnv(), [](const std::string& n) {
    return n == "HOST_TOKEN" ? std::optional<std::string>("s3cret") : std::nullopt;
  });
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_EQ(env->size(), 2u);
  EXPECT_EQ((*env)[0].value, "hello world=1");
  EXPECT_EQ((*env)[1].value, "s3cret");
  EXPECT_TRUE((*env)[0].secret);
  EXPECT_TRUE((*env)[1].secret);
}

TEST(ResolveProfileEnvTest, UnsetOrEmptyHostVariableIsRefusedNamingKeyAndVariable) {
  auto unset = ResolveProfileEnv(ProfileWithEnv(), [](const std::string&) { return std::nullopt; });
  ASSERT_FALSE(unset.ok());
  EXPECT_THAT(std::string(unset.status().message()), HasSubstr("profiles.p1.env.TOKEN"));
  EXPECT_THAT(std::string(unset.status().message()), HasSubstr("HOST_TOKEN is not set"));
  auto empty = ResolveProfileEnv(ProfileWithEnv(),
                                 [](const std::string&) { return std::optional<std::string>(""); });
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("HOST_TOKEN is empty"));
}

TEST(EnvFileTextTest, RefusesWhatAnEnvFileCannotCarry) {
  EXPECT_EQ(*EnvFileText({{"A", "1 2", false}, {"B", "x=y", true}}), "A=1 2\nB=x=y\n");
  EXPECT_FALSE(EnvFileText({{"A", "line1\nline2", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"A", "cr\r", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"1A", "x", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"#A", "x", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"", "x", true}}).ok());
}

TEST(PersistentDirsTest, BindsAnEscapedDirectoryPerPath) {
  google::protobuf::RepeatedPtrField<std::string> dirs;
  dirs.Add("/root/.cache");
  dirs.Add("/opt/tool dir");
  auto m = PlanPersistentDirs("/data/p1", dirs);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0].host, "/data/p1/persist/root%2F.cache");
  EXPECT_EQ((*m)[0].container, "/root/.cache");
  EXPECT_FALSE((*m)[0].read_only);
  EXPECT_EQ((*m)[1].host, "/data/p1/persist/opt%2Ftool%20dir");
}

TEST(PersistentDirsTest, RefusesPathsAnEmptyBindWouldBreak) {
  for (const char* bad : {"/usr", "/etc", "/", "/workspace", "/workspace/x", "/run/lazaret/git",
                          "/proc/x", "relative", "/a/../b"}) {
    google::protobuf::RepeatedPtrField<std::string> dirs;
    dirs.Add(bad);
    EXPECT_FALSE(PlanPersistentDirs("/data/p1", dirs).ok()) << bad;
  }
}

TEST(EscapePersistentPathTest, IsInjective) {
  EXPECT_NE(EscapePersistentPath("/a/b"), EscapePersistentPath("/a%2Fb"));
  EXPECT_NE(EscapePersistentPath("/a_b"), EscapePersistentPath("/a/b"));
}

TEST(MountArgsTest, BindAndTmpfs) {
  EXPECT_THAT(*MountArgs(BindMount{"/h/ws", "/workspace", false, true}),
              ElementsAre("--volume=/h/ws:/workspace:rw,z"));
  EXPECT_THAT(*MountArgs(BindMount{"/h/x", "/x", true, false, true}),
              ElementsAre("--volume=/h/x:/x:ro,Z"));
  EXPECT_THAT(*MountArgs(TmpfsMount{"/workspace/.git", "0755"}),
              ElementsAre("--mount=type=tmpfs,destination=/workspace/.git,tmpfs-mode=0755"));
  EXPECT_FALSE(MountArgs(BindMount{"/h/a:b", "/x", true, false}).ok());
  EXPECT_FALSE(MountArgs(BindMount{"rel", "/x", true, false}).ok());
  EXPECT_FALSE(MountArgs(BindMount{"/h", "/x/../y", true, false}).ok());
  EXPECT_FALSE(MountArgs(TmpfsMount{"/a,b", "0755"}).ok());
}

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

TEST(SidecarArgvTest, RuncNetAdminOnlyReadOnlyScratchImage) {
  auto a = SidecarArgv({"0123456789ab", "p1", "/rt", "/rt/sessions/0123456789ab/router",
                        "localhost/lazaret-sidecar:current", false, "/usr/bin/runc"});
  EXPECT_TRUE(Has(a, "--runtime=/usr/bin/runc"));
  EXPECT_TRUE(Has(a, "--cap-drop=all"));
  EXPECT_TRUE(Has(a, "--cap-add=NET_ADMIN"));
  EXPECT_TRUE(Has(a, "--read-only"));
  EXPECT_TRUE(Has(a, "--http-proxy=false"));
  EXPECT_TRUE(Has(a, "--pull=never"));
  EXPECT_TRUE(Has(a, "--name=lazaret-0123456789ab-sidecar"));
  EXPECT_TRUE(Has(a, "--label=io.lazaret.role=sidecar"));
  EXPECT_TRUE(Has(a, "--label=io.lazaret.session=0123456789ab"));
  EXPECT_TRUE(Has(a, "--label=io.lazaret.profile=p1"));
  EXPECT_TRUE(Has(a, "--volume=/rt/sessions/0123456789ab/router:/run/lazaret/router:rw,z"));
  EXPECT_EQ(a.back(), "--socket=/run/lazaret/router/router.sock");
}

SandboxSpec Spec(bool rootless, bool tty) {
  SandboxSpec s;
  s.session_id = "0123456789ab";
  s.profile = "p1";
  s.runtime_dir = "/rt";
  s.image = "localhost/lazaret-sandbox:trixie";
  s.runsc_path = "/usr/bin/runsc";
  s.rootless = rootless;
  s.tty = tty;
  s.env_file = "/rt/sessions/0123456789ab/env";
  s.mounts = {BindMount{"/h/ws", "/workspace", false, true}};
  s.sandbox_init_host = "/b/lazaret-sandbox-init";
  s.init_args = {"--git-dir=/workspace/.git"};
  s.command = {"sh", "-c", "exit 7"};
  return s;
}

TEST(SandboxArgvTest, GvisorFlagsAreDeliberate) {
  auto rootful = SandboxArgv(Spec(false, true));
  ASSERT_TRUE(rootful.ok());
  EXPECT_EQ((*rootful)[1], "--runtime-flag=network=host");
  EXPECT_EQ((*rootful)[2], "run");
  EXPECT_TRUE(Has(*rootful, "--runtime=/usr/bin/runsc"));
  EXPECT_TRUE(Has(*rootful, "--network=container:lazaret-0123456789ab-sidecar"));
  EXPECT_TRUE(Has(*rootful, "--cap-drop=all"));
  EXPECT_TRUE(Has(*rootful, "--security-opt=no-new-privileges"));
  EXPECT_TRUE(Has(*rootful, "--http-proxy=false"));
  EXPECT_TRUE(Has(*rootful, "--pids-limit=4096"));
  EXPECT_TRUE(Has(*rootful, "--tty"));
  EXPECT_TRUE(Has(*rootful, "--env-file=/rt/sessions/0123456789ab/env"));
  EXPECT_FALSE(Has(*rootful, "--runtime-flag=ignore-cgroups"));
  for (const auto& a : *rootful) {
    EXPECT_THAT(a, Not(HasSubstr("host-uds")));
    EXPECT_THAT(a, Not(HasSubstr("net-raw")));
    EXPECT_THAT(a, Not(HasSubstr("runc")));
  }
  auto rootless = SandboxArgv(Spec(true, false));
  ASSERT_TRUE(rootless.ok());
  EXPECT_TRUE(Has(*rootless, "--runtime-flag=ignore-cgroups"));
  EXPECT_FALSE(Has(*rootless, "--tty"));
  EXPECT_FALSE(Has(*rootless, "--pids-limit=4096"));
  // The task limit gVisor enforces itself holds in both modes.
  EXPECT_TRUE(Has(*rootful, "--ulimit=nproc=4096:4096"));
  EXPECT_TRUE(Has(*rootless, "--ulimit=nproc=4096:4096"));
}

TEST(SandboxArgvTest, EntrypointIsSandboxInitThenInitArgsThenCommand) {
  auto a = SandboxArgv(Spec(false, false));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(Has(*a, std::string("--entrypoint=") + kSandboxInitPath));
  EXPECT_TRUE(Has(*a, std::string("--volume=/b/lazaret-sandbox-init:") + kSandboxInitPath + ":ro"));
  auto image = std::find(a->begin(), a->end(), "localhost/lazaret-sandbox:trixie");
  ASSERT_NE(image, a->end());
  EXPECT_THAT(std::vector<std::string>(image + 1, a->end()),
              ElementsAre("--git-dir=/workspace/.git", "--", "sh", "-c", "exit 7"));
}

// The values of every flag in `argv` spelled --NAME=VALUE (or --NAME).
std::vector<std::string> Values(const std::vector<std::string>& argv, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& a : argv) {
    if (a == name) out.push_back("");
    if (a.rfind(name + "=", 0) == 0) out.push_back(a.substr(name.size() + 1));
  }
  return out;
}

SidecarSpec Sidecar(bool rootless) {
  return {"0123456789ab", "p1",     "/rt", "/rt/sessions/0123456789ab/router",
          "img",          rootless, "/usr/bin/runc"};
}

TEST(SandboxArgvTest, CapabilitiesAreExactlyTheDeclaredListAddedToAnEmptySet) {
  for (bool rootless : {false, true}) {
    auto a = SandboxArgv(Spec(rootless, false));
    ASSERT_TRUE(a.ok());
    // Podman applies --cap-drop=all first, then the adds: whatever
    // default_capabilities a containers.conf lists, the set is this one.
    EXPECT_THAT(Values(*a, "--cap-drop"), ElementsAre("all"));
    EXPECT_THAT(Values(*a, "--cap-add"),
                ElementsAre("CHOWN,DAC_OVERRIDE,FOWNER,FSETID,KILL,SETGID,SETUID"));
    EXPECT_THAT(Values(*a, "--privileged"), ElementsAre());
    auto s = SidecarArgv(Sidecar(rootless));
    EXPECT_THAT(Values(s, "--cap-drop"), ElementsAre("all"));
    EXPECT_THAT(Values(s, "--cap-add"), ElementsAre("NET_ADMIN"));
  }
}

TEST(SandboxArgvTest, BothContainersPinWhatAContainersConfCouldChange) {
  for (bool rootless : {false, true}) {
    auto sandbox = SandboxArgv(Spec(rootless, false));
    ASSERT_TRUE(sandbox.ok());
    const std::vector<std::string> sidecar = SidecarArgv(Sidecar(rootless));
    for (const std::vector<std::string>* argv :
         std::vector<const std::vector<std::string>*>{&*sandbox, &sidecar}) {
      SCOPED_TRACE(rootless ? "rootless" : "rootful");
      EXPECT_THAT(Values(*argv, "--env-host"), ElementsAre("false"));
      EXPECT_THAT(Values(*argv, "--http-proxy"), ElementsAre("false"));
      EXPECT_THAT(Values(*argv, "--ipc"), ElementsAre("private"));
      EXPECT_THAT(Values(*argv, "--pid"), ElementsAre("private"));
      EXPECT_THAT(Values(*argv, "--uts"), ElementsAre("private"));
      EXPECT_THAT(Values(*argv, "--cgroupns"), ElementsAre("private"));
      EXPECT_THAT(Values(*argv, "--userns"), ElementsAre("host"));
      EXPECT_THAT(Values(*argv, "--init"), ElementsAre("false"));
      EXPECT_THAT(Values(*argv, "--umask"), ElementsAre("0022"));
      EXPECT_THAT(Values(*argv, "--shm-size"), ElementsAre("64m"));
      EXPECT_THAT(Values(*argv, "--pull"), ElementsAre("never"));
      EXPECT_TRUE(Has(*argv, "--security-opt=no-new-privileges"));
      // No seccomp or AppArmor override: podman's default profile applies
      // (Lazaret's containers.conf names none).
      for (const auto& a : *argv) {
        EXPECT_THAT(a, Not(HasSubstr("unconfined")));
        EXPECT_THAT(a, Not(HasSubstr("--device")));
        EXPECT_THAT(a, Not(HasSubstr("--sysctl")));
      }
      if (rootless) {
        EXPECT_THAT(Values(*argv, "--cgroups"), ElementsAre());
      } else {
        EXPECT_THAT(Values(*argv, "--cgroups"), ElementsAre("enabled"));
      }
    }
  }
}

TEST(SidecarArgvTest, RuntimeByPathAndNoHostLoopback) {
  const std::vector<std::string> a = SidecarArgv(Sidecar(false));
  EXPECT_THAT(Values(a, "--runtime"), ElementsAre("/usr/bin/runc"));
  EXPECT_THAT(Values(a, "--network"), ElementsAre("slirp4netns:allow_host_loopback=false"));
  EXPECT_TRUE(Has(a, "--read-only"));
}

}  // namespace
}  // namespace lazaret::cli
