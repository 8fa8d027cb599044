// What escalation opens between sandbox and host, and nothing more. runsc
// never gets a host-uds flag, with escalation on or off: the sandbox
// reaches the broker only through the relay in its network sidecar
// (127.0.0.1:7457 on the loopback they share), and the session's socket
// directory is bound into the sidecar alone. So no host Unix socket is
// reachable from inside: not one a host program binds in the workspace or
// a volume, before the session or during it, not a service socket, not an
// abstract one in the shared network namespace; a socket bound inside stays
// inside. With enabled = false there is no mount and no relay. A socket_dir
// others can enter stops `lazaret run` before any container exists. The
// client needs nothing from the image: it runs in one without a single
// file. Runs as root.
#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

bool IsolationExists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

bool AnyArgContains(const std::vector<std::vector<std::string>>& procs, const std::string& s) {
  for (const auto& argv : procs) {
    for (const auto& a : argv) {
      if (absl::StrContains(a, s)) return true;
    }
  }
  return false;
}

socklen_t UnixAddr(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (!path.empty() && path[0] == '@') {
    std::memcpy(addr->sun_path + 1, path.data() + 1, path.size() - 1);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  }
  std::snprintf(addr->sun_path, sizeof addr->sun_path, "%s", path.c_str());
  return sizeof *addr;
}

