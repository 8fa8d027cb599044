// `lazaret run` end to end: the real CLI drives real podman, runsc (gVisor)
// and runc; every outcome is checked from the host (podman inspect, /proc of
// the container processes, files, the runtime directory). The same tests run
// rootful (as root) and rootless (as the test user run_fixture.sh creates),
// chosen by LAZARET_E2E_MODE; the images and `lazaret up` come from ctest
// fixtures (tests/e2e/CMakeLists.txt). Runs as root.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/e2e/run_e2e_support.h"
#include "tests/e2e/workspace_test.h"
#include "tests/support/tmux_session.h"

namespace lazaret::test::e2e {
namespace {

using ::testing::IsEmpty;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSandboxImage[] = "localhost/lazaret-sandbox:trixie";
constexpr char kSidecarImage[] = "localhost/lazaret-sidecar:current";
constexpr char kEgressFailure[] = "the egress policy could not be applied";

std::string ProbeBinary() { return test::Binary("lazaret_raw_socket_probe"); }


std::string ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return Trim(line.substr(field.size() + 1).erase(0, 1));
  }
  return "";
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

class RunE2eTest : public WorkspaceTest {
 protected:
  // A --config file with one profile "t1" on the default image.
  std::string Config(const std::string& profile_body) {
    return aux_->Write("t1.toml", "[profiles.t1]\nimage = \"" + std::string(kSandboxImage) +
                                      "\"\n" + profile_body);
  }
};

TEST_F(RunE2eTest, CommandExitCodeIsLazaretsExitCode) {
  EXPECT_EQ(Run({"run", "--", "true"}).exit_code, 0);
  EXPECT_EQ(Run({"run", "--", "false"}).exit_code, 1);
  CommandResult seven = Run({"run", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7) << seven.err;
  EXPECT_THAT(seven.err, Not(HasSubstr(kEgressFailure)));  // applied before the sandbox
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
  EXPECT_THAT(Inspect(sidecar, "{{.OCIRuntime}}"), testing::EndsWith("/runc"));
  // The sandbox lives in the sidecar's network namespace.
  EXPECT_EQ(Inspect(sandbox, "{{.HostConfig.NetworkMode}}"),
            "container:" + Inspect(sidecar, "{{.Id}}"));
  EXPECT_THAT(Inspect(sandbox, "{{.HostConfig.SecurityOpt}}"), HasSubstr("no-new-privileges"));
  EXPECT_THAT(Inspect(sandbox, "{{.EffectiveCaps}}"), Not(HasSubstr("CAP_NET_RAW")));
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
  // The default profile has escalation on, and still no host-uds flag of
  // any kind: the client reaches the broker through the sidecar's relay,
  // and runsc refuses every host socket file (docs/escalation.md).
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

// The capability set of the agent's root: kSandboxCapabilities
// (services/sessiond/session/plan.h), restated here as bits: CHOWN 0,
// DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7.
constexpr uint64_t kSandboxCaps = 0xfb;
constexpr uint64_t kSidecarCaps = 1u << 12;  // NET_ADMIN

// A containers.conf that tries, through every key podman 4.3 offers, to
// widen the containers it starts: host environment, a host directory, a
// device, capabilities, no seccomp, host namespaces, sysctls, annotations,
// an OCI hook, a runtime and a conmon of its own (each a script that leaves
// a marker on the host), slirp4netns options and DNS servers. Installed
// where podman reads it: CONTAINERS_CONF (both modes) and, rootless, the
// user's ~/.config/containers/containers.conf too. Removed at the end.
class HostileContainersConf {
 public:
  explicit HostileContainersConf(const UserDir& dir) : dir_(dir) {
    host_dir_ = dir.path() + "/hostile-volume";
    RunAs("/", {"mkdir", "-p", host_dir_, dir.path() + "/hooks"});
    dir.Write("hostile-volume/secret", "host secret\n");
    for (const char* tool : {"runc", "conmon", "hook"}) {
      const std::string real =
          std::string(tool) == "hook" ? "true" : "/usr/bin/" + std::string(tool);
      const std::string path = dir.Write(std::string("fake-") + tool,
                                         "#!/bin/sh\n"
                                         // Every podman, also the test's own `podman ps`
                                         // reading the user's file, asks `--version`.
                                         "case \" $* \" in *' --version '*) ;; *) "
                                         "{ echo \"$*\"; tr '\\0' ' ' </proc/$PPID/cmdline; } >>" +
                                             Marker(tool) + ";; esac\nexec " + real + " \"$@\"\n");
      chmod(path.c_str(), 0755);
    }
    dir.Write("hooks/hostile.json",
              "{\"version\": \"1.0.0\", \"hook\": {\"path\": \"" + dir.path() +
                  "/fake-hook\"}, \"when\": {\"always\": true}, \"stages\": [\"prestart\"]}\n");
    const std::string text =
        "[containers]\n"
        "env_host = true\n"
        "http_proxy = true\n"
        "env = [\"LAZ_HOSTILE_ENV=from-containers-conf\"]\n"
        "volumes = [\"" +
        host_dir_ +
        ":/hostile-volume:rw\"]\n"
        "devices = [\"/dev/fuse:/dev/hostile-fuse:rwm\"]\n"
        "default_capabilities = [\"SYS_ADMIN\", \"NET_ADMIN\", \"NET_RAW\", \"SYS_PTRACE\", "
        "\"CHOWN\", \"SETUID\", \"SETGID\", \"DAC_OVERRIDE\", \"MKNOD\"]\n"
        "seccomp_profile = \"unconfined\"\n"
        "default_sysctls = [\"net.ipv4.ping_group_range=0 0\"]\n"
        "annotations = [\"io.lazaret.hostile=yes\"]\n"
        "ipcns = \"host\"\n"
        "utsns = \"host\"\n"
        "cgroupns = \"host\"\n"
        "umask = \"0000\"\n"
        "init = true\n"
        "dns_servers = [\"192.0.2.53\"]\n"
        "shm_size = \"3g\"\n"
        // What this VM's root needs (PLATFORM.md), as a user's file that
        // replaces the host's would carry it: without it nothing would
        // start, and the test would not show what leaks.
        "default_ulimits = [\"nofile=16384:16384\", \"nproc=16384:16384\"]\n"
        "\n"
        "[engine]\n"
        "hooks_dir = [\"" +
        dir.path() +
        "/hooks\"]\n"
        "conmon_path = [\"" +
        dir.path() +
        "/fake-conmon\"]\n"
        "network_cmd_options = [\"allow_host_loopback=true\"]\n"
        "\n"
        "[engine.runtimes]\n"
        "runc = [\"" +
        dir.path() + "/fake-runc\"]\n";
    conf_ = dir.Write("containers.conf", text);
    if (IsRootless()) {
      user_conf_dir_ = Env().home + "/.config/containers";
      RunAs("/", {"mkdir", "-p", user_conf_dir_});
      RunAs("/", {"cp", conf_, user_conf_dir_ + "/containers.conf"});
    }
  }
  ~HostileContainersConf() {
    if (!user_conf_dir_.empty()) test::Run({"rm", "-f", user_conf_dir_ + "/containers.conf"});
  }
  HostileContainersConf(const HostileContainersConf&) = delete;
  HostileContainersConf& operator=(const HostileContainersConf&) = delete;

  std::map<std::string, std::string> Env_() const {
    return {{"CONTAINERS_CONF", conf_},
            {"LAZ_HOST_ONLY_VAR", "leaked-from-host"},
            {"http_proxy", "http://proxy.invalid:3128"}};
  }
  std::string Marker(const std::string& tool) const { return dir_.path() + "/ran-" + tool; }
  const std::string& host_dir() const { return host_dir_; }

 private:
  const UserDir& dir_;
  std::string host_dir_;
  std::string conf_;
  std::string user_conf_dir_;
};

std::string NamespaceOf(pid_t pid, const char* ns) {
  char buf[64] = {};
  const std::string link = "/proc/" + std::to_string(pid) + "/ns/" + ns;
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

TEST_F(RunE2eTest, HostileContainersConfNeverReachesTheSandboxOrTheSidecar) {
  HostileContainersConf hostile(*aux_);
  const std::string log = aux_->path() + "/run.log";
  // The agent's view, written where the host can read it, then it waits.
  const std::string report =
      "{ grep -E '^(CapEff|CapPrm|CapBnd):' /proc/self/status; "
      "echo \"env=${LAZ_HOSTILE_ENV:-none} host=${LAZ_HOST_ONLY_VAR:-none} "
      "proxy=${http_proxy:-none}\"; "
      "test -e /hostile-volume && echo volume=yes || echo volume=no; "
      "test -e /dev/hostile-fuse && echo device=yes || echo device=no; "
      "echo umask=$(umask); "
      "grep -c hostile /proc/self/mountinfo | sed 's/^/mounts=/'; "
      "grep -c 192.0.2.53 /etc/resolv.conf | sed 's/^/dns=/'; "
      "df -k /dev/shm | tail -n 1 | awk '{print \"shm=\" $2}'; "
      "} > /workspace/report.tmp; mv /workspace/report.tmp /workspace/report; sleep 120";
  const pid_t pid =
      SpawnLazaret(ws_->path(), {"run", "--", "sh", "-c", report}, hostile.Env_(), log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  const std::string sandbox = "lazaret-" + id + "-sandbox";
  const std::string sidecar = "lazaret-" + id + "-sidecar";
  const std::string report_path = ws_->path() + "/report";
  ASSERT_TRUE(test::WaitFor([&] { return Exists(report_path); }, std::chrono::seconds(60)))
      << test::ReadFile(log);
  const std::string inside = test::ReadFile(report_path);

  // Inside the sandbox: exactly the declared capabilities, nothing of the
  // hostile file.
  auto cap = [&](const std::string& field) -> uint64_t {
    const size_t at = inside.find(field + ":");
    if (at == std::string::npos) return ~uint64_t{0};
    return std::stoull(Trim(inside.substr(at + field.size() + 1, 20)), nullptr, 16);
  };
  EXPECT_EQ(cap("CapEff"), kSandboxCaps) << inside;
  EXPECT_EQ(cap("CapPrm"), kSandboxCaps) << inside;
  EXPECT_EQ(cap("CapBnd"), kSandboxCaps) << inside;
  EXPECT_THAT(inside, HasSubstr("env=none host=none proxy=none"));
  EXPECT_THAT(inside, HasSubstr("volume=no"));
  EXPECT_THAT(inside, HasSubstr("device=no"));
  EXPECT_THAT(inside, HasSubstr("umask=0022"));
  EXPECT_THAT(inside, HasSubstr("mounts=0"));
  EXPECT_THAT(inside, HasSubstr("dns=0"));
  EXPECT_THAT(inside, HasSubstr("shm=65536"));
  EXPECT_THAT(Inspect(sandbox, "{{.Config.Annotations}}"), Not(HasSubstr("hostile")));
  EXPECT_THAT(Inspect(sandbox, "{{.HostConfig.Binds}}"), Not(HasSubstr(hostile.host_dir())));

  // The sidecar, from the host: its PID 1 is the router (no init), with
  // NET_ADMIN only, a seccomp filter, its own namespaces, none of the env,
  // volume, device, sysctl or annotation.
  const pid_t router = std::stoi(Inspect(sidecar, "{{.State.Pid}}"));
  ASSERT_GT(router, 0);
  const std::string proc = "/proc/" + std::to_string(router);
  EXPECT_EQ(Trim(test::ReadFile(proc + "/comm")), "lazaret-netrout");
  EXPECT_EQ(test::ProcStatusHex(router, "CapEff"), kSidecarCaps);
  EXPECT_EQ(test::ProcStatusHex(router, "CapBnd"), kSidecarCaps);
  EXPECT_EQ(ProcStatusField(router, "Seccomp"), "2");
  for (const char* ns : {"ipc", "uts", "pid", "cgroup", "mnt"}) {
    EXPECT_NE(NamespaceOf(router, ns), NamespaceOf(getpid(), ns)) << ns << " namespace shared";
  }
  std::string environ = test::ReadFile(proc + "/environ");
  EXPECT_THAT(environ, Not(HasSubstr("LAZ_HOSTILE_ENV")));
  EXPECT_THAT(environ, Not(HasSubstr("LAZ_HOST_ONLY_VAR")));
  EXPECT_THAT(environ, Not(HasSubstr("proxy.invalid")));
  EXPECT_FALSE(Exists(proc + "/root/hostile-volume"));
  EXPECT_FALSE(Exists(proc + "/root/dev/hostile-fuse"));
  EXPECT_THAT(test::ReadFile(proc + "/mountinfo"), Not(HasSubstr("hostile")));
  EXPECT_THAT(Inspect(sidecar, "{{.Config.Annotations}}"), Not(HasSubstr("hostile")));
  CommandResult sysctl = test::Run(
      {"nsenter", "--net=" + proc + "/ns/net", "cat", "/proc/sys/net/ipv4/ping_group_range"});
  ASSERT_EQ(sysctl.exit_code, 0) << sysctl.err;
  // The kernel's default is "1 0" (nobody may ping); a rootless user
  // namespace maps only group 0 of the hostile range's values.
  EXPECT_EQ(Trim(sysctl.out), "1\t0");
  EXPECT_THAT(test::ReadFile(proc + "/root/etc/resolv.conf"), Not(HasSubstr("192.0.2.53")));

  // No program the hostile file named ran for either container.
  for (const char* tool : {"runc", "conmon", "hook"}) {
    EXPECT_FALSE(Exists(hostile.Marker(tool)))
        << tool << " from the hostile containers.conf ran, started by "
        << test::ReadFile(hostile.Marker(tool));
  }

  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM) << test::ReadFile(log);
}

TEST_F(RunE2eTest, SidecarImageHoldsOnlyTheStaticRouter) {
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
  // Everything but directories (podman's own mount points among them):
  // one regular file, the router.
  std::vector<std::string> files;
  std::istringstream in(list.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != 'd') files.push_back(line);
  }
  ASSERT_EQ(files.size(), 1u) << list.out;
  EXPECT_EQ(files[0][0], '-') << files[0];
  EXPECT_TRUE(absl::EndsWith(files[0], " lazaret-netrouter")) << files[0];
  // Linked statically: no loader, nothing it could load.
  CommandResult ldd = test::Run({"ldd", test::Binary("lazaret-netrouter")});
  EXPECT_THAT(ldd.out + ldd.err, HasSubstr("not a dynamic executable"));
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
    EXPECT_THAT(r.err, Not(HasSubstr(kEgressFailure)));  // nothing was started
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
  EXPECT_THAT(r.out, HasSubstr("/runc --network=slirp4netns"));
  EXPECT_THAT(r.out, HasSubstr("CONTAINERS_CONF=" + Env().runtime_dir + "/podman/containers.conf"));
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
  for (const std::string term : {"xterm-kitty", "alacritty"}) {
    SCOPED_TRACE(term);
    test::TempDir dir("laz-e2e-tmux");
    test::TmuxSession tmux(dir.path());
    std::string line = "cd '" + ws_->path() + "' && exec";
    for (const auto& a : AsMode({test::Binary("lazaret"), "run"}, {{"TERM", term}})) {
      line += " '" + a + "'";
    }
    ASSERT_TRUE(tmux.NewWindow("t", 80, 24, line));
    ASSERT_TRUE(tmux.WaitForText("t", "/workspace#", std::chrono::seconds(60)));
    tmux.Keys("t", {"infocmp >/dev/null && echo INFOCMP-OK-$TERM; tput colors; "
                    "TERMINFO=/nonexistent infocmp >/dev/null 2>&1 || echo NOT-IN-IMAGE; stty size",
                    "Enter"});
    ASSERT_TRUE(tmux.WaitForText("t", "24 80", std::chrono::seconds(30)));
    EXPECT_THAT(tmux.Capture("t"), HasSubstr("INFOCMP-OK-" + term));
    EXPECT_THAT(tmux.Capture("t"), HasSubstr("NOT-IN-IMAGE"));  // the image alone lacks the entry
    tmux.Resize("t", 100, 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    tmux.Keys("t", {"stty size", "Enter"});
    EXPECT_TRUE(tmux.WaitForText("t", "30 100", std::chrono::seconds(30)));
    tmux.Keys("t", {"exit", "Enter"});
    EXPECT_TRUE(tmux.WaitForExit("t", std::chrono::seconds(30)));
    EXPECT_EQ(tmux.PaneExitStatus("t"), 0);
    tmux.Tmux({"kill-server"});
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
  EXPECT_THAT(LeftBehind(), IsEmpty());
  EXPECT_FALSE(Exists(session));
  EXPECT_THAT(test::ReadFile("/proc/mounts"), Not(HasSubstr(id)));
  ExpectNoProcessesOf(id);
}

INSTANTIATE_TEST_SUITE_P(Signals, TeardownTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

// ---- The session registry: no sandbox without a live supervisor ----

// A git workspace owned by the mode's user with one commit on main.
void InitRepo(const std::string& repo) {
  ASSERT_EQ(RunAs(repo, {"sh", "-c",
                         "git init -q -b main . && echo a > a.txt && git add a.txt && "
                         "git -c user.name=D -c user.email=d@x commit -qm 'first commit'"})
                .exit_code,
            0);
}

std::string HostBranchSubject(const std::string& repo, const std::string& branch) {
  return Trim(RunAs(repo, {"git", "log", "-1", "--format=%s", branch}).out);
}

pid_t SupervisorPid() {
  const std::string out = Lazaret("/", {"status", "--json"}).out;
  const std::string key = "\"supervisor_pid\":";
  const size_t at = out.find(key);
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + key.size());
}

// Measured on main: 12 s after `kill -9` of the session's owner both
// containers still ran, until someone ran `lazaret clean`. Now the
// supervisor watches the owner - the session's worker in lazaret-sessiond -
// through a pidfd and has sessiond reap at once: containers gone within
// 2 s, and the commit the agent made is imported by the reap's write-back.
// (A killed `lazaret run` only detaches: the attach tests.)
TEST_F(RunE2eTest, KillNineOfTheSessionWorkerIsReapedWithinTwoSecondsAndItsCommitKept) {
  InitRepo(ws_->path());
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(
      ws_->path(),
      {"run", "--", "sh", "-c",
       "git -c user.name=A -c user.email=a@x commit -q --allow-empty -m killed-agent-commit && "
       "touch /workspace/committed && sleep 60"},
      {}, log);
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(ws_->path() + "/committed"); }, std::chrono::seconds(90)))
      << test::ReadFile(log);
  const std::vector<std::string> ids = PsSessions();
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = ids[0];
  ASSERT_EQ(SessionContainers().size(), 2u);
  const pid_t worker = SessionWorkerPid(id);
  ASSERT_GT(worker, 0);
  const auto killed = std::chrono::steady_clock::now();
  kill(worker, SIGKILL);
  ASSERT_TRUE(test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(30)));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf("containers gone %.2f s after kill -9 of the session worker\n", seconds);
  EXPECT_LT(seconds, 2.0);
  // `lazaret run` ends with its session.
  WaitChild(pid, 10);
  // The reap writes back, then removes the session directory.
  EXPECT_TRUE(
      test::WaitFor([&] { return !Contains(SessionDirs(), id); }, std::chrono::seconds(60)));
  EXPECT_EQ(HostBranchSubject(ws_->path(), "lazaret/agent-default"), "killed-agent-commit");
  const std::string log_path = Env().runtime_dir + "/supervisor.log";
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return test::ReadFile(log_path).find("session " + id + " reaped") != std::string::npos;
      },
      std::chrono::seconds(30)));
  const std::string supervisor_log = test::ReadFile(log_path);
  EXPECT_THAT(supervisor_log, HasSubstr("session " + id + ": its owner is gone"));
  EXPECT_THAT(supervisor_log, HasSubstr("session " + id + " reaped"));
  ExpectNoProcessesOf(id);
  CommandResult again = Lazaret("/", {"clean"});
  EXPECT_THAT(again.out, HasSubstr("Nothing to clean"));
}

