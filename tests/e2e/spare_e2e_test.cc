// Spare sidecars end to end (docs/architecture.md "Spare sidecar"): once a
// session's worker has exited, lazaret-sessiond prepares a spare for the
// next `lazaret run` of the same workspace and profile (its network
// sidecar started, its router held), and that run adopts it. Only the
// sidecar is carried over, and only to the one session that adopts it:
// these tests check from the host and from inside that two sessions in a
// row share no file, no escalation certificate and no sandbox, that the
// sidecar after them is a new one, that a profile whose sidecar differs
// is not served by the spare, and that a spare is never taken for a
// session. Same binary, modes and fixtures as run_e2e_test.cc. Runs as
// root.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "tests/e2e/run_e2e_support.h"
#include "tests/e2e/workspace_test.h"

namespace lazaret::test::e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The escalation client's certificate inside the sandbox: kSandboxCertsDir
// (services/sessiond/gitshadow/sandbox_paths.h) and client.pem.
constexpr char kClientCert[] = "/run/lazaret/certs/client.pem";
// A spare is prepared after the session's worker has exited: its sidecar
// container started and its router answering.
constexpr int kSpareSeconds = 60;



std::string Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// The rest of the first line of `text` that starts with `prefix`.
std::string LineValue(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

// Closes a descriptor at the end of the scope.
class HeldFd {
 public:
  explicit HeldFd(int fd) : fd_(fd) {}
  ~HeldFd() {
    if (fd_ >= 0) close(fd_);
  }
  HeldFd(const HeldFd&) = delete;
  HeldFd& operator=(const HeldFd&) = delete;
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

// A process's start time (field 22 of /proc/<pid>/stat), which tells a pid
// reused by another process from the one seen before.
std::string StartTime(pid_t pid) {
  const std::string stat = test::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream in(stat.substr(paren + 1));
  std::string field;
  // Fields 3 (state) to 22 (starttime).
  for (int i = 3; i <= 22; ++i) {
    if (!(in >> field)) return "";
  }
  return field;
}

// What makes a sidecar the one it is, seen from the host: its container,
// its router process (the container's pid 1) and its network namespace.
struct Sidecar {
  std::string container_id;
  pid_t router = -1;
  std::string router_start;
  ino_t netns = 0;
  std::string error;  // why it could not be seen
};

Sidecar InspectSidecar(const std::string& session_id) {
  Sidecar s;
  const std::string name = "lazaret-" + session_id + "-sidecar";
  s.container_id = Inspect(name, "{{.Id}}");
  const std::string pid = Inspect(name, "{{.State.Pid}}");
  if (s.container_id.empty() || !absl::SimpleAtoi(pid, &s.router) || s.router <= 0) {
    s.error = "no running container " + name + " (pid '" + pid + "')";
    return s;
  }
  const std::string proc = "/proc/" + std::to_string(s.router);
  const std::string comm = Trim(test::ReadFile(proc + "/comm"));
  if (comm != "lazaret-netrout") {
    s.error = "pid 1 of " + name + " is '" + comm + "', not the router";
    return s;
  }
  s.router_start = StartTime(s.router);
  struct stat st {};
  if (stat((proc + "/ns/net").c_str(), &st) != 0) {
    s.error = "no network namespace of " + proc;
    return s;
  }
  s.netns = st.st_ino;
  return s;
}

// The names of this runtime directory's containers, spares' included.
std::vector<std::string> AllContainers() {
  CommandResult r = Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.runtime-dir=" + Env().runtime_dir});
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

bool ContainerExists(const std::string& name) { return Contains(AllContainers(), name); }

// The spare a test leaves is not counted (LeftBehind); the next `lazaret
// run` of another workspace ends it.
class SpareE2eTest : public WorkspaceTest {
 protected:
  // The tests before this one each ended a spare unused (every test has a
  // workspace of its own), which pauses spares (docs/architecture.md
  // "Spare sidecar"). A first session here: after it, either its spare
  // is ready or spares are paused with this workspace's request as the
  // one that resumes them; the test's own sessions start from either.
  void SetUp() override {
    WorkspaceTest::SetUp();
    CommandResult first = Run({"run", "--", "true"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_THAT(LeftBehind(), IsEmpty()) << "the first session did not end";
  }

  // A session in the workspace, then the spare it leaves, ready; "" (and a
  // failure) when none appears.
  std::string SessionThenSpare() {
    CommandResult r = Run({"run", "--", "true"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string id = WaitForReadySpare(ws_->path(), kSpareSeconds);
    EXPECT_FALSE(id.empty()) << "no ready spare for " << ws_->path() << "; lazaret ps --json: "
                             << Lazaret("/", {"ps", "--json"}).out;
    // The spare may have been prepared while the session ran (one asked
    // for by the first session); the session itself is gone as well.
    EXPECT_THAT(LeftBehind(), IsEmpty()) << "the session did not end";
    return id;
  }
};

TEST_F(SpareE2eTest, TwoSessionsInARowShareNothing) {
  // Run 1 leaves files in the sandbox's /tmp and /root and tells its
  // certificate and host name.
  const std::string tell = std::string("echo \"cert $(sha256sum ") + kClientCert +
                           " | cut -d' ' -f1)\"; echo \"host $(cat /etc/hostname)\"";
  CommandResult one =
      Run({"run", "--", "sh", "-c",
           "echo one > /tmp/spare-e2e-mark && echo one > /root/spare-e2e-mark && " + tell});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string cert_1 = LineValue(one.out, "cert ");
  const std::string host_1 = LineValue(one.out, "host ");
  ASSERT_EQ(cert_1.size(), 64u) << one.out;
  ASSERT_FALSE(host_1.empty()) << one.out;

  // The spare it leaves, seen from the host. Its network namespace stays
  // open here until the end, so that no later namespace can be given its
  // inode number.
  const std::string spare = WaitForReadySpare(ws_->path(), kSpareSeconds);
  ASSERT_FALSE(spare.empty()) << Lazaret("/", {"ps", "--json"}).out;
  ASSERT_THAT(LeftBehind(), IsEmpty()) << "run 1 did not end";
  EXPECT_TRUE(Contains(SpareIds(), spare)) << "its directory has no spare marker";
  const Sidecar held = InspectSidecar(spare);
  ASSERT_EQ(held.error, "");
  const HeldFd netns(
      open(("/proc/" + std::to_string(held.router) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(netns.valid());

  // Run 2 reports what it sees into the workspace, then waits for the
  // host's word, so that the host looks at it while it runs.
  const std::string log = aux_->path() + "/run2.log";
  const std::string report = ws_->path() + "/report";
  const std::string two_script =
      "{ for f in /tmp/spare-e2e-mark /root/spare-e2e-mark; do "
      "if [ -e \"$f\" ]; then echo \"seen $f\"; fi; done; " +
      tell +
      "; } > /workspace/report.tmp; mv /workspace/report.tmp /workspace/report; "
      "i=0; while [ ! -e /workspace/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done";
  const pid_t pid = SpawnLazaret(ws_->path(), {"run", "--", "sh", "-c", two_script},
                                 {{"LAZARET_TRACE", "1"}}, log);
  ASSERT_TRUE(test::WaitFor([&] { return Exists(report); }, std::chrono::seconds(90)))
      << test::ReadFile(log);

  // Run 2 is the session the spare was prepared as: its id, its sidecar,
  // no marker any more, and no spare while it runs.
  EXPECT_EQ(WaitForRunningSession(30), spare);
  EXPECT_THAT(PsSessions(), ElementsAre(spare));
  const PsListing during = PsJson();
  EXPECT_EQ(during.error, "");
  EXPECT_THAT(during.session_ids, ElementsAre(spare));
  EXPECT_THAT(during.spares, IsEmpty());
  EXPECT_FALSE(Contains(SpareIds(), spare));
  const Sidecar adopted = InspectSidecar(spare);
  EXPECT_EQ(adopted.error, "");
  EXPECT_EQ(adopted.container_id, held.container_id);
  EXPECT_EQ(adopted.router, held.router);
  EXPECT_EQ(adopted.netns, held.netns);
  EXPECT_EQ(Inspect("lazaret-" + spare + "-sandbox", "{{.HostConfig.NetworkMode}}"),
            "container:" + held.container_id);

  ws_->Write("go", "");
  ASSERT_EQ(WaitChild(pid, 150), 0) << test::ReadFile(log);
  const std::string trace = test::ReadFile(log);
  EXPECT_THAT(trace, HasSubstr("spare adopted"));
  EXPECT_THAT(trace, HasSubstr("spare's router held"));
  EXPECT_THAT(trace, Not(HasSubstr("session registered")));
  EXPECT_THAT(trace, Not(HasSubstr("sidecar started")));

  // Nothing of run 1 inside run 2: no file, another certificate, another
  // sandbox.
  const std::string seen = test::ReadFile(report);
  EXPECT_THAT(seen, Not(HasSubstr("seen "))) << seen;
  const std::string cert_2 = LineValue(seen, "cert ");
  EXPECT_EQ(cert_2.size(), 64u) << seen;
  EXPECT_NE(cert_2, cert_1);
  const std::string host_2 = LineValue(seen, "host ");
  EXPECT_FALSE(host_2.empty()) << seen;
  EXPECT_NE(host_2, host_1);

  // The sidecar went with run 2; the next spare is a new one.
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return !ContainerExists("lazaret-" + spare + "-sidecar") &&
               !Exists(Env().runtime_dir + "/sessions/" + spare);
      },
      std::chrono::seconds(60)))
      << "the adopted spare's sidecar or directory outlived its session";
  const std::string next = WaitForReadySpare(ws_->path(), kSpareSeconds, spare);
  ASSERT_FALSE(next.empty()) << Lazaret("/", {"ps", "--json"}).out;
  const Sidecar fresh = InspectSidecar(next);
  ASSERT_EQ(fresh.error, "");
  EXPECT_NE(fresh.container_id, held.container_id);
  EXPECT_NE(fresh.netns, held.netns);
  EXPECT_TRUE(fresh.router != held.router || fresh.router_start != held.router_start)
      << "the same router process " << held.router;
}

TEST_F(SpareE2eTest, ASpareIsNotASession) {
  const std::string spare = SessionThenSpare();
  ASSERT_FALSE(spare.empty());
  // It is there: its sidecar runs and its directory is marked.
  EXPECT_EQ(Inspect("lazaret-" + spare + "-sidecar", "{{.State.Running}}"), "true");
  EXPECT_TRUE(Contains(SpareIds(), spare));

  CommandResult ps = Lazaret("/", {"ps"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_THAT(ps.out, Not(HasSubstr(spare)));
  EXPECT_THAT(PsSessions(), IsEmpty()) << ps.out;

  CommandResult show = Run({"net", "show"});
  EXPECT_NE(show.exit_code, 0) << show.out;
  EXPECT_THAT(show.err, HasSubstr("no live session"));
  CommandResult named = Run({"net", "show", spare});
  EXPECT_NE(named.exit_code, 0) << named.out;
  EXPECT_THAT(named.err, HasSubstr("no live session '" + spare + "'"));
  CommandResult port = Run({"port", spare, "ls"});
  EXPECT_NE(port.exit_code, 0) << port.out;
  EXPECT_THAT(port.err, HasSubstr("no live session '" + spare + "'"));

  const PsListing listing = PsJson();
  ASSERT_EQ(listing.error, "");
  EXPECT_THAT(listing.session_ids, IsEmpty());
  ASSERT_EQ(listing.spares.size(), 1u);
  EXPECT_EQ(listing.spares[0].id, spare);
  EXPECT_EQ(listing.spares[0].workspace, Canonical(ws_->path()));
  EXPECT_TRUE(listing.spares[0].ready);

  // What looks for sessions' leftovers passes it by; it is still there.
  EXPECT_THAT(SessionContainers(), IsEmpty());
  EXPECT_THAT(SessionDirs(), IsEmpty());
  EXPECT_TRUE(ContainerExists("lazaret-" + spare + "-sidecar"));
}

TEST_F(SpareE2eTest, ProfileChangeDeclinesTheSpare) {
  const std::string spare = SessionThenSpare();
  ASSERT_FALSE(spare.empty());
  // The workspace's file turns escalation off (a narrowing, no trust
  // needed): the sidecar would have no relay to the broker.
  ws_->Write("lazaret.toml", "[escalation]\nenabled = false\n");
  CommandResult two =
      Run({"run", "--", "sh", "-c",
           std::string("if [ -e ") + kClientCert + " ]; then echo cert; else echo no-cert; fi"},
          {{"LAZARET_TRACE", "1"}});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_THAT(two.out, HasSubstr("no-cert"));
  EXPECT_THAT(two.err, Not(HasSubstr("spare adopted")));
  EXPECT_THAT(two.err, HasSubstr("session registered"));
  EXPECT_THAT(two.err, HasSubstr("sidecar started"));

  // The declined spare removed itself; the next one is new (prepared for
  // the profile as it is now).
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return !ContainerExists("lazaret-" + spare + "-sidecar") &&
               !Exists(Env().runtime_dir + "/sessions/" + spare);
      },
      std::chrono::seconds(60)))
      << "the declined spare's sidecar or directory is still there";
  const std::string next = WaitForReadySpare(ws_->path(), kSpareSeconds, spare);
  EXPECT_FALSE(next.empty()) << Lazaret("/", {"ps", "--json"}).out;
  EXPECT_NE(next, spare);
}

TEST_F(SpareE2eTest, DownRemovesTheSpare) {
  const std::string spare = SessionThenSpare();
  ASSERT_FALSE(spare.empty());
  CommandResult down = Lazaret("/", {"down"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  // Once `lazaret down` returns: no container of this runtime directory
  // and no session directory, a spare's included.
  EXPECT_THAT(AllContainers(), IsEmpty());
  EXPECT_THAT(SessionDirs(), IsEmpty());
  EXPECT_THAT(SpareIds(), IsEmpty());
  EXPECT_FALSE(Exists(Env().runtime_dir + "/sessions/" + spare));
  // The services as the fixture left them, for the tests after this one.
  CommandResult up = Lazaret("/", {"up"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
}

}  // namespace
}  // namespace lazaret::test::e2e
