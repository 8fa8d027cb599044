// `lazaret up` brings up the real service set; every service answers health
// and reflection, holds exactly its declared capabilities, refuses other
// uids, comes back after SIGKILL, and `lazaret down` leaves nothing behind.
// The supervisor's session registry validates what registers, the lock
// file is never replaced, and no service inherits `lazaret up`'s whole
// environment.
#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "helper/mount/mounthelper.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/brokerd/brokerd.h"
#include "services/egressd/egressd.h"
#include "services/common/capabilities.h"
#include "services/common/constants.h"
#include "services/common/unix_server.h"
#include "services/configd/configd.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/sessiond/sessiond.h"
#include "services/supervisor/supervisor.h"
#include "sidecar/netrouter.h"
#include "tests/support/test_support.h"

namespace lazaret {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::Binary;
using test::CommandResult;
using test::ProcessAlive;
using test::Run;
using test::TempDir;
using test::WaitFor;
namespace sv = ::lazaret::supervisor::v1;

// The services `lazaret up` must run and the gRPC services each exposes.
const std::map<std::string, std::vector<std::string>>& ExpectedApis() {
  static const auto* apis = new std::map<std::string, std::vector<std::string>>{
      {"configd", {"lazaret.config.v1.ConfigService"}},
      {"netpolicyd", {"lazaret.netpolicy.v1.NetPolicyService"}},
      {"egressd", {"lazaret.egress.v1.EgressService"}},
      {"brokerd",
       {"lazaret.approver.v1.ApproverService", "lazaret.broker.v1.EscalationEndpointService"}},
      {"mount-helper", {"lazaret.mounthelper.v1.MountHelperService"}},
      {"sessiond", {"lazaret.session.v1.SessionService"}},
      {"supervisor", {"lazaret.supervisor.v1.SupervisorService"}},
  };
  return *apis;
}

std::vector<std::string> ListServicesByReflection(const std::string& socket) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(DialUnix(socket));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  std::vector<std::string> names;
  if (!stream->Write(req)) return names;
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  while (stream->Read(&resp)) {
    for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  }
  stream->Finish();
  return names;
}

class ServiceSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::BecomeSubreaper();
    runtime_ = std::make_unique<TempDir>("laz-it");
    rt_ = runtime_->path() + "/rt";
    env_ = {{"LAZARET_RUNTIME_DIR", rt_}};
  }

  void TearDown() override {
    Lazaret({"down"});
    test::ReapOrphans();
  }

  CommandResult Lazaret(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {Binary("lazaret")};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::Run(argv, env_);
  }

  sv::GetStatusResponse Status() {
    CommandResult r = Lazaret({"status", "--json"});
    sv::GetStatusResponse st;
    google::protobuf::util::JsonParseOptions o;
    o.ignore_unknown_fields = true;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &st, o).ok()) << r.out;
    return st;
  }

  const sv::ServiceStatus* Find(const sv::GetStatusResponse& st, const std::string& name) {
    for (const auto& s : st.services()) {
      if (s.name() == name) return &s;
    }
    return nullptr;
  }

  // Every pid the set consists of, supervisor included.
  std::vector<pid_t> AllPids(const sv::GetStatusResponse& st) {
    std::vector<pid_t> pids = {st.supervisor_pid()};
    for (const auto& s : st.services()) pids.push_back(s.pid());
    return pids;
  }

  void ExpectNothingLeft(const std::vector<pid_t>& pids) {
    test::ReapOrphans();
    for (pid_t p : pids) {
      EXPECT_TRUE(WaitFor(
          [&] {
            test::ReapOrphans();
            return !ProcessAlive(p);
          },
          seconds(10)))
          << "process " << p << " is still alive";
    }
    DIR* d = opendir(rt_.c_str());
    ASSERT_NE(d, nullptr);
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      EXPECT_FALSE(name.size() > 5 && name.substr(name.size() - 5) == ".sock")
          << "socket left behind: " << name;
    }
    closedir(d);
    // The lock file stays (it is never replaced, see LockFileIsNeverReplaced)
    // but nobody holds it.
    const int fd = open((rt_ + "/" + kSupervisorLockFile).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << "the supervisor lock is still held";
      close(fd);
    }
  }

  std::unique_ptr<TempDir> runtime_;
  std::string rt_;
  std::map<std::string, std::string> env_;
};