// `lazaret stop` goes through the registry, which signals the owner by the
// pidfd it took at registration: a pid written in session.json is never
// signalled (here it names a decoy process, which must survive).
TEST_F(RunE2eTest, StopSignalsTheRegisteredOwnerNeverAPidFromAFile) {
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sleep", "300"}, {}, log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    execlp("sleep", "sleep", "120", static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string record = Env().runtime_dir + "/sessions/" + id + "/session.json";
  std::string json = test::ReadFile(record);
  // The registered owner is the session's worker in lazaret-sessiond.
  const pid_t worker = SessionWorkerPid(id);
  ASSERT_GT(worker, 0) << json;
  const std::string key = "\"pid\": " + std::to_string(worker);
  ASSERT_NE(json.find(key), std::string::npos) << json;
  json.replace(json.find(key), key.size(), "\"pid\": " + std::to_string(sleeper));
  std::ofstream(record, std::ios::trunc) << json;
  CommandResult stop = Lazaret("/", {"stop", id});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM) << test::ReadFile(log);
  int sleeper_status = 0;
  EXPECT_EQ(waitpid(sleeper, &sleeper_status, WNOHANG), 0)
      << "stop signalled the pid read from session.json";
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  EXPECT_THAT(LeftBehind(), IsEmpty());
}

