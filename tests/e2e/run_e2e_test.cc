// `lazaret run` end to end: the real CLI drives real podman, runsc (gVisor)
// and runc; every outcome is checked from the host (podman inspect, /proc of
// the container processes, files, the runtime directory). The same tests run
// rootful (as root) and rootless (as the test user run_fixture.sh creates),
// chosen by LAZARET_E2E_MODE; the images and `lazaret up` come from ctest
// fixtures (tests/e2e/CMakeLists.txt). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSandboxImage[] = "localhost/lazaret-sandbox:trixie";
constexpr char kSidecarImage[] = "localhost/lazaret-sidecar:current";
constexpr char kEgressNotice[] = "egress policy enforcement is not applied yet";

std::string ProbeBinary() { return test::Binary("lazaret_raw_socket_probe"); }

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

std::string ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return Trim(line.substr(field.size() + 1).erase(0, 1));
  }
  return "";
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// No process of the session is left: podman, runsc, the router. podman's
// own monitor (conmon) runs its exit command and leaves on its own about
// 1.5 s after the container is gone, with or without Lazaret; it gets 10 s.
void ExpectNoProcessesOf(const std::string& id) {
  test::WaitFor([&] { return ProcessesWith("lazaret-" + id).empty(); }, std::chrono::seconds(10));
  for (const auto& argv : ProcessesWith("lazaret-" + id)) {
    ADD_FAILURE() << "left running: " << testing::PrintToString(argv);
  }
}

class RunE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ws_ = std::make_unique<UserDir>("ws");
    aux_ = std::make_unique<UserDir>("aux");
  }
  void TearDown() override {
    // Nothing of this test may outlive it, whatever happened.
    EXPECT_TRUE(SessionContainers().empty()) << "containers left behind";
    EXPECT_TRUE(SessionDirs().empty()) << "session directories left behind";
  }

  CommandResult Run(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& extra = {}) {
    return Lazaret(ws_->path(), args, extra);
  }

  // A --config file with one profile "t1" on the default image.
  std::string Config(const std::string& profile_body) {
    return aux_->Write("t1.toml", "[profiles.t1]\nimage = \"" + std::string(kSandboxImage) +
                                      "\"\n" + profile_body);
  }

  std::unique_ptr<UserDir> ws_;
  std::unique_ptr<UserDir> aux_;
};