int Listen(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr;
  const socklen_t len = UnixAddr(path, &addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool Connects(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr;
  const socklen_t len = UnixAddr(path, &addr);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  close(fd);
  return ok;
}

// Runs `fn` on a thread that joined the network namespace of `pid` first
// (setns moves only the calling thread).
template <typename Fn>
void InNetns(pid_t pid, Fn fn) {
  std::thread t([&] {
    const int ns = open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
      if (ns >= 0) close(ns);
      return;
    }
    close(ns);
    fn();
  });
  t.join();
}

bool Accepted(int listen_fd, int timeout_ms) {
  pollfd p{listen_fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return false;
  const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return false;
  close(c);
  return true;
}

// The source of a container's bind mount at `destination`, and whether it
// is writable ("" when there is none).
std::string MountSource(const std::string& container, const std::string& destination) {
  return Inspect(container, "{{range .Mounts}}{{if eq .Destination \"" + destination +
                                "\"}}{{.Source}}{{end}}{{end}}");
}
std::string MountRw(const std::string& container, const std::string& destination) {
  return Inspect(container, "{{range .Mounts}}{{if eq .Destination \"" + destination +
                                "\"}}{{.RW}}{{end}}{{end}}");
}

// A TCP connect to the relay's port from inside, with bash's /dev/tcp (the
// sandbox image's own tool).
CommandResult RelayConnect(const net::NetSession& s) {
  return s.Exec({"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/7457 && echo open || echo closed"});
}

// A host program's socket: bound by this process, open to every uid, and
// reachable from the host (the control).
struct HostListener {
  explicit HostListener(const std::string& p) : path(p), fd(Listen(p)) {
    if (fd >= 0) chmod(path.c_str(), 0777);
  }
  ~HostListener() {
    if (fd >= 0) close(fd);
    unlink(path.c_str());
  }
  // A connect from the host itself arrives (and is taken off the queue).
  bool LiveOnTheHost() const { return Connects(path) && Accepted(fd, 1000); }
  std::string path;
  int fd;
};

TEST_F(EscE2eTest, NoHostUdsFlagWithEscalationOnOrOffAndTheRelayOnlyWhenOn) {
  net::NetSession* off = S(Slot::kOff);
  ASSERT_NE(off, nullptr) << Why(Slot::kOff);
  CommandResult r = off->Shell(
      "for p in /run/lazaret/escalate /run/lazaret/broker /run/lazaret/certs "
      "/run/lazaret/escalate.sock; do if [ -e \"$p\" ] || [ -L \"$p\" ]; then echo \"$p\"; fi; "
      "done");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "present with escalation disabled";
  for (const char* m : {"/run/lazaret/broker", "/run/lazaret/certs", "/run/lazaret/escalate"}) {
    EXPECT_EQ(HostMountSource(*off, m), "") << m;
  }
  EXPECT_EQ(MountSource(off->sidecar(), "/run/lazaret/broker"), "");
  EXPECT_EQ(Trim(RelayConnect(*off).out), "closed") << "a relay without escalation";
  const auto off_procs = RunscProcesses(Inspect(off->sandbox(), "{{.Id}}"));
  ASSERT_FALSE(off_procs.empty()) << "no runsc process names the disabled sandbox";
  EXPECT_FALSE(AnyArgContains(off_procs, "host-uds"));

  // Escalation on: the relay answers inside, and runsc still has no
  // host-uds flag at all (it did before the relay, so this is what changed).
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  EXPECT_EQ(Trim(RelayConnect(*a).out), "open");
  const auto a_procs = RunscProcesses(Inspect(a->sandbox(), "{{.Id}}"));
  ASSERT_FALSE(a_procs.empty());
  EXPECT_TRUE(AnyArgContains(a_procs, "network=host")) << "the control: these are runsc's flags";
  EXPECT_FALSE(AnyArgContains(a_procs, "host-uds"));
}

// The session's socket directory is the sidecar's alone, read-only, and
// holds only the socket; the sandbox has no broker mount and no link.
TEST_F(EscE2eTest, SocketDirectoryIsBoundIntoTheSidecarOnly) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string dir = MountSource(a->sidecar(), "/run/lazaret/broker");
  ASSERT_FALSE(dir.empty()) << "the sidecar has no broker mount";
  EXPECT_EQ(MountRw(a->sidecar(), "/run/lazaret/broker"), "false");
  EXPECT_EQ(Trim(test::Run({"ls", "-A", dir}).out), "escalate.sock");
  EXPECT_EQ(HostMountSource(*a, "/run/lazaret/broker"), "");
  CommandResult r = a->Shell(
      "for p in /run/lazaret/broker /run/lazaret/escalate.sock; do if [ -e \"$p\" ] || "
      "[ -L \"$p\" ]; then echo \"$p\"; fi; done; echo done");
  EXPECT_EQ(r.out, "done\n") << r.err;
  // The only escalation mounts inside are the certificates and the client.
  EXPECT_NE(HostMountSource(*a, "/run/lazaret/certs"), "");
  EXPECT_NE(HostMountSource(*a, "/run/lazaret/escalate"), "");
}

// Sockets a host program binds while the session runs - in the workspace,
// in a volume - are refused from inside, as are the services' sockets and an
// abstract socket in the shared network namespace; a socket bound inside
// stays inside.
TEST_F(EscE2eTest, NoHostSocketBoundDuringTheSessionIsReachable) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string ws = W().Workspace(Slot::kA);
  const std::string volume = HostMountSource(*a, "/opt/probe");
  ASSERT_FALSE(volume.empty()) << "the probe volume is not mounted";

  // A socket bound inside stays inside.
  const std::string inside = NewId("inside-") + ".sock";
  CommandResult b = Raw(*a, {"unix-bind", "/workspace/" + inside});
  EXPECT_THAT(b.out, testing::AnyOf(StartsWith("bound"), StartsWith("err "))) << b.err;
  EXPECT_FALSE(IsolationExists(ws + "/" + inside)) << "a socket bound inside appeared on the host";

  // Host programs' sockets, bound now, in the workspace (also a
  // subdirectory, as an ssh-agent or a database would) and in a volume.
  ASSERT_EQ(RunAs(ws, {"mkdir", "-p", "run"}).exit_code, 0);
  const std::string ws_sock = NewId("host-") + ".sock";
  const std::string sub_sock = "run/" + NewId("agent-") + ".sock";
  const std::string vol_sock = NewId("vol-") + ".sock";
  HostListener in_ws(ws + "/" + ws_sock);
  HostListener in_sub(ws + "/" + sub_sock);
  HostListener in_vol(volume + "/" + vol_sock);
  for (const HostListener* l : {&in_ws, &in_sub, &in_vol}) {
    ASSERT_GE(l->fd, 0) << l->path;
    ASSERT_TRUE(l->LiveOnTheHost()) << "the control connect to " << l->path << " failed";
  }
  for (const std::string& inside_path :
       {"/workspace/" + ws_sock, "/workspace/" + sub_sock, "/opt/probe/" + vol_sock}) {
    CommandResult c = Raw(*a, {"unix-connect", inside_path});
    EXPECT_THAT(c.out, StartsWith("err ")) << inside_path << " reachable from inside: " << c.out;
    // The socket is listed there (the refusal is gVisor's, not a missing
    // path; without host-uds even stat is refused, so the type comes from
    // the directory listing).
    const size_t slash = inside_path.rfind('/');
    CommandResult listed = a->Exec({"find", inside_path.substr(0, slash), "-maxdepth", "1", "-name",
                                    inside_path.substr(slash + 1), "-printf", "%y"});
    EXPECT_EQ(listed.out, "s") << inside_path << ": " << listed.err;
  }
  for (const HostListener* l : {&in_ws, &in_sub, &in_vol}) {
    EXPECT_FALSE(Accepted(l->fd, 300)) << l->path << " saw a connection from inside";
  }

  // The services' sockets exist on the host and cannot be reached.
  for (const char* svc : {"supervisor", "configd", "netpolicyd", "brokerd"}) {
    const std::string path = Env().runtime_dir + "/" + svc + ".sock";
    EXPECT_TRUE(IsolationExists(path)) << path;
    CommandResult c = Raw(*a, {"unix-connect", path});
    EXPECT_THAT(c.out, StartsWith("err ")) << path << " reachable from inside";
  }

  // An abstract socket in the sidecar's network namespace (the sandbox's).
  const pid_t router = a->RouterPid();
  ASSERT_GT(router, 0);
  const std::string abstract = "@" + NewId("lzt-abstract-");
  int abstract_fd = -1;
  bool host_reaches = false;
  InNetns(router, [&] {
    abstract_fd = Listen(abstract);
    host_reaches = abstract_fd >= 0 && Connects(abstract);
  });
  ASSERT_GE(abstract_fd, 0) << "cannot listen in the router's namespace";
  ASSERT_TRUE(host_reaches) << "the control connect in the namespace failed";
  ASSERT_TRUE(Accepted(abstract_fd, 1000));
  CommandResult ab = Raw(*a, {"unix-connect", abstract});
  EXPECT_THAT(ab.out, StartsWith("err ")) << "abstract socket reachable from inside";
  EXPECT_FALSE(Accepted(abstract_fd, 200));
  close(abstract_fd);

  // And escalation itself still works in this very sandbox.
  CommandResult esc = Escalate(*a, {"--", "uname", "-s"});
  EXPECT_EQ(esc.exit_code, 0) << esc.err;
  EXPECT_EQ(Trim(esc.out), "Linux");
}