// Fail closed: with the config service up but no supervisor, nothing
// starts - a sandbox that nobody would reap if this CLI died.
TEST_F(RunE2eTest, RunRefusesToStartWithoutASupervisor) {
  UserDir rt("rt");
  chmod(rt.path().c_str(), 0700);
  const pid_t configd = fork();
  if (configd == 0) {
    std::vector<std::string> argv =
        AsMode({test::Binary("lazaret-configd"), "--runtime-dir=" + rt.path()});
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(rt.path() + "/configd.sock"); }, std::chrono::seconds(20)));
  CommandResult r =
      Run({"run", "--", "sh", "-c", "touch /workspace/ran"}, {{"LAZARET_RUNTIME_DIR", rt.path()}});
  kill(configd, SIGTERM);
  waitpid(configd, nullptr, 0);
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_THAT(r.err, HasSubstr("refusing to start: the supervisor does not answer"));
  EXPECT_THAT(r.err, HasSubstr("lazaret up"));
  EXPECT_FALSE(Exists(ws_->path() + "/ran"));
  const std::string rt_path = rt.path();
  CommandResult ps = Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                             "label=io.lazaret.runtime-dir=" + rt_path});
  EXPECT_EQ(Trim(ps.out), "");
}

// The host's primary IPv4 address (a route lookup; no packet is sent).
std::string HostAddress() {
  const std::string out = test::Run({"ip", "-4", "-o", "route", "get", "192.0.2.1"}).out;
  const size_t at = out.find(" src ");
  if (at == std::string::npos) return "";
  return Trim(out.substr(at + 5, out.find(' ', at + 5) - at - 5));
}