TEST_F(ServiceSetTest, UpStartsEveryServiceHealthyWithReflection) {
  CommandResult up = Lazaret({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  sv::GetStatusResponse st = Status();
  ASSERT_TRUE(st.all_healthy());
  ASSERT_EQ(st.services_size(), static_cast<int>(ExpectedApis().size()) - 1);  // but the supervisor
  for (const auto& [name, apis] : ExpectedApis()) {
    const std::string socket = rt_ + "/" + name + ".sock";
    EXPECT_TRUE(CheckHealth(socket, 2000).ok()) << name;
    std::vector<std::string> listed = ListServicesByReflection(socket);
    std::set<std::string> have(listed.begin(), listed.end());
    EXPECT_TRUE(have.count("grpc.health.v1.Health")) << name;
    EXPECT_TRUE(have.count("grpc.reflection.v1alpha.ServerReflection")) << name;
    for (const auto& api : apis) EXPECT_TRUE(have.count(api)) << name << " lacks " << api;
  }
  // Sockets and runtime dir are owner-only.
  struct stat st_dir {};
  ASSERT_EQ(stat(rt_.c_str(), &st_dir), 0);
  EXPECT_EQ(st_dir.st_mode & 0777, 0700u);
}

TEST_F(ServiceSetTest, SecondUpDoesNotStartASecondSet) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse first = Status();
  CommandResult again = Lazaret({"up"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("already up"), std::string::npos) << again.out;
  const sv::GetStatusResponse second = Status();
  EXPECT_EQ(first.supervisor_pid(), second.supervisor_pid());
  for (const auto& s : first.services()) EXPECT_EQ(Find(second, s.name())->pid(), s.pid());
  // Exactly one supervisor binary is running for this runtime dir.
  int count = 0;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || !ProcessAlive(pid)) continue;
    std::string cmdline = test::ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("lazaret-supervisord") != std::string::npos &&
        cmdline.find("--launcher") == std::string::npos &&
        cmdline.find(rt_ + " ") != std::string::npos) {
      ++count;
    }
  }
  closedir(proc);
  EXPECT_EQ(count, 1);
}

TEST_F(ServiceSetTest, SigkilledServiceIsRestartedBySupervisor) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse before = Status();
  const pid_t old_pid = Find(before, "configd")->pid();
  ASSERT_GT(old_pid, 0);
  ASSERT_EQ(kill(old_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        sv::GetStatusResponse st = Status();
        const auto* c = Find(st, "configd");
        return c != nullptr && c->pid() != old_pid && c->pid() > 0 &&
               c->state() == sv::SERVICE_STATE_HEALTHY && c->restarts() == 1;
      },
      seconds(15)));
  EXPECT_TRUE(CheckHealth(rt_ + "/configd.sock", 2000).ok());
  const std::string log = test::ReadFile(rt_ + "/" + kSupervisorLogFile);
  EXPECT_NE(log.find("configd (pid " + std::to_string(old_pid) + ") killed by"), std::string::npos)
      << log;
}

template <size_t N>
uint64_t MaskOf(const std::array<cap_value_t, N>& caps) {
  return caps::Mask(absl::MakeConstSpan(caps.data(), caps.size()));
}