TEST_F(RunE2eTest, CommandExitCodeIsLazaretsExitCode) {
  EXPECT_EQ(Run({"run", "--", "true"}).exit_code, 0);
  EXPECT_EQ(Run({"run", "--", "false"}).exit_code, 1);
  CommandResult seven = Run({"run", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7) << seven.err;
  EXPECT_THAT(seven.err, HasSubstr(kEgressNotice));  // never silent
  CommandResult missing = Run({"run", "--", "no-such-command-here"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
}

TEST_F(RunE2eTest, OutputIsProducedInsideGvisor) {
  CommandResult r = Run({"run", "--", "sh", "-c", "dmesg | head -n 1; cat /proc/version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Starting gVisor"));
  // gVisor reports its own fixed kernel version, never the host's.
  EXPECT_THAT(r.out, Not(HasSubstr(Trim(test::Run({"uname", "-r"}).out))));
}

// bookworm's runsc (20221219) fails statx(AT_NO_AUTOMOUNT), which coreutils
// always passes: `ls -l` and `stat` then fail inside every Debian image.
// deploy/setup-host.sh installs the bookworm-backports runsc, which works.
TEST_F(RunE2eTest, FileStatusToolsWorkInside) {
  CommandResult r =
      Run({"run", "--", "sh", "-c", "ls -l / >/dev/null && stat -c %n /etc/os-release"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("/etc/os-release"));
}

TEST_F(RunE2eTest, SandboxRunsUnderRunscAndSidecarUnderRuncWithDeliberateFlags) {
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sleep", "120"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  const std::string sandbox = "lazaret-" + id + "-sandbox";
  const std::string sidecar = "lazaret-" + id + "-sidecar";

  // Runtimes.
  EXPECT_THAT(Inspect(sandbox, "{{.OCIRuntime}}"), HasSubstr("runsc"));
  EXPECT_EQ(Inspect(sidecar, "{{.OCIRuntime}}"), "runc");
  // The sandbox lives in the sidecar's network namespace.
  EXPECT_EQ(Inspect(sandbox, "{{.HostConfig.NetworkMode}}"),
            "container:" + Inspect(sidecar, "{{.Id}}"));
  EXPECT_THAT(Inspect(sandbox, "{{.HostConfig.SecurityOpt}}"), HasSubstr("no-new-privileges"));
  EXPECT_THAT(Inspect(sandbox, "{{.HostConfig.CapDrop}}"), HasSubstr("CAP_NET_RAW"));
  if (!IsRootless()) {
    EXPECT_EQ(Inspect(sandbox, "{{.HostConfig.PidsLimit}}"), "4096");
  }
  // Labels on both.
  for (const auto& [name, role] : {std::pair{sandbox, "sandbox"}, std::pair{sidecar, "sidecar"}}) {
    EXPECT_EQ(Inspect(name, "{{index .Config.Labels \"io.lazaret.role\"}}"), role);
    EXPECT_EQ(Inspect(name, "{{index .Config.Labels \"io.lazaret.session\"}}"), id);
    EXPECT_EQ(Inspect(name, "{{index .Config.Labels \"io.lazaret.profile\"}}"), "default");
  }

  // gVisor's flags, from the runsc sandbox process itself.
  const std::string sandbox_id = Inspect(sandbox, "{{.Id}}");
  std::vector<std::string> runsc_argv;
  for (const auto& argv : ProcessesWith(sandbox_id)) {
    if (!argv.empty() && argv[0] == "runsc-sandbox") runsc_argv = argv;
  }
  ASSERT_FALSE(runsc_argv.empty()) << "no runsc-sandbox process for " << sandbox_id;
  EXPECT_TRUE(Contains(runsc_argv, "--network=host"));
  const bool ignore_cgroups =
      std::any_of(runsc_argv.begin(), runsc_argv.end(),
                  [](const std::string& a) { return a.rfind("--ignore-cgroups", 0) == 0; });
  EXPECT_EQ(ignore_cgroups, IsRootless());
  for (const auto& a : runsc_argv) {
    EXPECT_THAT(a, Not(HasSubstr("host-uds")));
    EXPECT_THAT(a, Not(HasSubstr("net-raw")));
  }

  // The sidecar: only NET_ADMIN, no_new_privs, read-only root.
  EXPECT_EQ(Inspect(sidecar, "{{.HostConfig.ReadonlyRootfs}}"), "true");
  EXPECT_EQ(Inspect(sidecar, "{{.EffectiveCaps}}"), "[CAP_NET_ADMIN]");
  const pid_t router = std::stoi(Inspect(sidecar, "{{.State.Pid}}"));
  EXPECT_EQ(test::ProcStatusHex(router, "CapEff"), 0x1000u);
  EXPECT_EQ(test::ProcStatusHex(router, "CapPrm"), 0x1000u);
  EXPECT_EQ(test::ProcStatusHex(router, "CapBnd"), 0x1000u);
  EXPECT_EQ(ProcStatusField(router, "NoNewPrivs"), "1");
  EXPECT_EQ(Trim(test::ReadFile("/proc/" + std::to_string(router) + "/comm")), "lazaret-netrout");

  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM);
}

TEST_F(RunE2eTest, SidecarImageHoldsOnlyTheRouterAndItsLibraries) {
  CommandResult shell = Podman({"run", "--rm", "--pull=never", "--runtime=runc",
                                "--entrypoint=/bin/sh", kSidecarImage, "-c", "true"});
  EXPECT_NE(shell.exit_code, 0);
  EXPECT_THAT(shell.err, HasSubstr("no such file or directory"));
  const std::string name = "lazaret-e2e-export-" + std::to_string(getpid());
  ASSERT_EQ(Podman({"create", "--pull=never", "--name=" + name, kSidecarImage}).exit_code, 0);
  const std::string tar = aux_->path() + "/sidecar.tar";
  CommandResult exported = Podman({"export", "--output=" + tar, name});
  Podman({"rm", name});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  CommandResult list = test::Run({"tar", "-tvf", tar});
  ASSERT_EQ(list.exit_code, 0);
  int files = 0;
  std::istringstream in(list.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == 'd') continue;
    const std::string path = line.substr(line.rfind(' ') + 1);
    ++files;
    const std::string base = path.substr(path.rfind('/') + 1);
    EXPECT_TRUE(path == "lazaret-netrouter" || path == "./lazaret-netrouter" ||
                base.find(".so") != std::string::npos)
        << "unexpected file in the sidecar image: " << line;
    for (const char* shell_name : {"sh", "bash", "dash", "busybox", "ash", "zsh"}) {
      EXPECT_NE(base, shell_name);
    }
  }
  EXPECT_GT(files, 1);
}

TEST_F(RunE2eTest, NoRawOrPacketSocketsInside) {
  const std::string probe = aux_->path() + "/probe";
  ASSERT_EQ(test::Run({"cp", ProbeBinary(), probe}).exit_code, 0);
  const std::string cfg = Config("[[profiles.t1.volumes]]\nhost = \"" + aux_->path() +
                                 "\"\ncontainer = \"/opt/probe\"\nmode = \"ro\"\n");
  CommandResult r = Run({"run", "--config", cfg, "t1", "--", "/opt/probe/probe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* kind : {"raw-icmp", "raw-tcp", "raw-ipv6", "packet-raw", "packet-dgram"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string(kind) + " Operation not permitted")) << r.out;
  }
  EXPECT_THAT(r.out, HasSubstr("tcp OPEN"));
  CommandResult caps = Run({"run", "--", "sh", "-c", "grep CapBnd /proc/self/status"});
  ASSERT_EQ(caps.exit_code, 0);
  const uint64_t bnd = std::stoull(Trim(caps.out.substr(caps.out.find(':') + 1)), nullptr, 16);
  EXPECT_EQ(bnd & (1u << 13), 0u) << "CAP_NET_RAW in the bounding set: " << caps.out;
}

TEST_F(RunE2eTest, EnvLiteralAndHostVariableAreDeliveredAndHostProxiesAreNot) {
  const std::string cfg =
      Config("env = { LIT = \"hello world=1 'q'\", SECRET = \"env:LAZ_E2E_SECRET\" }\n");
  CommandResult r = Run({"run", "--config", cfg, "t1", "--", "sh", "-c",
                         "echo \"[$LIT][$SECRET]\"; env | grep -ci proxy || true"},
                        {{"LAZ_E2E_SECRET", "s3cr3t value"},
                         {"http_proxy", "http://proxy.invalid:3128"},
                         {"HTTPS_PROXY", "http://proxy.invalid:3128"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[hello world=1 'q'][s3cr3t value]"));
  EXPECT_THAT(r.out, HasSubstr("\n0\n"));  // no proxy variable inside
}

TEST_F(RunE2eTest, UnsetOrEmptyHostVariableIsRefusedBeforeAnythingStarts) {
  const std::string cfg = Config("env = { TOKEN = \"env:LAZ_E2E_UNSET\" }\n");
  for (const std::string value : {"", "empty"}) {
    // env -i starts from nothing: "" leaves the variable unset; for the
    // empty case it is set to "" through a wrapper.
    std::vector<std::string> args = {"run", "--config", cfg, "t1", "--", "true"};
    CommandResult r = value.empty() ? Run(args)
                                    : RunAs(ws_->path(), {"sh", "-c", "LAZ_E2E_UNSET= exec \"$@\"",
                                                          "sh", test::Binary("lazaret"), "run",
                                                          "--config", cfg, "t1", "--", "true"});
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_THAT(r.err, HasSubstr("profiles.t1.env.TOKEN"));
    EXPECT_THAT(r.err,
                HasSubstr(value.empty() ? "LAZ_E2E_UNSET is not set" : "LAZ_E2E_UNSET is empty"));
    EXPECT_THAT(r.err, Not(HasSubstr(kEgressNotice)));  // nothing was started
    EXPECT_TRUE(SessionContainers().empty());
    EXPECT_TRUE(SessionDirs().empty());
  }
}

TEST_F(RunE2eTest, SecretsNeverOnACommandLineEnvFileIsPrivateAndRemoved) {
  const std::string secret = "zq-secret-" + std::to_string(getpid()) + "-xy";
  const std::string cfg =
      Config("env = { API_KEY = \"env:LAZ_E2E_SECRET\", LIT = \"" + secret + "-lit\" }\n");
  // --dry-run: the env file by path and names, never values.
  CommandResult dry =
      Run({"run", "--dry-run", "--config", cfg, "t1", "--", "true"}, {{"LAZ_E2E_SECRET", secret}});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, Not(HasSubstr(secret)));
  EXPECT_THAT(dry.out, HasSubstr("API_KEY"));
  EXPECT_THAT(dry.out, HasSubstr("--env-file=" + Env().runtime_dir + "/sessions/"));

  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--config", cfg, "t1", "--", "sleep", "120"},
                                 {{"LAZ_E2E_SECRET", secret}}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  // No process on the host - lazaret, podman, conmon, runsc - has it in argv.
  EXPECT_FALSE(AnyCommandLineContains(secret));
  const std::string env_file = Env().runtime_dir + "/sessions/" + id + "/env";
  struct stat st {};
  ASSERT_EQ(stat(env_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, Env().uid);
  EXPECT_THAT(test::ReadFile(env_file), HasSubstr("API_KEY=" + secret + "\n"));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM);
  EXPECT_FALSE(Exists(env_file));
  EXPECT_THAT(test::ReadFile(log), Not(HasSubstr(secret)));
}

TEST_F(RunE2eTest, DryRunPrintsThePodmanCommandsAndStartsNothing) {
  CommandResult r = Run({"run", "--dry-run", "--", "sh", "-c", "echo hi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("podman run --detach"));
  EXPECT_THAT(r.out, HasSubstr("--runtime=runc"));
  EXPECT_THAT(r.out, HasSubstr("--runtime-flag=network=host"));
  EXPECT_THAT(r.out, HasSubstr("--network=container:lazaret-"));
  EXPECT_THAT(r.out, HasSubstr("--entrypoint=/run/lazaret/bin/lazaret-sandbox-init"));
  EXPECT_THAT(r.out, HasSubstr("-- sh -c 'echo hi'"));
  EXPECT_EQ(r.out.find("--runtime-flag=ignore-cgroups") != std::string::npos, IsRootless());
  EXPECT_TRUE(SessionContainers().empty());
  EXPECT_TRUE(SessionDirs().empty());
}

// tmux as the user's terminal: a terminfo entry the image lacks is bound
// in and works, and a window resize reaches the sandbox.
TEST_F(RunE2eTest, InteractiveTerminalWorksAndFollowsResizes) {
  const std::string sock = "laz-e2e-" + std::to_string(getpid());
  auto tmux = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"tmux", "-L", sock};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::Run(argv);
  };
  auto pane = [&] { return tmux({"capture-pane", "-p", "-J", "-t", "t"}).out; };
  for (const std::string term : {"xterm-kitty", "alacritty"}) {
    SCOPED_TRACE(term);
    std::string line = "cd '" + ws_->path() + "' && exec";
    for (const auto& a : AsMode({test::Binary("lazaret"), "run"}, {{"TERM", term}})) {
      line += " '" + a + "'";
    }
    ASSERT_EQ(tmux({"new-session", "-d", "-s", "t", "-x", "80", "-y", "24", line}).exit_code, 0);
    ASSERT_TRUE(test::WaitFor([&] { return pane().find("/workspace#") != std::string::npos; },
                              std::chrono::seconds(60)))
        << pane();
    tmux({"send-keys", "-t", "t",
          "infocmp >/dev/null && echo INFOCMP-OK-$TERM; tput colors; "
          "TERMINFO=/nonexistent infocmp >/dev/null 2>&1 || echo NOT-IN-IMAGE; stty size",
          "Enter"});
    ASSERT_TRUE(test::WaitFor([&] { return pane().find("24 80") != std::string::npos; },
                              std::chrono::seconds(30)))
        << pane();
    EXPECT_THAT(pane(), HasSubstr("INFOCMP-OK-" + term));
    EXPECT_THAT(pane(), HasSubstr("NOT-IN-IMAGE"));  // the image alone lacks the entry
    tmux({"resize-window", "-t", "t", "-x", "100", "-y", "30"});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    tmux({"send-keys", "-t", "t", "stty size", "Enter"});
    EXPECT_TRUE(test::WaitFor([&] { return pane().find("30 100") != std::string::npos; },
                              std::chrono::seconds(30)))
        << pane();
    tmux({"send-keys", "-t", "t", "exit", "Enter"});
    test::WaitFor(
        [&] {
          return tmux({"has-session", "-t", "t"}).exit_code != 0;
        },
        std::chrono::seconds(30));
    tmux({"kill-server"});
    EXPECT_TRUE(
        test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(30)));
  }
}

class TeardownTest : public RunE2eTest, public ::testing::WithParamInterface<int> {};

TEST_P(TeardownTest, SignalToLazaretLeavesNothingBehind) {
  const int sig = GetParam();
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sleep", "300"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  const std::string session = Env().runtime_dir + "/sessions/" + id;
  ASSERT_TRUE(Exists(session + "/router/router.sock"));
  ASSERT_EQ(SessionContainers().size(), 2u);
  kill(pid, sig);
  EXPECT_EQ(WaitChild(pid, 60), 128 + sig) << test::ReadFile(log);
  EXPECT_TRUE(SessionContainers().empty());
  EXPECT_FALSE(Exists(session));
  EXPECT_THAT(test::ReadFile("/proc/mounts"), Not(HasSubstr(id)));
  ExpectNoProcessesOf(id);
}

INSTANTIATE_TEST_SUITE_P(Signals, TeardownTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

TEST_F(RunE2eTest, KillNineThenCleanLeavesNothingBehind) {
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sleep", "300"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  kill(pid, SIGKILL);
  WaitChild(pid, 30);
  // What a killed CLI leaves: both containers and the session directory.
  EXPECT_EQ(SessionContainers().size(), 2u);
  EXPECT_TRUE(Contains(SessionDirs(), id));
  CommandResult ps = Lazaret("/", {"ps"});
  EXPECT_THAT(ps.out, HasSubstr("orphaned"));
  CommandResult clean = Lazaret("/", {"clean"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_THAT(clean.out, HasSubstr(id));
  EXPECT_TRUE(SessionContainers().empty());
  EXPECT_TRUE(SessionDirs().empty());
  EXPECT_THAT(test::ReadFile("/proc/mounts"), Not(HasSubstr(id)));
  ExpectNoProcessesOf(id);
  CommandResult again = Lazaret("/", {"clean"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_THAT(again.out, HasSubstr("Nothing to clean"));
}

TEST_F(RunE2eTest, PsListsALiveSessionAndStopEndsIt) {
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sleep", "300"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  CommandResult ps = Lazaret("/", {"ps"});
  EXPECT_THAT(ps.out, HasSubstr(id));
  EXPECT_THAT(ps.out, HasSubstr("running"));
  EXPECT_THAT(ps.out, HasSubstr("default"));
  // clean leaves a live session alone.
  CommandResult clean = Lazaret("/", {"clean"});
  EXPECT_THAT(clean.out, HasSubstr("1 live session"));
  EXPECT_EQ(SessionContainers().size(), 2u);
  CommandResult stop = Lazaret("/", {"stop", id.substr(0, 6)});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM);
  EXPECT_TRUE(SessionContainers().empty());
}

TEST_F(RunE2eTest, MissingRunscIsRefusedBeforeAnythingStarts) {
  CommandResult r = Run({"run", "--", "sh", "-c", "touch /workspace/ran"},
                        {{"LAZARET_RUNSC", "/nonexistent/runsc"}});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/runsc"));
  EXPECT_THAT(r.err, HasSubstr("never falls back"));
  EXPECT_FALSE(Exists(ws_->path() + "/ran"));
  EXPECT_TRUE(SessionContainers().empty());
}

TEST_F(RunE2eTest, BrokenRunscFailsAndNeverFallsBackToRunc) {
  const std::string fake = aux_->path() + "/runsc";
  aux_->Write("runsc", "#!/bin/sh\necho 'this runsc is broken' >&2\nexit 1\n");
  chmod(fake.c_str(), 0755);
  CommandResult r =
      Run({"run", "--", "sh", "-c", "touch /workspace/ran"}, {{"LAZARET_RUNSC", fake}});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("this runsc is broken"));
  EXPECT_THAT(r.err, HasSubstr("the sandbox never started"));
  EXPECT_THAT(r.err, HasSubstr("never falls back"));
  EXPECT_FALSE(Exists(ws_->path() + "/ran")) << "the command ran somewhere";
  EXPECT_TRUE(SessionContainers().empty());
}

TEST_F(RunE2eTest, WorkspaceIsWritableIdeSettingsMaskedOnlyWhereTheyExist) {
  test::Run({"mkdir", ws_->path() + "/.vscode"});
  ws_->Write(".vscode/settings.json", "host-secret-settings");
  test::Run({"chown", "-R", std::to_string(Env().uid), ws_->path() + "/.vscode"});
  CommandResult r = Run({"run", "--", "sh", "-c",
                         "echo from-sandbox > /workspace/out.txt; "
                         "ls -A /workspace/.vscode | wc -l; echo x > /workspace/.vscode/new; "
                         "test -e /workspace/.idea && echo IDEA-EXISTS || echo NO-IDEA"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Trim(test::ReadFile(ws_->path() + "/out.txt")), "from-sandbox");
  EXPECT_THAT(r.out, HasSubstr("0\n"));  // the host settings are not visible
  EXPECT_THAT(r.out, HasSubstr("NO-IDEA"));
  EXPECT_EQ(test::ReadFile(ws_->path() + "/.vscode/settings.json"), "host-secret-settings");
  EXPECT_FALSE(Exists(ws_->path() + "/.vscode/new"));
  EXPECT_FALSE(Exists(ws_->path() + "/.idea")) << "a mount point was created on the host";
}

TEST_F(RunE2eTest, VolumesHonourTheirModes) {
  UserDir ro("vro"), rw("vrw");
  ro.Write("in.txt", "read-only-content");
  const std::string cfg = Config("[[profiles.t1.volumes]]\nhost = \"" + ro.path() +
                                 "\"\ncontainer = \"/ro\"\nmode = \"ro\"\n"
                                 "[[profiles.t1.volumes]]\nhost = \"" +
                                 rw.path() + "\"\ncontainer = \"/rw\"\nmode = \"rw\"\n");
  CommandResult r = Run({"run", "--config", cfg, "t1", "--", "sh", "-c",
                         "cat /ro/in.txt; echo; (echo x > /ro/new) 2>/dev/null || echo RO-REFUSED; "
                         "echo written > /rw/out.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("read-only-content"));
  EXPECT_THAT(r.out, HasSubstr("RO-REFUSED"));
  EXPECT_FALSE(Exists(ro.path() + "/new"));
  EXPECT_EQ(Trim(test::ReadFile(rw.path() + "/out.txt")), "written");
}

TEST_F(RunE2eTest, PersistentDirsSurviveSessionsAndSystemDirsAreRefused) {
  const std::string cfg = Config("persistent_dirs = [\"/root\"]\n");
  CommandResult first = Run(
      {"run", "--config", cfg, "t1", "--", "sh", "-c", "ls -A /root; echo kept > /root/state.txt"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr(".bashrc"));  // seeded from the image
  CommandResult second = Run({"run", "--config", cfg, "t1", "--", "cat", "/root/state.txt"});
  EXPECT_EQ(Trim(second.out), "kept");
  const std::string bad =
      aux_->Write("bad.toml", "[profiles.t2]\nimage = \"" + std::string(kSandboxImage) +
                                  "\"\npersistent_dirs = [\"/usr\"]\n");
  CommandResult refused = Run({"run", "--config", bad, "t2", "--", "true"});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("hide the image's /usr"));
}

TEST_F(RunE2eTest, MissingImageSaysHowToGetIt) {
  const std::string cfg =
      aux_->Write("img.toml", "[profiles.t3]\nimage = \"localhost/lazaret-no-such-image:1\"\n");
  CommandResult r = Run({"run", "--config", cfg, "t3", "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("podman pull localhost/lazaret-no-such-image:1"));
}

TEST_F(RunE2eTest, ServicesDownSaysRunLazaretUp) {
  UserDir rt("rt");
  chmod(rt.path().c_str(), 0700);
  CommandResult r = Run({"run", "--", "true"}, {{"LAZARET_RUNTIME_DIR", rt.path()}});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("run: lazaret up"));
}

TEST_F(RunE2eTest, UnknownProfileIsAnErrorNotACommand) {
  CommandResult r = Run({"run", "no-such-profile"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("no-such-profile"));
}

TEST_F(RunE2eTest, GitRepositoryWorkspaceHasGitInside) {
  const std::string repo = ws_->path();
  ASSERT_EQ(RunAs(repo, {"sh", "-c",
                         "git init -q -b main . && echo a > a.txt && git add a.txt && "
                         "git -c user.name=D -c user.email=d@x commit -qm 'first commit' && "
                         "git branch lazaret/review"})
                .exit_code,
            0);
  // The Git Shadow in this mode (rootful or rootless): the agent commits on
  // its own branch, cannot write config, and a hook it plants never runs on
  // the host.
  CommandResult r =
      Run({"run", "--", "sh", "-c",
           "git log -1 --format=%s; git status --short; git branch --show-current; "
           "git -c user.name=A -c user.email=a@x commit -q --allow-empty -m agent-commit; "
           "git config x.y z 2>/dev/null && echo CONFIG-WRITTEN; "
           "printf '#!/bin/sh\\ntouch HOOK-RAN\\n' > .git/hooks/post-checkout; "
           "chmod +x .git/hooks/post-checkout; "
           "git update-ref refs/heads/lazaret/review HEAD 2>/dev/null && echo REVIEW-MOVED || "
           "echo REVIEW-REFUSED"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("first commit"));
  EXPECT_THAT(r.out, HasSubstr("lazaret/agent-default"));
  EXPECT_THAT(r.out, Not(HasSubstr("CONFIG-WRITTEN")));
  // Another ref below lazaret/ is read-only inside (a bind over itself).
  EXPECT_THAT(r.out, HasSubstr("REVIEW-REFUSED"));
  auto host_git = [&](const std::string& args) {
    CommandResult g = RunAs(repo, {"sh", "-c", "git " + args});
    EXPECT_EQ(g.exit_code, 0) << args << ": " << g.err;
    return Trim(g.out);
  };
  EXPECT_EQ(host_git("log -1 --format=%s lazaret/agent-default"), "agent-commit");
  EXPECT_EQ(host_git("log -1 --format=%s lazaret/review"), "first commit");
  EXPECT_EQ(host_git("rev-parse --abbrev-ref HEAD"), "main");
  EXPECT_EQ(host_git("log -1 --format=%s"), "first commit");
  host_git("checkout -q lazaret/agent-default && git checkout -q main");
  EXPECT_FALSE(Exists(repo + "/HOOK-RAN"));
  EXPECT_EQ(host_git("config --get x.y || true"), "");
}

int HostProcessCount() {
  int n = 0;
  for (const auto& argv : ProcessesWith("")) n += argv.empty() ? 0 : 1;
  return n;
}

// THREATS "Sandbox and host resources": a FIFO planted in /workspace stays
// inside gVisor, device nodes cannot be made, a setuid bit only ever lands
// on a file owned by the invoking user (rootless: the user; rootful: root,
// who is the user - see docs/operations.md), and a fork bomb makes no host
// processes (gVisor's tasks live in its sentry).
TEST_F(RunE2eTest, PlantedSpecialFilesAndAForkBombStayInside) {
  CommandResult r =
      Run({"run", "--", "sh", "-c",
           "mkfifo /workspace/fifo; mknod /workspace/dev c 1 3 || echo MKNOD-REFUSED; "
           "cp /bin/sh /workspace/suid && chmod 4755 /workspace/suid"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("MKNOD-REFUSED"));
  EXPECT_FALSE(Exists(ws_->path() + "/fifo"));
  EXPECT_FALSE(Exists(ws_->path() + "/dev"));
  struct stat st {};
  ASSERT_EQ(stat((ws_->path() + "/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, Env().uid) << "a setuid file owned by someone other than the user";

  // The host's process count while a fork bomb runs inside.
  const int before = HostProcessCount();
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(
      ws_->path(),
      {"run", "--", "sh", "-c",
       "touch /workspace/bombing; timeout 10 sh -c 'b(){ b|b& }; b' 2>/dev/null; echo contained"},
      {}, log);
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(ws_->path() + "/bombing"); }, std::chrono::seconds(60)))
      << test::ReadFile(log);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const int during = HostProcessCount();
  EXPECT_LT(during, before + 50) << "the fork bomb made host processes";
  EXPECT_EQ(WaitChild(pid, 120), 0) << test::ReadFile(log);
  EXPECT_THAT(test::ReadFile(log), HasSubstr("contained"));
}

TEST_F(RunE2eTest, DoctorPassesHereAndNamesAMissingRunsc) {
  CommandResult ok = Lazaret("/", {"doctor"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("runsc"));
  CommandResult bad = Lazaret("/", {"doctor"}, {{"LAZARET_RUNSC", "/nonexistent/runsc"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out, HasSubstr("FAIL  runsc"));
  EXPECT_THAT(bad.out, HasSubstr("fix:"));
}

TEST_F(RunE2eTest, ImageTagIsAContentHashOfTheInputs) {
  CommandResult current = Lazaret("/", {"image", "tag", "sandbox"});
  ASSERT_EQ(current.exit_code, 0) << current.err;
  EXPECT_THAT(current.out, HasSubstr("localhost/lazaret-sandbox:trixie-"));
  EXPECT_EQ(Lazaret("/", {"image", "tag", "sandbox"}).out, current.out);
  UserDir images("img");
  test::Run({"mkdir", images.path() + "/sandbox"});
  images.Write("sandbox/packages.txt", "bash\ngit\ncurl\n");
  CommandResult changed =
      Lazaret("/", {"image", "tag", "sandbox"}, {{"LAZARET_IMAGES_DIR", images.path()}});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_NE(changed.out, current.out);
  CommandResult mirror =
      Lazaret("/", {"image", "tag", "sandbox", "--mirror", "http://mirror.invalid/debian"});
  EXPECT_NE(mirror.out, current.out);
  // The fixture built the current inputs: a second build is a no-op.
  CommandResult rebuild = Lazaret("/", {"image", "build", "all"});
  EXPECT_EQ(rebuild.exit_code, 0) << rebuild.err;
  EXPECT_THAT(rebuild.out, HasSubstr("sandbox " + Trim(current.out) + " is up to date"));
  EXPECT_THAT(rebuild.out, HasSubstr("not rebuilding"));
}

}  // namespace
}  // namespace lazaret::test::e2e
