// What escalation opens between sandbox and host, and nothing more: with
// [escalation] enabled = false there is no mount and no host-uds flag; with
// it on, host-uds=open lets the sandbox connect to host sockets it can see
// but creates none, reaches no abstract socket and no service socket, and
// the broker directory holds only escalate.sock. A socket a host process
// binds inside the workspace IS reachable (the documented exposure of
// host-uds=open; asserted so that a change is noticed). A socket_dir others
// can enter stops `lazaret run` before any container exists. The client
// needs nothing from the image: it runs in one without a single file.
// Runs as root.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
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

bool Exists(const std::string& p) {
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

TEST_F(EscE2eTest, DisabledEscalationMountsNothingAndPassesNoHostUds) {
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
  const auto off_procs = RunscProcesses(Inspect(off->sandbox(), "{{.Id}}"));
  ASSERT_FALSE(off_procs.empty()) << "no runsc process names the disabled sandbox";
  EXPECT_FALSE(AnyArgContains(off_procs, "host-uds"));

  // The control: the enabled sandbox's runsc does carry the flag.
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const auto a_procs = RunscProcesses(Inspect(a->sandbox(), "{{.Id}}"));
  ASSERT_FALSE(a_procs.empty());
  EXPECT_TRUE(AnyArgContains(a_procs, "host-uds=open"));
  EXPECT_FALSE(AnyArgContains(a_procs, "host-uds=all"));
  EXPECT_FALSE(AnyArgContains(a_procs, "host-uds=create"));
}

TEST_F(EscE2eTest, BrokerDirectoryHoldsOnlyTheSocket) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  CommandResult ls = a->Exec({"ls", "-A", "/run/lazaret/broker"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "escalate.sock\n");
  CommandResult link = a->Exec({"readlink", "/run/lazaret/escalate.sock"});
  EXPECT_EQ(Trim(link.out), "broker/escalate.sock");
  CommandResult mk = a->Shell("mkdir /run/lazaret/broker/x 2>&1");
  EXPECT_THAT(mk.out, HasSubstr("Read-only file system"));
}

TEST_F(EscE2eTest, HostUdsOpensNothingElse) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string ws = W().Workspace(Slot::kA);

  // A socket bound inside stays inside.
  const std::string inside = NewId("inside-") + ".sock";
  CommandResult b = Raw(*a, {"unix-bind", "/workspace/" + inside});
  EXPECT_THAT(b.out, testing::AnyOf(StartsWith("bound"), StartsWith("err "))) << b.err;
  EXPECT_FALSE(Exists(ws + "/" + inside)) << "a socket bound inside appeared on the host";

  // The services' sockets exist on the host and cannot be reached.
  for (const char* svc : {"supervisor", "configd", "netpolicyd", "brokerd"}) {
    const std::string path = Env().runtime_dir + "/" + svc + ".sock";
    EXPECT_TRUE(Exists(path)) << path;
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

  // The documented exposure: a socket a host process binds in the workspace.
  const std::string host_sock = NewId("host-") + ".sock";
  const int host_fd = Listen(ws + "/" + host_sock);
  ASSERT_GE(host_fd, 0);
  chmod((ws + "/" + host_sock).c_str(), 0777);
  CommandResult hc = Raw(*a, {"unix-connect", "/workspace/" + host_sock});
  EXPECT_EQ(Trim(hc.out), "connected") << hc.err;
  EXPECT_TRUE(Accepted(host_fd, 5000)) << "the host listener saw no connection";
  close(host_fd);
  unlink((ws + "/" + host_sock).c_str());
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
  const std::string config = d.Write(
      "min.toml", absl::StrCat("[escalation]\nauto_approve = [\"uname -s\"]\n\n[profiles.escmin]\n"
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