// Both the session's worker and the supervisor killed: nobody can reap, so
// the router closes the namespace the moment its last hold ends - a connect
// from inside that worked a moment ago fails at once - and the next
// `lazaret up` reaps the session, commits included. (The worker is stopped
// first: killing the supervisor ends lazaret-sessiond, which would
// otherwise end the session cleanly.)
TEST_F(RunE2eTest, KillingTheWorkerAndTheSupervisorClosesTheNetworkAndUpReaps) {
  const std::string host = HostAddress();
  ASSERT_FALSE(host.empty());
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 512), 0);
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  // Accept and drop every connection, so the backlog never fills up.
  struct Acceptor {
    int fd;
    std::thread thread;
    ~Acceptor() {
      shutdown(fd, SHUT_RDWR);
      thread.join();
      close(fd);
    }
  } acceptor{listener, std::thread([listener] {
               int c;
               while ((c = accept(listener, nullptr, nullptr)) >= 0) close(c);
             })};
  InitRepo(ws_->path());
  const std::string log = aux_->path() + "/run.log";
  // Each probe: a TCP connect to the host listener from a subshell, its
  // outcome and how long it took in ms (bash's clock, no process started
  // to read it), one line each. A refused connect takes milliseconds; one
  // that hangs never writes its line, and the wait below times out.
  const std::string probe =
      "git -c user.name=A -c user.email=a@x commit -q --allow-empty -m closed-agent-commit; "
      "while true; do s=$EPOCHREALTIME; "
      "if (exec 3<>/dev/tcp/" +
      host + "/" + port +
      ") 2>/dev/null; "
      "then r=ok; else r=fail; fi; e=$EPOCHREALTIME; "
      "echo \"$r $(( (${e/./} - ${s/./}) / 1000 ))\" >> /workspace/probe.log; sleep 0.2; done";
  // The host's own addresses are always denied; an exact host allow is
  // the one way to open one, which gives the probe a destination.
  const std::string cfg = Config("allow_egress = [\"" + host + "/32\"]\n");
  const pid_t pid =
      SpawnLazaret(ws_->path(), {"run", "--config", cfg, "t1", "--", "bash", "-c", probe}, {}, log);
  const std::string probe_log = ws_->path() + "/probe.log";
  ASSERT_TRUE(
      test::WaitFor([&] { return test::ReadFile(probe_log).find("ok ") != std::string::npos; },
                    std::chrono::seconds(90)))
      << test::ReadFile(log) << test::ReadFile(probe_log);
  const std::string id = PsSessions().at(0);
  const pid_t supervisor = SupervisorPid();
  ASSERT_GT(supervisor, 0);
  const pid_t worker = SessionWorkerPid(id);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGSTOP), 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  WaitChild(pid, 10);
  const size_t before = test::ReadFile(probe_log).size();
  // The next probes fail, fast, and none succeeds again.
  ASSERT_TRUE(test::WaitFor(
      [&] {
        const std::string after = test::ReadFile(probe_log).substr(before);
        return std::count(after.begin(), after.end(), '\n') >= 6;
      },
      std::chrono::seconds(30)))
      << test::ReadFile(probe_log);
  std::istringstream lines(test::ReadFile(probe_log).substr(before));
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    if (++n <= 1) continue;  // one probe may have been under way at the kill
    EXPECT_EQ(line.rfind("fail ", 0), 0u)
        << "a connect succeeded after both holders died: " << line;
    EXPECT_LT(std::atoi(line.c_str() + 5), 1000)
        << "a refused connect should fail fast: " << line << "\n"
        << test::ReadFile(probe_log);
  }
  // Nobody reaped yet: the sandbox is there, cut off.
  EXPECT_EQ(SessionContainers().size(), 2u);
  // The next `lazaret up` reaps what its owner left.
  CommandResult up = Lazaret("/", {"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_TRUE(test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(60)));
  EXPECT_TRUE(
      test::WaitFor([&] { return !Contains(SessionDirs(), id); }, std::chrono::seconds(60)));
  EXPECT_EQ(HostBranchSubject(ws_->path(), "lazaret/agent-t1"), "closed-agent-commit");
  ExpectNoProcessesOf(id);
}

// `--json` output parsed as a google.protobuf.Struct: fails the test when it
// is not one valid JSON object.
google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct out;
  const auto st = google::protobuf::util::JsonStringToMessage(text, &out);
  EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << text;
  return out;
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
  CommandResult json = Lazaret("/", {"ps", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const google::protobuf::Struct listed = ParseJson(json.out);
  bool found = false;
  for (const auto& row : listed.fields().at("sessions").list_value().values()) {
    const auto& f = row.struct_value().fields();
    if (f.at("id").string_value() != id) continue;
    found = true;
    EXPECT_EQ(f.at("state").string_value(), "running");
    EXPECT_EQ(f.at("profile").string_value(), "default");
    EXPECT_THAT(f.at("started").string_value(), testing::EndsWith("Z"));
  }
  EXPECT_TRUE(found) << json.out;
  // clean leaves a live session alone.
  CommandResult clean = Lazaret("/", {"clean"});
  EXPECT_THAT(clean.out, HasSubstr("1 live session"));
  EXPECT_EQ(SessionContainers().size(), 2u);
  CommandResult stop = Lazaret("/", {"stop", id.substr(0, 6)});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitChild(pid, 60), 128 + SIGTERM);
  EXPECT_THAT(LeftBehind(), IsEmpty());
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
  EXPECT_THAT(LeftBehind(), IsEmpty());
}

// IDE settings are a per-session view of the host's (docs/operations.md
// "Held changes"): the agent reads the developer's version, what it writes
// there is held in the profile, and nothing is created on the host.
TEST_F(RunE2eTest, WorkspaceIsWritableIdeSettingsAreAViewOfTheHosts) {
  test::Run({"mkdir", ws_->path() + "/.vscode"});
  ws_->Write(".vscode/settings.json", "host-settings");
  test::Run({"chown", "-R", std::to_string(Env().uid), ws_->path() + "/.vscode"});
  CommandResult r = Run({"run", "--", "sh", "-c",
                         "echo from-sandbox > /workspace/out.txt; "
                         "cat /workspace/.vscode/settings.json; echo; "
                         "echo x > /workspace/.vscode/new; "
                         "test -e /workspace/.idea && echo IDEA-EXISTS || echo NO-IDEA"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Trim(test::ReadFile(ws_->path() + "/out.txt")), "from-sandbox");
  EXPECT_THAT(r.out, HasSubstr("host-settings\n"));  // the host's version, through the view
  EXPECT_THAT(r.out, HasSubstr("NO-IDEA"));
  EXPECT_EQ(test::ReadFile(ws_->path() + "/.vscode/settings.json"), "host-settings");
  EXPECT_FALSE(Exists(ws_->path() + "/.vscode/new"));
  EXPECT_THAT(r.err, HasSubstr("created .vscode/new (VS Code)")) << r.err;
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

// Persistent directories are overlays over the image's own directories
// (lazaret-mount-helper): a system directory may persist, what the image
// has there is still seen, and nested entries are refused.
TEST_F(RunE2eTest, PersistentDirsSurviveSessionsAndSystemDirsPersist) {
  // The cap is preallocated on disk: small.
  const std::string cfg =
      Config("persistent_dirs = [\"/root\", \"/usr\"]\npersistent_cap = \"256MiB\"\n");
  // Whatever an earlier run of this test (or an earlier Lazaret) left.
  Run({"state", "reset", "--config", cfg, "t1", "--yes"});
  CommandResult first = Run({"run", "--config", cfg, "t1", "--", "sh", "-c",
                             "ls -A /root; echo kept > /root/state.txt; "
                             "printf '#!/bin/sh\\necho tool-ran\\n' > /usr/local/bin/laz-tool; "
                             "chmod +x /usr/local/bin/laz-tool; ls /usr/bin/env"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr(".bashrc"));       // the image's /root below
  EXPECT_THAT(first.out, HasSubstr("/usr/bin/env"));  // and its /usr
  CommandResult second =
      Run({"run", "--config", cfg, "t1", "--", "sh", "-c", "cat /root/state.txt; laz-tool"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("kept"));
  EXPECT_THAT(second.out, HasSubstr("tool-ran"));
  CommandResult reset = Run({"state", "reset", "--config", cfg, "t1", "--yes"});
  EXPECT_EQ(reset.exit_code, 0) << reset.err;
  const std::string nested =
      aux_->Write("nested.toml", "[profiles.t2]\nimage = \"" + std::string(kSandboxImage) +
                                     "\"\npersistent_dirs = [\"/usr\", \"/usr/local\"]\n"
                                     "persistent_cap = \"256MiB\"\n");
  CommandResult refused = Run({"run", "--config", nested, "t2", "--", "true"});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("persistent directories may not nest"));
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

// THREATS "Sandbox and host resources": a FIFO planted in /workspace stays
// inside gVisor, device nodes cannot be made, and a setuid bit set inside
// never reaches the host file (docs/operations.md).
TEST_F(RunE2eTest, PlantedSpecialFilesStayInsideAndSetuidNeverReachesTheHost) {
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
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u)
      << "a setuid file reached the host: mode " << std::oct << st.st_mode;
}

// A fork bomb inside is held by the sandbox's pids limit (rootful:
// --pids-limit, the pids cgroup the gVisor sandbox runs in, as podman
// applied it to the running sandbox), the host keeps starting processes
// promptly while it runs, and the session ends normally. Rootless on this cgroup v1 host
// podman sets no pids cgroup (docs/operations.md "Limits"): only the
// host's responsiveness and the session's end are checked there.
TEST_F(RunE2eTest, ForkBombIsHeldByTheTaskLimitAndTheHostStaysResponsive) {
  // The limit gVisor's kernel enforces (RLIMIT_NPROC), rootful and
  // rootless: in force inside, and the agent cannot raise it.
  CommandResult limits =
      Lazaret(ws_->path(), {"run", "--", "bash", "-c",
                            "echo soft=$(ulimit -Su) hard=$(ulimit -Hu); "
                            "(ulimit -Su unlimited 2>/dev/null || ulimit -Hu 8192 2>/dev/null) && "
                            "echo RAISED || echo kept"});
  ASSERT_EQ(limits.exit_code, 0) << limits.err;
  EXPECT_THAT(limits.out, HasSubstr("soft=4096 hard=4096"));
  EXPECT_THAT(limits.out, HasSubstr("kept"));
  EXPECT_THAT(limits.out, Not(HasSubstr("RAISED")));
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid = SpawnLazaret(
      ws_->path(),
      {"run", "--", "sh", "-c",
       "touch /workspace/bombing; (b(){ b|b& }; b) 2>/dev/null; sleep 8; echo contained"},
      {}, log);
  bool ended = false;
  struct Reaper {
    pid_t pid;
    bool* ended;
    ~Reaper() {
      if (*ended) return;
      WaitChild(pid, 120);
      Lazaret("/", {"clean"});  // what a killed session left
    }
  } reaper{pid, &ended};
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(ws_->path() + "/bombing"); }, std::chrono::seconds(60)))
      << test::ReadFile(log);
  const std::string sandbox = "lazaret-" + id + "-sandbox";
  if (!IsRootless()) {
    EXPECT_EQ(Inspect(sandbox, "{{.HostConfig.PidsLimit}}"), "4096");
  }
  // While the bomb runs (8 s, until the command ends and the sandbox with
  // it): the host starts processes promptly.
  int status = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (std::chrono::steady_clock::now() < end && !ended) {
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult t = test::Run({"true"});
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_EQ(t.exit_code, 0) << "the host could not start a process during the fork bomb";
    EXPECT_LT(ms, 5000) << "the host stopped answering during the fork bomb";
    ended = waitpid(pid, &status, WNOHANG) == pid;
  }
  // Held: the bomb's tasks churn at the limit (measured: rootful the
  // command usually finishes; rootless, on two shared cores, the sentry may
  // still be busy with them). Either way the user stays in control: a
  // session that has not ended by itself stops on request, promptly, and
  // leaves nothing behind.
  if (!ended) {
    ended = test::WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                          std::chrono::seconds(10));
    if (!ended) {
      CommandResult stop = Lazaret("/", {"stop", id});
      EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
      const int code = WaitChild(pid, 60);
      EXPECT_NE(code, -1) << "a stopped fork-bombed session did not end: " << test::ReadFile(log);
      if (code == -1) Lazaret("/", {"clean"});
    } else {
      EXPECT_THAT(test::ReadFile(log), HasSubstr("contained"));
    }
    ended = true;
  } else {
    EXPECT_THAT(test::ReadFile(log), HasSubstr("contained"));
  }
  ExpectNoProcessesOf(id);
}