TEST_F(ServiceSetTest, EachServiceHoldsExactlyItsDeclaredCapabilities) {
  if (geteuid() != 0) GTEST_SKIP() << "capability sets are only observable when started as root";
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse st = Status();
  const std::map<std::string, uint64_t> declared = {
      {"configd", MaskOf(configd::kCapabilities)},
      {"netpolicyd", MaskOf(netpolicyd::kCapabilities)},
      {"egressd", MaskOf(egressd::kCapabilities)},
      {"brokerd", MaskOf(brokerd::kCapabilities)},
      {"mount-helper", MaskOf(mounthelper::kCapabilities)},
  };
  // Permitted (and bounding) but never effective: only to hand on.
  const std::map<std::string, uint64_t> delegated = {
      {"mount-helper", MaskOf(mounthelper::kDelegatedCapabilities)},
  };
  for (const auto& [name, mask] : declared) {
    const pid_t pid = Find(st, name)->pid();
    SCOPED_TRACE(name);
    const uint64_t held = mask | (delegated.count(name) != 0 ? delegated.at(name) : 0);
    EXPECT_EQ(test::ProcStatusHex(pid, "CapPrm"), held);
    EXPECT_EQ(test::ProcStatusHex(pid, "CapEff"), mask);
    EXPECT_EQ(test::ProcStatusHex(pid, "CapBnd"), held);
    EXPECT_EQ(test::ProcStatusHex(pid, "CapInh"), 0u);
    EXPECT_EQ(test::ProcStatusHex(pid, "CapAmb"), 0u);
    EXPECT_EQ(test::ProcStatusHex(pid, "NoNewPrivs"), 1u);
  }
  // The supervisor delegates but never has anything effective.
  const pid_t sup = st.supervisor_pid();
  EXPECT_EQ(test::ProcStatusHex(sup, "CapEff"), 0u);
  EXPECT_EQ(test::ProcStatusHex(sup, "CapPrm"), MaskOf(supervisor::kDelegatedCapabilities));
  EXPECT_EQ(test::ProcStatusHex(sup, "CapBnd"), MaskOf(supervisor::kDelegatedCapabilities));
  EXPECT_EQ(test::ProcStatusHex(sup, "NoNewPrivs"), 1u);
  // sessiond holds nothing itself; its bounding set is exactly what its
  // children exec'd as root (podman, its workers) receive, and no_new_privs
  // stays off so that they can receive it.
  const pid_t sessiond = Find(st, "sessiond")->pid();
  EXPECT_EQ(test::ProcStatusHex(sessiond, "CapPrm"), 0u);
  EXPECT_EQ(test::ProcStatusHex(sessiond, "CapEff"), 0u);
  EXPECT_EQ(test::ProcStatusHex(sessiond, "CapBnd"), MaskOf(sessiond::kGrantedByExec));
  EXPECT_EQ(test::ProcStatusHex(sessiond, "CapInh"), 0u);
  EXPECT_EQ(test::ProcStatusHex(sessiond, "CapAmb"), 0u);
  EXPECT_EQ(test::ProcStatusHex(sessiond, "NoNewPrivs"), 0u);
}

TEST_F(ServiceSetTest, DownStopsEverythingAndLeavesNoSocketOrProcess) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const std::vector<pid_t> pids = AllPids(Status());
  CommandResult down = Lazaret({"down"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  ExpectNothingLeft(pids);
  CommandResult st = Lazaret({"status"});
  EXPECT_EQ(st.exit_code, 3);
  EXPECT_NE(st.out.find("not running"), std::string::npos);
}

pid_t LauncherOf(pid_t supervisor);

TEST_F(ServiceSetTest, SigtermToSupervisorShutsTheSetDownCleanly) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse st = Status();
  std::vector<pid_t> pids = AllPids(st);
  pids.push_back(LauncherOf(st.supervisor_pid()));
  ASSERT_GT(pids.back(), 0) << "no launcher process";
  ASSERT_EQ(kill(st.supervisor_pid(), SIGTERM), 0);
  ExpectNothingLeft(pids);
}

TEST_F(ServiceSetTest, SigintToAServiceStopsItCleanlyAndItIsRestarted) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const pid_t pid = Find(Status(), "brokerd")->pid();
  ASSERT_EQ(kill(pid, SIGINT), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto* b = Find(Status(), "brokerd");
        return b->pid() != pid && b->state() == sv::SERVICE_STATE_HEALTHY;
      },
      seconds(15)));
  const std::string log = test::ReadFile(rt_ + "/" + kSupervisorLogFile);
  EXPECT_NE(log.find("brokerd (pid " + std::to_string(pid) + ") exited with status 0"),
            std::string::npos)
      << log;
}

// A service started by another user refuses our (root's) connection: the
// SO_PEERCRED check, not only the directory permissions, keeps others out.
TEST_F(ServiceSetTest, ConnectionFromAnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start a service as another uid";
  const uid_t nobody = 65534;
  const std::string dir = runtime_->path() + "/other";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chown(runtime_->path().c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(runtime_->path().c_str(), 0711), 0);
  ASSERT_EQ(chown(dir.c_str(), nobody, nobody), 0);
  const std::string log = dir + "/configd.log";
  const std::string binary = Binary("lazaret-configd");
  const std::string flag = "--runtime-dir=" + dir;
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0) _exit(90);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(fd, 2);
    execl(binary.c_str(), binary.c_str(), flag.c_str(), static_cast<char*>(nullptr));
    _exit(91);
  }
  const std::string socket = dir + "/configd.sock";
  ASSERT_TRUE(WaitFor([&] { return access(socket.c_str(), F_OK) == 0; }, seconds(10)));
  // Root can traverse the 0700 directory, so only the peer check stands in the way.
  EXPECT_FALSE(CheckHealth(socket, 1500).ok());
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string text = test::ReadFile(log);
  EXPECT_NE(text.find("refused connection"), std::string::npos) << text;
  EXPECT_NE(text.find("from uid 0"), std::string::npos) << text;
}