// Sockets that exist before the session starts - a host program listening in
// the workspace and in a read-write volume - are refused from the first
// command on, in a session whose escalation works.
TEST_F(EscE2eTest, NoHostSocketBoundBeforeTheSessionIsReachable) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string probe = HostMountSource(*a, "/opt/probe");
  ASSERT_FALSE(probe.empty());
  UserDir d("escpre");
  ASSERT_EQ(RunAs(d.path(), {"mkdir", "-m", "0700", "ws", "vol"}).exit_code, 0);
  ASSERT_EQ(RunAs(d.path() + "/ws", {"mkdir", "-p", ".ssh-agent"}).exit_code, 0);
  HostListener in_ws(d.path() + "/ws/db.sock");
  HostListener in_sub(d.path() + "/ws/.ssh-agent/agent.sock");
  HostListener in_vol(d.path() + "/vol/app.sock");
  for (const HostListener* l : {&in_ws, &in_sub, &in_vol}) {
    ASSERT_GE(l->fd, 0) << l->path;
    ASSERT_TRUE(l->LiveOnTheHost()) << "the control connect to " << l->path << " failed";
  }
  const std::string config = d.Write(
      "pre.toml",
      absl::StrCat("[escalation]\nauto_approve = [{ exact = \"uname -s\" }]\n\n[profiles.escpre]\n"
                   "image = "
                   "\"localhost/lazaret-sandbox:trixie\"\n\n[[profiles.escpre.volumes]]\nhost = \"",
                   probe,
                   "\"\ncontainer = \"/opt/probe\"\nmode = \"ro\"\n\n"
                   "[[profiles.escpre.volumes]]\nhost = \"",
                   d.path(), "/vol\"\ncontainer = \"/opt/vol\"\nmode = \"rw\"\n"));
  const std::string raw = std::string(kRawClient);
  CommandResult r =
      Lazaret(d.path() + "/ws",
              {"run", "--config", config, "escpre", "--", "bash", "-c",
               absl::StrCat("for p in /workspace/db.sock /workspace/.ssh-agent/agent.sock "
                            "/opt/vol/app.sock; do t=$(find \"${p%/*}\" -maxdepth 1 -name "
                            "\"${p##*/}\" -printf %y); echo \"$p $t $(",
                            raw, " unix-connect \"$p\")\"; done; ", kClient, " -- uname -s")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* p :
       {"/workspace/db.sock", "/workspace/.ssh-agent/agent.sock", "/opt/vol/app.sock"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string(p) + " s err ")) << r.out << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr(std::string(p) + " connected"))) << r.out;
  }
  EXPECT_THAT(r.out, HasSubstr("Linux")) << "escalation in the same session: " << r.err;
  for (const HostListener* l : {&in_ws, &in_sub, &in_vol}) {
    EXPECT_FALSE(Accepted(l->fd, 300)) << l->path << " saw a connection from inside";
  }
}

// The pid of this mode's lazaret-brokerd (0 when none runs).
pid_t BrokerPid() {
  const std::string flag = "--runtime-dir=" + Env().runtime_dir;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  pid_t found = 0;
  while (dirent* e = readdir(proc)) {
    const std::string name = e->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = test::ReadFile("/proc/" + name + "/cmdline");
    const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (absl::EndsWith(argv0, "/lazaret-brokerd") &&
        cmdline.find(flag + std::string(1, '\0')) != std::string::npos) {
      found = std::stoi(name);
    }
  }
  closedir(proc);
  return found;
}

