#include "services/sessiond/session/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/session/dry_run.h"
#include "services/sessiond/session/plan_test_inputs.h"
#include "services/sessiond/session/terminfo.h"
#include "tests/support/git_test_util.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;
using test_plan::Has;
using test_plan::Inputs;
using test_plan::kInitMount;
using test_plan::MountFlags;
using test_plan::PlainProfile;
using test_plan::ProfileWithVolumes;
using test_plan::RepoGitPlan;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SidecarArgvTest, RuncNetAdminOnlyReadOnlyScratchImage) {
  auto a = SidecarArgv({"0123456789ab", "p1", "/rt", "/rt/sessions/0123456789ab/router",
                        "localhost/lazaret-sidecar:current", false, "/usr/bin/runc", ""});
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
  EXPECT_TRUE(Has(*a, std::string("--entrypoint=") + gitshadow::kSandboxInitPath));
  EXPECT_TRUE(Has(
      *a, std::string("--volume=/b/lazaret-sandbox-init:") + gitshadow::kSandboxInitPath + ":ro"));
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
  return {"0123456789ab", "p1",     "/rt",          "/rt/sessions/0123456789ab/router",
          "img",          rootless, "/usr/bin/runc", ""};
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
      }
      // The one sysctl: the sidecar's router binds port 53 unprivileged.
      if (argv == &sidecar) {
        EXPECT_THAT(Values(*argv, "--sysctl"),
                    ElementsAre("net.ipv4.ip_unprivileged_port_start=53"));
      } else {
        EXPECT_THAT(Values(*argv, "--sysctl"), ElementsAre());
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
  EXPECT_THAT(Values(a, "--network"),
              ElementsAre("slirp4netns:allow_host_loopback=false,enable_ipv6=true"));
  EXPECT_TRUE(Has(a, "--read-only"));
}

TEST(SidecarArgvTest, RouterIsTheOnlyResolverAndMayBindPort53) {
  for (bool rootless : {false, true}) {
    const std::vector<std::string> a = SidecarArgv(Sidecar(rootless));
    EXPECT_THAT(Values(a, "--dns"), ElementsAre("127.0.0.1"));
    EXPECT_THAT(Values(a, "--dns-search"), ElementsAre());
    EXPECT_THAT(Values(a, "--dns-option"), ElementsAre("timeout:30", "attempts:4"));
    EXPECT_THAT(Values(a, "--sysctl"), ElementsAre("net.ipv4.ip_unprivileged_port_start=53"));
    // The capability set stays NET_ADMIN alone: no NET_BIND_SERVICE for 53.
    EXPECT_THAT(Values(a, "--cap-add"), ElementsAre("NET_ADMIN"));
  }
}