// ---- The session registry ----

common::v1::SessionRecord RecordOf(const std::string& id, pid_t pid) {
  common::v1::SessionRecord r;
  r.set_id(id);
  r.set_profile("default");
  r.set_workspace("/tmp");
  r.set_git_state_dir("/tmp/state/git");
  r.set_pid(pid);
  r.set_started_unix(1700000000);
  return r;
}

grpc::Status Register(const std::string& socket, const common::v1::SessionRecord& record) {
  auto stub = sv::SupervisorService::NewStub(DialUnix(socket));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + seconds(5));
  sv::RegisterSessionRequest req;
  *req.mutable_record() = record;
  sv::RegisterSessionResponse resp;
  return stub->RegisterSession(&cc, req, &resp);
}

std::vector<sv::SessionInfo> ListSessions(const std::string& socket) {
  auto stub = sv::SupervisorService::NewStub(DialUnix(socket));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + seconds(5));
  sv::ListSessionsResponse resp;
  EXPECT_TRUE(stub->ListSessions(&cc, sv::ListSessionsRequest(), &resp).ok());
  return {resp.sessions().begin(), resp.sessions().end()};
}

TEST_F(ServiceSetTest, RegisterSessionValidatesIdOwnerAndDuplicates) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const std::string socket = rt_ + "/supervisor.sock";
  grpc::Status bad_id = Register(socket, RecordOf("../../etc/x", getpid()));
  EXPECT_EQ(bad_id.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_id.error_message().find("session id"), std::string::npos);
  // A record naming a process other than the caller (here: init).
  grpc::Status other = Register(socket, RecordOf("0123456789ab", 1));
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED) << other.error_message();
  ASSERT_TRUE(Register(socket, RecordOf("0123456789ab", getpid())).ok());
  grpc::Status dup = Register(socket, RecordOf("0123456789ab", getpid()));
  EXPECT_EQ(dup.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  std::vector<sv::SessionInfo> listed = ListSessions(socket);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].record().pid(), getpid());
  EXPECT_EQ(listed[0].sidecar_container(), "lazaret-0123456789ab-sidecar");
  EXPECT_EQ(listed[0].router_socket(), rt_ + "/sessions/0123456789ab/router/router.sock");
  // This test process is the session's owner now: unregister, or `lazaret
  // down` in TearDown asks it (SIGTERM) to end its session.
  auto stub = sv::SupervisorService::NewStub(DialUnix(socket));
  grpc::ClientContext cc;
  sv::UnregisterSessionRequest req;
  req.set_id("0123456789ab");
  sv::UnregisterSessionResponse resp;
  EXPECT_TRUE(stub->UnregisterSession(&cc, req, &resp).ok());
  EXPECT_TRUE(ListSessions(socket).empty());
}

// Run by RegistrationFromAnotherUidIsRefused as another uid: tries to
// register a session owned by itself.
TEST(RegistryChildProcess, DISABLED_RegisterAsThisProcess) {
  const char* socket = std::getenv("LAZARET_TEST_SUPERVISOR_SOCKET");
  ASSERT_NE(socket, nullptr);
  grpc::Status s = Register(socket, RecordOf("abcdefabcdef", getpid()));
  std::printf("REGISTER-%s\n", s.ok() ? "OK" : "REFUSED");
}