// A broker that crashes is restarted by the supervisor and takes the live
// session back in the same socket directory. The relay connects per
// connection, so the next request reaches the new broker, with nothing
// restarted in the sidecar or the sandbox.
TEST_F(EscE2eTest, RelayReachesARestartedBroker) {
  std::string ws;
  absl::StatusOr<std::unique_ptr<net::NetSession>> own = W().StartOwn(W().config(), kProfile, &ws);
  ASSERT_TRUE(own.ok()) << own.status();
  net::NetSession& s = **own;
  CommandResult before = Escalate(s, {"--", "uname", "-s"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const pid_t old_broker = BrokerPid();
  ASSERT_GT(old_broker, 0) << "no lazaret-brokerd for " << Env().runtime_dir;
  const pid_t router = s.RouterPid();
  ASSERT_GT(router, 0);
  ASSERT_EQ(kill(old_broker, SIGKILL), 0);
  CommandResult after;
  bool answered = false;
  for (int i = 0; i < 60 && !answered; ++i) {
    sleep(1);
    const pid_t now = BrokerPid();
    if (now <= 0 || now == old_broker) continue;
    after = Escalate(s, {"--", "uname", "-s"});
    answered = after.exit_code == 0;
  }
  EXPECT_TRUE(answered) << "no answer from the restarted broker: " << after.err;
  EXPECT_EQ(Trim(after.out), "Linux");
  EXPECT_EQ(s.RouterPid(), router) << "the sidecar's router was restarted";
}

// configd resolves socket_dir (a symlink the user wrote is the user's
// choice), and the broker then requires the directory it lands on to be
// private: here it is 0755, so the endpoint is refused and nothing starts.
TEST_F(EscE2eTest, SocketDirOthersCanEnterStopsTheRunBeforeAnyContainer) {
  UserDir d("escsym");
  ASSERT_EQ(RunAs(d.path(), {"mkdir", "-m", "0755", "target"}).exit_code, 0);
  ASSERT_EQ(RunAs(d.path(), {"mkdir", "-m", "0700", "ws"}).exit_code, 0);
  ASSERT_EQ(RunAs(d.path(), {"ln", "-s", "target", "link"}).exit_code, 0);
  const std::string config =
      d.Write("sym.toml", absl::StrCat("[escalation]\nenabled = true\nsocket_dir = \"", d.path(),
                                       "/link\"\n\n[profiles.escsym]\nimage = "
                                       "\"localhost/lazaret-sandbox:trixie\"\n"));
  CommandResult r = Lazaret(d.path() + "/ws", {"run", "--config", config, "escsym", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("host escalation could not be set up"));
  EXPECT_EQ(Trim(Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                         "label=io.lazaret.profile=escsym"})
                     .out),
            "");
  EXPECT_EQ(Trim(test::Run({"ls", "-A", d.path() + "/target"}).out), "")
      << "something was created in the refused directory";
}

// lazaret-escalate is static and reads nothing from the image: an image
// made of empty directories only (no libc, no shell, no /etc/passwd) runs
// it, and it gets the host's answer.
TEST_F(EscE2eTest, ClientRunsInAnImageWithoutLibc) {
  UserDir d("escmin");
  ASSERT_EQ(RunAs(d.path(), {"mkdir", "-m", "0755", "root", "ws"}).exit_code, 0);
  ASSERT_EQ(RunAs(d.path() + "/root", {"mkdir", "-p", "tmp", "etc", "run", "workspace"}).exit_code,
            0);
  ASSERT_EQ(RunAs(d.path(), {"tar", "-C", "root", "-cf", "nolibc.tar", "."}).exit_code, 0);
  const std::string image = "localhost/lazaret-e2e-nolibc:1";
  CommandResult imp = Podman({"import", d.path() + "/nolibc.tar", image});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  // Nothing in the image is a program or a library.
  CommandResult files = test::Run({"tar", "-tvf", d.path() + "/nolibc.tar"});
  ASSERT_EQ(files.exit_code, 0);
  EXPECT_THAT(files.out, Not(HasSubstr("-rw"))) << files.out;
  const std::string config =
      d.Write("min.toml", absl::StrCat("[escalation]\nauto_approve = [{ exact = \"uname -s\" }]\n\n"
                                       "[profiles.escmin]\n"
                                       "image = \"",
                                       image, "\"\n"));
  CommandResult r = Lazaret(d.path() + "/ws", {"run", "--config", config, "escmin", "--",
                                               "/run/lazaret/escalate", "--", "uname", "-s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Linux")) << r.err;
  (void)Podman({"rmi", "--force", image});
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