// The end-of-session workspace scan (docs/git-shadow.md "Planted
// repositories"): every git directory the session planted or changed - a
// nested .git, a gitfile, a bare layout, one with core.worktree, one deeper
// than 64 levels, an edit of a pre-existing clone - is neutralised, so
// host git status/log/diff in it and below it runs nothing the agent chose;
// the agent's files stay and can be restored; an untouched clone is left
// exactly as it was.
TEST_F(RunE2eTest, PlantedRepositoriesAreNeutralisedAndHostGitRunsNothing) {
  const std::string marker = aux_->path() + "/MARKER";
  const std::string ws = ws_->path();
  auto host = [&](const std::string& dir, const std::string& cmd) {
    return RunAs(dir, {"sh", "-c", cmd});
  };
  ASSERT_EQ(host(ws,
                 "git init -q pre/old && git init -q pre/edited && "
                 "for r in pre/old pre/edited; do (cd $r && echo a > a && git add a && "
                 "git -c user.name=D -c user.email=d@x commit -qm dev); done")
                .exit_code,
            0);
  const std::string old_before = host(ws,
                                      "cd pre/old && git rev-parse HEAD && "
                                      "stat -c '%a %Y %Z' .git .git/config .git/HEAD")
                                     .out;
  std::string deep = "deep";
  for (int i = 0; i < 70; ++i) deep += "/d";
  // Inside: each layout, armed with everything host git might run.
  const std::string arm =
      "arm() { for k in core.fsmonitor core.pager diff.external core.sshCommand; do "
      "git config --file \"$1/config\" $k 'touch " +
      marker +
      "'; done; mkdir -p \"$1/hooks\"; "
      "printf '#!/bin/sh\\ntouch " +
      marker +
      "\\n' > \"$1/hooks/post-checkout\"; "
      "chmod +x \"$1/hooks/post-checkout\"; }; "
      "repo() { mkdir -p \"$1\" && cd \"$1\" && git init -q && echo a > a && git add a && "
      "git -c user.name=A -c user.email=a@x commit -qm agent && cd /workspace; }; ";
  CommandResult r =
      Run({"run", "--", "sh", "-c",
           "set -e; cd /workspace; " + arm +
               "repo sub; arm sub/.git; arm pre/edited/.git; "
               "git init -q --bare store/bare.git; arm store/bare.git; "
               "mkdir gf && echo 'gitdir: ../store/bare.git' > gf/.git; "
               "git init -q --bare wt/meta; git --git-dir=wt/meta config core.bare false; "
               "git --git-dir=wt/meta config core.worktree ..; arm wt/meta; "
               "repo " +
               deep + "; arm " + deep + "/.git; echo done"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(r.out, HasSubstr("done"));
  EXPECT_THAT(r.err, HasSubstr("neutralised a git repository"));
  EXPECT_THAT(r.err, HasSubstr("Restore"));

  // Host git in and below every one of them runs nothing and finds none
  // of them.
  for (const std::string& rel :
       {std::string("sub"), std::string("sub/x/y"), std::string("pre/edited"), std::string("gf"),
        std::string("store/bare.git"), std::string("wt"), std::string("wt/meta"), deep,
        deep + "/below"}) {
    const std::string dir = ws + "/" + rel;
    ASSERT_EQ(host(ws, "mkdir -p '" + rel + "'").exit_code, 0);
    CommandResult g = host(dir,
                           "git status; git log -1; git diff; git diff HEAD; "
                           "git rev-parse --absolute-git-dir");
    EXPECT_FALSE(Exists(marker)) << "host git in " << rel << " ran the agent's command: " << g.out
                                 << g.err << "\n"
                                 << r.err;
    EXPECT_THAT(g.out, Not(HasSubstr(ws + "/"))) << rel << " is still a repository";
    unlink(marker.c_str());
  }
  // The agent's work is all there; the untouched clone is as it was.
  EXPECT_TRUE(Exists(ws + "/sub/a"));
  EXPECT_TRUE(Exists(ws + "/" + deep + "/a"));
  EXPECT_EQ(host(ws,
                 "cd pre/old && git rev-parse HEAD && "
                 "stat -c '%a %Y %Z' .git .git/config .git/HEAD")
                .out,
            old_before);
  EXPECT_THAT(r.err, Not(HasSubstr("pre/old")));
  // The printed restore command brings the repository back (armed: it is
  // the agent's).
  CommandResult q = host(ws, "ls -d sub/.git.lazaret-quarantine-*");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const std::string qdir = Trim(q.out);
  const std::string id = qdir.substr(qdir.find("quarantine-") + 11);
  ASSERT_EQ(host(ws, "mv " + qdir + " sub/.git && mv sub/.git/HEAD.lazaret-quarantine-" + id +
                         " sub/.git/HEAD")
                .exit_code,
            0);
  EXPECT_THAT(r.err, HasSubstr("mv " + ws + "/sub/.git.lazaret-quarantine-" + id + " " + ws +
                               "/sub/.git && mv " + ws + "/sub/.git/HEAD.lazaret-quarantine-" + id +
                               " " + ws + "/sub/.git/HEAD"));
  EXPECT_EQ(Trim(host(ws + "/sub", "git log -1 --format=%s").out), "agent");
}

// A session whose `lazaret run` was killed never ran its end-of-session
// scan: `lazaret clean` runs it from the snapshot in the session directory
// (planted repository neutralised, setuid bit stripped), after the sandbox
// is gone.
// A session whose worker was killed is reaped by the supervisor (through
// lazaret-sessiond's Reap), which runs the workspace scan the session never
// ran.
TEST_F(RunE2eTest, ReapingAKilledSessionRunsItsWorkspaceScan) {
  const std::string marker = aux_->path() + "/MARKER";
  const std::string log = aux_->path() + "/run.log";
  const pid_t pid =
      SpawnLazaret(ws_->path(),
                   {"run", "--", "sh", "-c",
                    "cd /workspace && mkdir sub && cd sub && git init -q && "
                    "git config core.fsmonitor 'touch " +
                        marker +
                        "' && echo a > a && git add a && "
                        "git -c user.name=A -c user.email=a@x commit -qm agent && cd .. && "
                        "cp /bin/true suid && chmod 4755 suid && touch planted && sleep 300"},
                   {}, log);
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(ws_->path() + "/planted"); }, std::chrono::seconds(60)))
      << test::ReadFile(log);
  const std::string id = WaitForRunningSession(60);
  ASSERT_FALSE(id.empty()) << test::ReadFile(log);
  const pid_t worker = SessionWorkerPid(id);
  ASSERT_GT(worker, 0);
  kill(worker, SIGKILL);
  WaitChild(pid, 30);
  ASSERT_TRUE(test::WaitFor([&] { return !Contains(SessionDirs(), id); }, std::chrono::seconds(60)))
      << "the supervisor did not reap session " << id;
  // The reap's notices reach the supervisor's log with sessiond's answer,
  // just after the session directory is gone.
  const std::string log_path = Env().runtime_dir + "/supervisor.log";
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return test::ReadFile(log_path).find("session " + id + " reaped") != std::string::npos;
      },
      std::chrono::seconds(30)));
  const std::string supervisor_log = test::ReadFile(log_path);
  EXPECT_THAT(supervisor_log, HasSubstr("neutralised a git repository"));
  EXPECT_THAT(supervisor_log, HasSubstr(ws_->path() + "/suid: removed setuid"));
  EXPECT_FALSE(Exists(ws_->path() + "/sub/.git"));
  struct stat st {};
  ASSERT_EQ(stat((ws_->path() + "/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 06000, 0u);
  CommandResult g = RunAs(ws_->path() + "/sub", {"sh", "-c", "git status; git diff"});
  EXPECT_FALSE(Exists(marker)) << "host git ran the agent's fsmonitor: " << g.out << g.err;
  EXPECT_TRUE(Exists(ws_->path() + "/sub/a"));
}

// The scan changes nothing it did not create: directories 0555, files with
// odd modes and old times keep mode, owner and times (B3).
TEST_F(RunE2eTest, EndOfSessionScanLeavesTheDevelopersFilesAsTheyWere) {
  const std::string ws = ws_->path();
  ASSERT_EQ(RunAs(ws, {"sh", "-c",
                       "mkdir -p ro/inner keep && echo x > ro/inner/f && echo y > odd && "
                       "echo z > keep/secret && chmod 0604 odd && chmod 0400 keep/secret && "
                       "git init -q clone && touch -d 2001-02-03 odd ro/inner/f keep/secret "
                       "clone/.git/config && chmod 0555 ro/inner ro && chmod 0711 keep"})
                .exit_code,
            0);
  const std::string stat_cmd = "find . -exec stat -c '%n %a %u %g %Y %Z' {} + | sort";
  const std::string before = RunAs(ws, {"sh", "-c", stat_cmd}).out;
  CommandResult r = Run({"run", "--", "sh", "-c", "ls -R /workspace > /dev/null; echo ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunAs(ws, {"sh", "-c", stat_cmd}).out, before);
}

// Setuid and setgid bits and file capabilities the agent sets in the
// workspace and in an rw volume are stripped by the periodic sweep while
// the session runs and at its end, and the report lists them.
TEST_F(RunE2eTest, SetuidSetgidAndCapabilitiesAreStrippedAndReported) {
  UserDir rw("vrw");
  const std::string cfg = Config("[[profiles.t1.volumes]]\nhost = \"" + rw.path() +
                                 "\"\ncontainer = \"/rw\"\nmode = \"rw\"\n");
  const std::string log = aux_->path() + "/run.log";
  // security.capability through setxattr(2) (perl-base is in every Debian
  // image; 188 is setxattr on x86_64): a v2 blob granting cap_net_raw.
  const std::string setcap =
      "perl -e '$v = pack(\"VVVVV\", 0x02000002, 1<<13, 1<<13, 0, 0); $n = "
      "\"security.capability\"; "
      "$p = $ARGV[0]; print syscall(188, $p, $n, $v, length($v), 0) == 0 "
      "? \"CAP-SET\\n\" : \"CAP-REFUSED $!\\n\"' ";
  const pid_t pid = SpawnLazaret(
      ws_->path(),
      {"run", "--config", cfg, "t1", "--", "sh", "-c",
       "cd /workspace && cp /bin/true suid && chmod 4755 suid && cp /bin/true sgid && "
       "chmod 2755 sgid && mkdir gdir && chmod 2775 gdir && cp /bin/true capped && " +
           setcap +
           "capped && cp /bin/true /rw/vsuid && chmod 6755 /rw/vsuid && touch ready && "
           "i=0; while [ ! -e done ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
           "cp /bin/true late && chmod 4711 late"},
      {}, log);
  auto mode = [](const std::string& p) {
    struct stat st {};
    return lstat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 07777;
  };
  ASSERT_TRUE(
      test::WaitFor([&] { return Exists(ws_->path() + "/ready"); }, std::chrono::seconds(60)))
      << test::ReadFile(log);
  // The periodic sweep, while the sandbox still runs.
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return (mode(ws_->path() + "/suid") & 06000) == 0 &&
               (mode(rw.path() + "/vsuid") & 06000) == 0;
      },
      std::chrono::seconds(40)))
      << "still setuid while the session runs: " << std::oct << mode(ws_->path() + "/suid");
  ws_->Write("done", "");
  ASSERT_EQ(WaitChild(pid, 120), 0) << test::ReadFile(log);
  const std::string out = test::ReadFile(log);
  for (const std::string& f : {ws_->path() + "/suid", ws_->path() + "/sgid", ws_->path() + "/gdir",
                               ws_->path() + "/late", rw.path() + "/vsuid"}) {
    EXPECT_EQ(mode(f) & 06000, 0u) << f << " mode " << std::oct << mode(f);
    EXPECT_THAT(out, HasSubstr(f + ": removed set")) << out;
  }
  EXPECT_EQ(mode(ws_->path() + "/suid"), 0755u);
  EXPECT_EQ(mode(ws_->path() + "/gdir"), 0775u);
  EXPECT_LT(getxattr((ws_->path() + "/capped").c_str(), "security.capability", nullptr, 0), 0)
      << "file capabilities reached the host";
  // gVisor may refuse security.capability inside; when it stores it, the
  // scan must have removed it and said so.
  if (out.find("CAP-SET") != std::string::npos) {
    EXPECT_THAT(out, HasSubstr(ws_->path() + "/capped: removed file capabilities")) << out;
  }
}

// Issue 7 C2: what the agent creates in the workspace belongs to the
// workspace's owner, not host root. Rootful (the agent is host root and no
// uid mapping works with podman 4.3's storage here) the workspace sweep
// gives it back (docs/operations.md "Rootful file ownership"); rootless,
// podman's mapping makes it the developer's already. The workspace is a
// repository owned by a non-root user; the agent makes a file, a directory
// with a file in it, a symlink and a commit.
TEST_F(RunE2eTest, FilesTheAgentCreatesBelongToTheWorkspaceOwner) {
  uid_t uid = Env().uid;
  gid_t gid = Env().gid;
  std::map<std::string, std::string> sudo;
  const std::string repo = ws_->path();
  ASSERT_EQ(RunAs(repo, {"sh", "-c",
                         "git init -q -b main . && echo a > a.txt && git add a.txt && "
                         "git -c user.name=D -c user.email=d@x commit -qm 'first commit'"})
                .exit_code,
            0);
  if (!IsRootless()) {
    // The rootless test user when it exists, else a uid without an account
    // (ownership does not need one).
    const char* name = std::getenv("LAZARET_E2E_USER");
    const passwd* pw = getpwnam(name != nullptr && *name != '\0' ? name : LAZARET_E2E_USER_DEFAULT);
    uid = pw != nullptr ? pw->pw_uid : 4242;
    gid = pw != nullptr ? pw->pw_gid : 4242;
    ASSERT_EQ(
        test::Run({"chown", "-R", std::to_string(uid) + ":" + std::to_string(gid), repo}).exit_code,
        0);
    // As `sudo lazaret run` in the developer's repository: host git (as
    // root) trusts the repository of SUDO_UID and no other.
    sudo["SUDO_UID"] = std::to_string(uid);
  }
  CommandResult r =
      Run({"run", "--", "sh", "-c",
           "cd /workspace && echo x > made.txt && mkdir -p dir/sub && echo y > dir/sub/inner.txt "
           "&& ln -s made.txt link && git add made.txt dir link && "
           "git -c user.name=A -c user.email=a@x commit -qm agent-files && id -u"},
          sudo);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Trim(r.out), "0") << "the agent is root inside";
  auto owner = [](const std::string& p) {
    struct stat st {};
    return lstat(p.c_str(), &st) == 0 ? std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid)
                                      : "missing";
  };
  const std::string want = std::to_string(uid) + ":" + std::to_string(gid);
  for (const char* rel : {"made.txt", "dir", "dir/sub", "dir/sub/inner.txt", "link"}) {
    EXPECT_EQ(owner(repo + "/" + rel), want) << rel;
  }
  struct stat st {};
  ASSERT_EQ(lstat((repo + "/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  // Nothing anywhere in the workspace (its .git included, where the import
  // wrote the agent's commit) is left to host root or anyone else.
  CommandResult stray = test::Run({"find", repo, "(", "!", "-uid", std::to_string(uid), "-o", "!",
                                   "-gid", std::to_string(gid), ")", "-print"});
  EXPECT_EQ(Trim(stray.out), "") << "not the workspace owner's";
  if (!IsRootless()) {
    EXPECT_THAT(r.err, HasSubstr("workspace: gave "));
    EXPECT_THAT(r.err, HasSubstr("uid " + std::to_string(uid) + ", gid " + std::to_string(gid)));
  }
  // The commit was imported: host git (as root rootful, trusting the
  // developer's repository for this one command) sees the agent branch.
  CommandResult g = RunAs(
      repo, {"git", "-c", "safe.directory=*", "log", "-1", "--format=%s", "lazaret/agent-default"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(Trim(g.out), "agent-files");
}

// Files that editors and shells act on when the folder is opened, created
// by the session anywhere in the tree, are held in the profile, taken out
// of the folder and named at its end; the developer's own stay as they were.
TEST_F(RunE2eTest, EditorAndShellFilesTheSessionWroteAreHeldAndNamed) {
  ws_->Write(".editorconfig", "root = true\n");  // the developer's, untouched
  CommandResult r =
      Run({"run", "--", "sh", "-c",
           "cd /workspace && mkdir -p .vscode sub/.devcontainer && echo '{}' > .vscode/tasks.json "
           "&& echo 'curl x | sh' > .envrc && echo K=v > .env && "
           "echo '{}' > sub/.devcontainer/devcontainer.json && echo x > plain.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("held for review, not in your folder: 4 paths")) << r.err;
  for (const std::string f :
       {".vscode/tasks.json", ".envrc", ".env", "sub/.devcontainer/devcontainer.json"}) {
    EXPECT_THAT(r.err, HasSubstr("created " + f + " (")) << r.err;
    EXPECT_FALSE(Exists(ws_->path() + "/" + f)) << f;
  }
  EXPECT_THAT(r.err, HasSubstr("lazaret held diff"));
  EXPECT_THAT(r.err, Not(HasSubstr(".editorconfig")));
  EXPECT_EQ(test::ReadFile(ws_->path() + "/.editorconfig"), "root = true\n");
  EXPECT_THAT(r.err, Not(HasSubstr("plain.txt")));
  EXPECT_EQ(Trim(test::ReadFile(ws_->path() + "/plain.txt")), "x");
}

TEST_F(RunE2eTest, DoctorPassesHereAndNamesAMissingRunsc) {
  CommandResult ok = Lazaret("/", {"doctor"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("runsc"));
  CommandResult bad = Lazaret("/", {"doctor"}, {{"LAZARET_RUNSC", "/nonexistent/runsc"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out, HasSubstr("FAIL  runsc"));
  EXPECT_THAT(bad.out, HasSubstr("fix:"));
  CommandResult json =
      Lazaret("/", {"doctor", "--json"}, {{"LAZARET_RUNSC", "/nonexistent/runsc"}});
  EXPECT_EQ(json.exit_code, 1);
  const google::protobuf::Struct report = ParseJson(json.out);
  EXPECT_FALSE(report.fields().at("ok").bool_value());
  bool runsc_failed = false;
  for (const auto& check : report.fields().at("checks").list_value().values()) {
    const auto& f = check.struct_value().fields();
    if (absl::StartsWith(f.at("name").string_value(), "runsc") &&
        f.at("status").string_value() == "fail") {
      runsc_failed = !f.at("fix").string_value().empty();
    }
  }
  EXPECT_TRUE(runsc_failed) << json.out;
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