TEST_F(ServiceSetTest, RegistrationFromAnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to call as another uid";
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const std::string socket = rt_ + "/supervisor.sock";
  // Take the file permissions out of the way: only the peer check is left.
  ASSERT_EQ(chmod(runtime_->path().c_str(), 0711), 0);
  ASSERT_EQ(chmod(rt_.c_str(), 0711), 0);
  ASSERT_EQ(chmod(socket.c_str(), 0666), 0);
  const std::string self = [] {
    std::string p(4096, '\0');
    p.resize(readlink("/proc/self/exe", p.data(), p.size()));
    return p;
  }();
  CommandResult child =
      test::Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", self,
                 "--gtest_also_run_disabled_tests",
                 "--gtest_filter=RegistryChildProcess.DISABLED_RegisterAsThisProcess"},
                {{"LAZARET_TEST_SUPERVISOR_SOCKET", socket}});
  EXPECT_NE(child.out.find("REGISTER-REFUSED"), std::string::npos) << child.out << child.err;
  EXPECT_TRUE(ListSessions(socket).empty());
  const std::string log = test::ReadFile(rt_ + "/" + kSupervisorLogFile);
  EXPECT_NE(log.find("refused connection on " + socket + " from uid 65534"), std::string::npos)
      << log;
}

// ---- The lock and the environment ----

// Whoever holds the lock owns the runtime directory, so the lock file must
// be the same file for as long as anyone holds it: a supervisor that
// unlinked it on its way out let the next one lock a fresh file at the same
// path while another process (a supervisor that opened the old file during
// the shutdown) still held the old one - two supervisors.
TEST_F(ServiceSetTest, LockFileIsNeverReplaced) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const std::string lock = rt_ + "/" + kSupervisorLockFile;
  // A late starter opens the lock file while the first still runs...
  const int late = open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(late, 0);
  ASSERT_EQ(Lazaret({"down"}).exit_code, 0);
  // ...and gets it once the first is gone.
  ASSERT_EQ(flock(late, LOCK_EX | LOCK_NB), 0);
  // A supervisor starting now must see that lock as taken.
  // (`timeout`: a supervisor that wrongly starts would otherwise run on.)
  CommandResult second =
      test::Run({"timeout", "20", Binary("lazaret-supervisord"), "--runtime-dir=" + rt_}, {});
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_NE(second.err.find("already up"), std::string::npos) << second.err;
  close(late);
}

std::string EnvironOf(pid_t pid) {
  std::string env = test::ReadFile("/proc/" + std::to_string(pid) + "/environ");
  std::replace(env.begin(), env.end(), '\0', '\n');
  return env;
}

pid_t ParentOf(pid_t pid) {
  const std::string stat = test::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return -1;
  return std::atoi(stat.c_str() + close_paren + 4);
}

// The launcher: the supervisor's child that runs with --launcher.
pid_t LauncherOf(pid_t supervisor) {
  DIR* proc = opendir("/proc");
  pid_t found = -1;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmdline = test::ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (ParentOf(pid) == supervisor && cmdline.find("--launcher") != std::string::npos) {
      found = pid;
    }
  }
  closedir(proc);
  return found;
}

// lazaret-sessiond is the launcher's child (it keeps what `lazaret up` had,
// launcher.h), and the supervisor restarts it through the launcher like
// any service.
TEST_F(ServiceSetTest, SessiondRunsUnderTheLauncherAndComesBackAfterSigkill) {
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse before = Status();
  const pid_t launcher = LauncherOf(before.supervisor_pid());
  ASSERT_GT(launcher, 0) << "no launcher process";
  ASSERT_NE(Find(before, "sessiond"), nullptr);
  const pid_t old_pid = Find(before, "sessiond")->pid();
  ASSERT_GT(old_pid, 0);
  EXPECT_EQ(ParentOf(old_pid), launcher);
  ASSERT_EQ(kill(old_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        sv::GetStatusResponse st = Status();
        const auto* s = Find(st, "sessiond");
        return s != nullptr && s->pid() != old_pid && s->pid() > 0 &&
               s->state() == sv::SERVICE_STATE_HEALTHY && s->restarts() == 1;
      },
      seconds(15)));
  const pid_t new_pid = Find(Status(), "sessiond")->pid();
  EXPECT_EQ(ParentOf(new_pid), launcher);
  EXPECT_TRUE(CheckHealth(rt_ + "/sessiond.sock", 2000).ok());
  const std::string log = test::ReadFile(rt_ + "/" + kSupervisorLogFile);
  EXPECT_NE(log.find("sessiond (pid " + std::to_string(old_pid) + ") killed by"),
            std::string::npos)
      << log;
}