TEST(PlanSessionTest, WorkspaceWithoutARepositoryIsTheOnlyMountBesidesSandboxInit) {
  auto plan = PlanSession(Inputs(), PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(MountFlags(plan->sandbox_argv),
              ElementsAre("--volume=/home/dev/proj:/workspace:rw,z", kInitMount));
  EXPECT_EQ(plan->workspace_host_dir, "/home/dev/proj");
  EXPECT_TRUE(plan->env.empty());
  EXPECT_TRUE(plan->persistent.empty());
  auto image = std::find(plan->sandbox_argv.begin(), plan->sandbox_argv.end(),
                         "localhost/lazaret-sandbox:trixie");
  ASSERT_NE(image, plan->sandbox_argv.end());
  EXPECT_THAT(std::vector<std::string>(image + 1, plan->sandbox_argv.end()),
              ElementsAre("--", "make", "test"));
  // The sidecar mounts only the session's router directory.
  EXPECT_THAT(MountFlags(plan->sidecar_argv),
              ElementsAre("--volume=/rt/sessions/0123456789ab/router:/run/lazaret/router:rw,z"));
}

TEST(PlanSessionTest, CompleteMountListInTableOrder) {
  PlanInputs in = Inputs();
  // Two held views (out of order: the plan sorts them) and a unit too large
  // to copy, bound read-only from the host.
  in.held_mounts = {
      BindMount{"/rt/sessions/0123456789ab/held/view/sub/.envrc", "/workspace/sub/.envrc", false,
                false},
      BindMount{"/rt/sessions/0123456789ab/held/view/.claude", "/workspace/.claude", false, false},
      BindMount{"/home/dev/proj/.direnv", "/workspace/.direnv", true, false},
  };
  in.terminal.tty = true;
  in.terminal.term = "xterm-kitty";
  in.terminal.terminfo = TerminfoEntry{"xterm-kitty", "/usr/share/terminfo/x/xterm-kitty",
                                       "/run/lazaret/terminfo/x/xterm-kitty"};
  auto plan = PlanSession(in, ProfileWithVolumes(), RepoGitPlan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(
      MountFlags(plan->sandbox_argv),
      ElementsAre(
          // The workspace, then the Git Shadow's mounts in its order.
          "--volume=/home/dev/proj:/workspace:rw,z",
          "--mount=type=tmpfs,destination=/workspace/.git,tmpfs-mode=0755",
          "--volume=/home/dev/proj/.git:/run/lazaret/git:ro,z",
          "--volume=/data/p1/git/k/session:/run/lazaret/git-session:rw,z",
          "--volume=/data/p1/git/k/objects:/workspace/.git/objects:rw,z",
          // The held views, a parent before a child, never the host's file
          // read-write.
          "--volume=/rt/sessions/0123456789ab/held/view/.claude:/workspace/.claude:rw",
          "--volume=/home/dev/proj/.direnv:/workspace/.direnv:ro",
          "--volume=/rt/sessions/0123456789ab/held/view/sub/.envrc:/workspace/sub/.envrc:rw",
          // The profile's volumes with their access and SELinux label.
          "--volume=/srv/datasets:/data:ro,z", "--volume=/home/dev/cache:/cache:rw,Z",
          // Its persistent directories.
          "--volume=/data/p1/root%2F.cache_merged:/root/.cache:rw,z",
          "--volume=/data/p1/opt%2Ftools_merged:/opt/tools:rw,z",
          // The host's terminfo entry, read-only.
          "--volume=/usr/share/terminfo/x/xterm-kitty:/run/lazaret/terminfo/x/xterm-kitty:ro",
          kInitMount));
  ASSERT_EQ(plan->persistent.size(), 2u);
  EXPECT_EQ(plan->persistent[0].host, "/data/p1/root%2F.cache_merged");
  EXPECT_EQ(plan->persistent[1].container, "/opt/tools");
  auto image = std::find(plan->sandbox_argv.begin(), plan->sandbox_argv.end(),
                         "localhost/lazaret-sandbox:trixie");
  ASSERT_NE(image, plan->sandbox_argv.end());
  EXPECT_THAT(std::vector<std::string>(image + 1, plan->sandbox_argv.end()),
              ElementsAre("--git-dir=/workspace/.git", "--git-shadow=/run/lazaret/git", "--",
                          "make", "test"));
}

TEST(PlanSessionTest, WorktreeModeMountsTheAgentWorktreeAtWorkspace) {
  gitshadow::GitShadowPlan git = RepoGitPlan();
  git.workspace_host_dir = "/data/p1/git/k/worktrees/agent";
  PlanInputs in = Inputs();
  auto plan = PlanSession(in, PlainProfile(), git);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workspace_host_dir, "/data/p1/git/k/worktrees/agent");
  EXPECT_EQ(MountFlags(plan->sandbox_argv)[0],
            "--volume=/data/p1/git/k/worktrees/agent:/workspace:rw,z");
  // No IDE directory is masked any more: the held views replace the masks.
  for (const std::string& f : MountFlags(plan->sandbox_argv)) {
    EXPECT_FALSE(absl::StrContains(f, "/workspace/.vscode") ||
                 absl::StrContains(f, "/workspace/.idea"))
        << f;
  }
}

TEST(PlanSessionTest, HeldViewsReplaceEarlierOnesAfterTheGitShadowMounts) {
  auto plan = PlanSession(Inputs(), PlainProfile(), RepoGitPlan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const size_t before = MountFlags(plan->sandbox_argv).size();
  ASSERT_TRUE(UseHeldMounts({BindMount{"/rt/v/.vscode", "/workspace/.vscode", false, false},
                             BindMount{"/rt/v/.envrc", "/workspace/.envrc", false, false}},
                            &*plan)
                  .ok());
  ASSERT_TRUE(
      UseHeldMounts({BindMount{"/rt/v/.claude", "/workspace/.claude", false, false}}, &*plan)
          .ok());
  std::vector<std::string> flags = MountFlags(plan->sandbox_argv);
  ASSERT_EQ(flags.size(), before + 1);
  EXPECT_EQ(flags[5], "--volume=/rt/v/.claude:/workspace/.claude:rw");
  EXPECT_FALSE(Has(plan->sandbox_argv, "--volume=/rt/v/.vscode:/workspace/.vscode:rw"));
  // Only below /workspace, and only what podman's -v can carry.
  EXPECT_FALSE(UseHeldMounts({BindMount{"/rt/v/x", "/etc/x", false, false}}, &*plan).ok());
  EXPECT_FALSE(
      UseHeldMounts({BindMount{"/rt/v/h", "/workspace/.git/hooks", false, false}}, &*plan).ok());
  EXPECT_FALSE(
      UseHeldMounts({BindMount{"/rt/v/a:b", "/workspace/a:b", false, false}}, &*plan).ok());
}

TEST(PlanSessionTest, EnvFileOrderIsTerminalProfileThenGitShadow) {
  PlanInputs in = Inputs();
  in.terminal.tty = true;
  in.terminal.term = "xterm-256color";
  in.terminal.terminfo = TerminfoEntry{"xterm-256color", "/usr/share/terminfo/x/xterm-256color",
                                       "/run/lazaret/terminfo/x/xterm-256color"};
  in.profile_env = {{"TERM", "dumb", true}, {"TOKEN", "s3cret", true}};
  auto plan = PlanSession(in, PlainProfile(), RepoGitPlan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> lines;
  for (const auto& e : plan->env) lines.push_back(absl::StrCat(e.name, "=", e.value));
  EXPECT_THAT(lines, ElementsAre("TERM=xterm-256color", "TERMINFO=/run/lazaret/terminfo",
                                 "TERM=dumb", "TOKEN=s3cret", "GIT_CONFIG_COUNT=1"));
  EXPECT_TRUE(Has(plan->sandbox_argv, "--tty"));
  EXPECT_TRUE(Has(plan->sandbox_argv, "--env-file=/rt/sessions/0123456789ab/env"));
  // No entry on the host: TERM only, and nothing bound for it.
  in.terminal.terminfo.reset();
  auto bare = PlanSession(in, PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(bare.ok()) << bare.status();
  ASSERT_FALSE(bare->env.empty());
  EXPECT_EQ(bare->env[0].name, "TERM");
  EXPECT_EQ(bare->env[1].name, "TERM");
  EXPECT_THAT(MountFlags(bare->sandbox_argv),
              ElementsAre("--volume=/home/dev/proj:/workspace:rw,z", kInitMount));
}

TEST(PlanSessionTest, RefusesWhatCannotBeMountedOrWritten) {
  pb::ResolvedProfile nested = PlainProfile();
  nested.add_persistent_dirs("/usr");
  nested.add_persistent_dirs("/usr/local");
  EXPECT_FALSE(PlanSession(Inputs(), nested, gitshadow::GitShadowPlan{}).ok());
  pb::ResolvedProfile kernel = PlainProfile();
  kernel.add_persistent_dirs("/proc/sys");
  EXPECT_FALSE(PlanSession(Inputs(), kernel, gitshadow::GitShadowPlan{}).ok());
  pb::ResolvedProfile colon = PlainProfile();
  pb::Volume* v = colon.add_volumes();
  v->set_host("/srv/a:b");
  v->set_container("/x");
  EXPECT_FALSE(PlanSession(Inputs(), colon, gitshadow::GitShadowPlan{}).ok());
  PlanInputs newline = Inputs();
  newline.profile_env = {{"A", "x\ny", true}};
  EXPECT_FALSE(PlanSession(newline, PlainProfile(), gitshadow::GitShadowPlan{}).ok());
  PlanInputs long_rt = Inputs();
  long_rt.runtime_dir = "/" + std::string(100, 'r');
  auto plan = PlanSession(long_rt, PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("shorter LAZARET_RUNTIME_DIR"));
}

// Secrets or HTTP rules: the router gets its egress socket, the sandbox the
// CA bundle (for the proxy's CA) even without trust_host_ca, and the
// placeholders after the profile's env; never a value.
TEST(PlanSessionTest, AnEgressProxySessionGetsTheSocketTheBundleAndThePlaceholders) {
  pb::ResolvedProfile secret = PlainProfile();
  secret.set_trust_host_ca(false);
  pb::Secret* s = secret.add_secrets();
  s->set_name("anthropic");
  s->set_sandbox_env("ANTHROPIC_API_KEY");
  PlanInputs in = Inputs();
  in.placeholder_env = {{"ANTHROPIC_API_KEY", "lzs-00112233445566778899aabbccddeeff", true}};
  auto plan = PlanSession(in, secret, gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->sidecar_argv, Contains("--egress-socket=/run/lazaret/router/egress.sock"));
  EXPECT_THAT(plan->sandbox.init_args, Contains(HasSubstr("--ca-bundle=")));
  bool placeholder = false;
  for (const EnvSetting& e : plan->env) {
    if (e.name == "ANTHROPIC_API_KEY") placeholder = e.value == in.placeholder_env[0].value;
  }
  EXPECT_TRUE(placeholder);

  pb::ResolvedProfile rule = PlainProfile();
  rule.add_http_rules()->set_host("registry.npmjs.org");
  auto ruled = PlanSession(Inputs(), rule, gitshadow::GitShadowPlan{});
  ASSERT_TRUE(ruled.ok()) << ruled.status();
  EXPECT_THAT(ruled->sidecar_argv, Contains("--egress-socket=/run/lazaret/router/egress.sock"));

  auto plain = PlanSession(Inputs(), PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->sidecar_argv, Not(Contains(HasSubstr("--egress-socket"))));
}

// The complete plan of a rootful session with a terminal, flag by flag:
// nothing is added or lost without this test changing.
TEST(PlanSessionTest, EveryFlagOfBothContainers) {
  PlanInputs in = Inputs();
  in.terminal.tty = true;
  auto plan = PlanSession(in, PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(
      plan->sidecar_argv,
      ElementsAre("podman", "run", "--detach", "--name=lazaret-0123456789ab-sidecar",
                  "--label=io.lazaret.profile=p1", "--label=io.lazaret.session=0123456789ab",
                  "--label=io.lazaret.role=sidecar", "--label=io.lazaret.runtime-dir=/rt",
                  "--runtime=/usr/bin/runc",
                  "--network=slirp4netns:allow_host_loopback=false,enable_ipv6=true",
                  "--dns=127.0.0.1", "--dns-option=timeout:30", "--dns-option=attempts:4",
                  "--sysctl=net.ipv4.ip_unprivileged_port_start=53",
                  "--read-only", "--read-only-tmpfs=false", "--cap-drop=all", "--cap-add=NET_ADMIN",
                  "--pull=never", "--env-host=false", "--http-proxy=false", "--ipc=private",
                  "--pid=private", "--uts=private", "--cgroupns=private", "--init=false",
                  "--umask=0022", "--shm-size=64m", "--security-opt=no-new-privileges",
                  "--userns=host", "--cgroups=enabled", "--pids-limit=64", "--memory=64m",
                  "--volume=/rt/sessions/0123456789ab/router:/run/lazaret/router:rw,z",
                  "localhost/lazaret-sidecar:current", "--runtime-dir=/run/lazaret/router",
                  "--socket=/run/lazaret/router/router.sock"));
  EXPECT_THAT(
      plan->sandbox_argv,
      ElementsAre("podman", "--runtime-flag=network=host",
                  "--runtime-flag=pod-init-config=/rt/sessions/0123456789ab/trace.json", "run",
                  "--name=lazaret-0123456789ab-sandbox", "--label=io.lazaret.profile=p1",
                  "--label=io.lazaret.session=0123456789ab", "--label=io.lazaret.role=sandbox",
                  "--label=io.lazaret.runtime-dir=/rt", "--runtime=/usr/bin/runsc",
                  "--network=container:lazaret-0123456789ab-sidecar", "--cap-drop=all",
                  "--cap-add=CHOWN,DAC_OVERRIDE,FOWNER,FSETID,KILL,SETGID,SETUID", "--pull=never",
                  "--env-host=false", "--http-proxy=false", "--ipc=private", "--pid=private",
                  "--uts=private", "--cgroupns=private", "--init=false", "--umask=0022",
                  "--shm-size=64m", "--security-opt=no-new-privileges", "--userns=host",
                  "--cgroups=enabled", "--ulimit=nproc=4096:4096", "--pids-limit=4096",
                  "--memory=8g", "--memory-swap=8g", "--log-driver=none", "--interactive", "--tty",
                  "--detach-keys=", "--env-file=/rt/sessions/0123456789ab/env",
                  "--workdir=/workspace", "--volume=/home/dev/proj:/workspace:rw,z", kInitMount,
                  "--entrypoint=/run/lazaret/bin/lazaret-sandbox-init",
                  "localhost/lazaret-sandbox:trixie", "--", "make", "test"));
}

TEST(DryRunTest, SaysWhichPolicyCallGatesTheSandboxAndInWhatOrder) {
  auto plan = PlanSession(Inputs(), PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = DryRunText(*plan, "/rt", [](const std::string&) { return false; });
  EXPECT_THAT(text, Not(HasSubstr("not applied yet")));
  const size_t sidecar = text.find("podman run --detach");
  const size_t attach = text.find(
      "# egress policy: NetPolicyService.AttachSession{0123456789ab} on "
      "/rt/netpolicyd.sock (at most 20 s)");
  const size_t sandbox = text.find("podman --runtime-flag=network=host run");
  const size_t detach = text.find("# then NetPolicyService.DetachSession{0123456789ab}");
  const size_t remove = text.find("podman rm --force --ignore --depend");
  ASSERT_NE(attach, std::string::npos) << text;
  ASSERT_NE(detach, std::string::npos) << text;
  EXPECT_LT(sidecar, attach);
  EXPECT_LT(attach, sandbox);
  EXPECT_LT(remove, detach);
  EXPECT_THAT(text, HasSubstr("on any error the sandbox is not started"));
}

TEST(PlanSessionTest, PersistentSystemDirectoriesRunByTheImagesId) {
  pb::ResolvedProfile p = PlainProfile();
  p.add_persistent_dirs("/usr");
  p.add_persistent_dirs("/etc");
  auto plan = PlanSession(Inputs(), p, gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(MountFlags(plan->sandbox_argv),
              ElementsAre("--volume=/home/dev/proj:/workspace:rw,z",
                          "--volume=/data/p1/usr_merged:/usr:rw,z",
                          "--volume=/data/p1/etc_merged:/etc:rw,z", kInitMount));
  const std::string id(64, 'a');
  ASSERT_TRUE(UseImageId(id, &*plan).ok());
  EXPECT_EQ(plan->sandbox.image, id);
  EXPECT_EQ(plan->sandbox.image_name, "localhost/lazaret-sandbox:trixie");
  EXPECT_THAT(plan->sandbox_argv, Contains(id));
  EXPECT_THAT(plan->sandbox_argv, Not(Contains("localhost/lazaret-sandbox:trixie")));
  // The dry run names the reference and the helper's call before the sandbox.
  const std::string text = DryRunText(*plan, "/rt", [](const std::string&) { return false; });
  const size_t attach = text.find(
      "MountHelperService.AttachSession{0123456789ab, <image id>} on /rt/mount-helper.sock");
  ASSERT_NE(attach, std::string::npos) << text;
  EXPECT_LT(attach, text.find("podman --runtime-flag=network=host run"));
  EXPECT_THAT(text, HasSubstr("# persistent /usr: /data/p1/usr_merged (first use"));
}

TEST(PlanSessionTest, UseImageIdRefusesWhatIsNotAnId) {
  auto plan = PlanSession(Inputs(), PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string> before = plan->sandbox_argv;
  for (const std::string& bad :
       {std::string(63, 'a'), std::string(64, 'A'), std::string("sha256:") + std::string(57, 'a'),
        std::string(), std::string(63, 'a') + "\n"}) {
    EXPECT_FALSE(UseImageId(bad, &*plan).ok()) << bad;
  }
  EXPECT_EQ(plan->sandbox_argv, before);
}

TEST(DryRunTest, NoPersistentDirectoriesNoMountHelper) {
  auto plan = PlanSession(Inputs(), PlainProfile(), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(DryRunText(*plan, "/rt", [](const std::string&) { return false; }),
              Not(HasSubstr("MountHelperService")));
}

// With a real repository and the real Git Shadow planner: the complete
// mount list of a session on a git workspace, each mount with its access.
TEST(PlanSessionTest, RealRepositoryCompleteMountList) {
  test::TempDir tmp("laz-plan");
  const std::string ws = tmp.path() + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  test::HostGit(ws, "init -q");
  test::HostGit(ws, "commit -q --allow-empty -m one");
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(ws.c_str(), resolved), nullptr);
  const std::string top = resolved;
  gitshadow::GitShadowRequest req;
  req.workspace_dir = top;
  req.profile = "p1";
  req.state_dir = tmp.path() + "/p1/git";
  auto git = gitshadow::PlanGitShadow(req);
  ASSERT_TRUE(git.ok()) << git.status();
  ASSERT_TRUE(git->has_repo);
  pb::ResolvedProfile profile = PlainProfile();
  profile.set_profile_dir(tmp.path() + "/p1");
  auto plan = PlanSession(Inputs(top), profile, *git);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string s = git->write_back.repo_state_dir;
  const std::string common = git->write_back.host_common_dir;
  EXPECT_THAT(
      MountFlags(plan->sandbox_argv),
      ElementsAre(
          absl::StrCat("--volume=", top, ":/workspace:rw,z"),
          "--mount=type=tmpfs,destination=/workspace/.git,tmpfs-mode=0755",
          absl::StrCat("--volume=", common, ":/run/lazaret/git:ro,z"),
          absl::StrCat("--volume=", s, "/session:/run/lazaret/git-session:rw,z"),
          absl::StrCat("--volume=", common, "/refs:/workspace/.git/refs:ro,z"),
          absl::StrCat("--volume=", s, "/refs:/workspace/.git/refs/heads/lazaret:rw,z"),
          absl::StrCat("--volume=", common, "/logs/refs:/workspace/.git/logs/refs:ro,z"),
          absl::StrCat("--volume=", s, "/logs:/workspace/.git/logs/refs/heads/lazaret:rw,z"),
          absl::StrCat("--volume=", s, "/objects:/workspace/.git/objects:rw,z"), kInitMount));
}

}  // namespace
}  // namespace lazaret::cli::session