TEST_F(ServiceSetTest, ServicesGetAMinimalEnvironmentNotLazaretUps) {
  env_["LAZARET_TEST_CANARY"] = "canary-value-31337";
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse st = Status();
  std::vector<pid_t> pids = AllPids(st);
  const pid_t launcher = LauncherOf(st.supervisor_pid());
  ASSERT_GT(launcher, 0) << "no launcher process";
  pids.push_back(launcher);
  for (pid_t pid : pids) {
    const std::string env = EnvironOf(pid);
    SCOPED_TRACE("pid " + std::to_string(pid));
    EXPECT_NE(env.find("PATH="), std::string::npos) << env;  // read for real
    EXPECT_EQ(env.find("LAZARET_TEST_CANARY"), std::string::npos) << env;
    EXPECT_EQ(env.find("canary-value-31337"), std::string::npos) << env;
  }
}

// The mount helper's overlay driver is chosen where Lazaret is brought up:
// LAZARET_OVERLAY reaches the helper (and no other service needs it).
TEST_F(ServiceSetTest, OverlayDriverChoiceReachesTheMountHelper) {
  env_["LAZARET_OVERLAY"] = "fuse-overlayfs";
  ASSERT_EQ(Lazaret({"up"}).exit_code, 0);
  const sv::GetStatusResponse st = Status();
  bool found = false;
  for (const auto& s : st.services()) {
    if (s.name() != "mount-helper") continue;
    found = true;
    EXPECT_NE(("\n" + EnvironOf(s.pid())).find("\nLAZARET_OVERLAY=fuse-overlayfs\n"),
              std::string::npos)
        << EnvironOf(s.pid());
  }
  EXPECT_TRUE(found) << "no mount-helper in the status";
}

// deploy/capabilities.toml restates every declared set; they must agree.
TEST(CapabilityManifestTest, DeployManifestMatchesTheConstantsInCode) {
  toml::parse_result parsed = toml::parse_file(LAZARET_SOURCE_DIR "/deploy/capabilities.toml");
  ASSERT_TRUE(parsed) << parsed.error().description();
  const toml::table& t = parsed.table();
  auto names = [&](const std::string& binary, const char* key) {
    std::vector<std::string> out;
    if (const toml::array* arr = t[binary][key].as_array()) {
      for (const auto& v : *arr) out.push_back(v.value_or(std::string()));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  auto code = [](const auto& arr) {
    return caps::Names(absl::MakeConstSpan(arr.data(), arr.size()));
  };
  EXPECT_EQ(names("lazaret-configd", "capabilities"), sorted(code(configd::kCapabilities)));
  EXPECT_EQ(names("lazaret-netpolicyd", "capabilities"), sorted(code(netpolicyd::kCapabilities)));
  EXPECT_EQ(names("lazaret-brokerd", "capabilities"), sorted(code(brokerd::kCapabilities)));
  EXPECT_EQ(names("lazaret-egressd", "capabilities"), sorted(code(egressd::kCapabilities)));
  EXPECT_EQ(names("lazaret-mount-helper", "capabilities"),
            sorted(code(mounthelper::kCapabilities)));
  EXPECT_EQ(names("lazaret-mount-helper", "delegated"),
            sorted(code(mounthelper::kDelegatedCapabilities)));
  EXPECT_EQ(names("lazaret-netrouter", "capabilities"), sorted(code(netrouter::kCapabilities)));
  EXPECT_EQ(names("lazaret-supervisord", "capabilities"), sorted(code(supervisor::kCapabilities)));
  EXPECT_EQ(names("lazaret-supervisord", "delegated"),
            sorted(code(supervisor::kDelegatedCapabilities)));
  // The launcher keeps what `lazaret up` had (launcher.h) and says so.
  EXPECT_EQ(t["lazaret-launcher"]["keeps"].value_or(std::string()), "invoker");
  EXPECT_EQ(t["lazaret-launcher"]["no_new_privs"].value_or(true), false);
  // sessiond keeps nothing and hands its bounding set to what it execs as root.
  EXPECT_EQ(names("lazaret-sessiond", "capabilities"), sorted(code(sessiond::kCapabilities)));
  EXPECT_EQ(names("lazaret-sessiond", "granted_by_exec"),
            sorted(code(sessiond::kGrantedByExec)));
  EXPECT_EQ(t["lazaret-sessiond"]["no_new_privs"].value_or(true), false);
  // Every binary in the manifest is one we know about, and vice versa.
  EXPECT_EQ(t.size(), 9u);
}

}  // namespace
}  // namespace lazaret
