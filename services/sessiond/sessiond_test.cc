// lazaret-sessiond's SessionService with real processes and a real gRPC
// socket, but no podman: the workers are fake_worker.cc, which speaks the
// descriptor-3 protocol and acts out a start, a plan, a failure or a hang,
// and a spare that is adopted, declines or is told to end.
#include "services/sessiond/sessiond.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/session_id.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session_service.h"
#include "services/sessiond/worker_table.h"

namespace lazaret::sessiond {
namespace {

namespace pb = ::lazaret::session::v1;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool EventuallyExists(const std::string& path, absl::Duration within = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + within;
  while (absl::Now() < deadline) {
    if (Exists(path)) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return Exists(path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fake worker's spare takes its pid, in 12 hex digits, as session id.
pid_t SparePid(const pb::SpareInfo& spare) {
  return static_cast<pid_t>(std::strtol(spare.id().c_str(), nullptr, 16));
}

bool EventuallyGone(pid_t pid, absl::Duration within = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + within;
  while (absl::Now() < deadline) {
    if (kill(pid, 0) != 0) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return kill(pid, 0) != 0;
}

class SessiondTest : public ::testing::Test {
 protected:
  virtual bool SpareSidecars() const { return true; }

  void SetUp() override {
    char tmpl[] = "/tmp/laz-sessiond-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char canonical[PATH_MAX];
    ASSERT_NE(realpath(tmpl, canonical), nullptr);
    dir_ = canonical;
    absl::StatusOr<std::unique_ptr<WorkerTable>> table = WorkerTable::Create(
        {.program = LAZARET_FAKE_WORKER, .runtime_dir = dir_, .libexec_dir = dir_});
    ASSERT_TRUE(table.ok()) << table.status();
    workers_ = std::move(*table);
    service_ = std::make_unique<SessionServiceImpl>(workers_, dir_, LAZARET_FAKE_WORKER,
                                                    absl::Seconds(1), SpareSidecars());
    auto listener = UnixListener::Bind(dir_ + "/sessiond.sock");
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server =
        GrpcUnixServer::Start(std::move(*listener), {service_.get()}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = pb::SessionService::NewStub(DialUnix(dir_ + "/sessiond.sock"));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    if (workers_) workers_->Shutdown();
    (void)!system(("rm -rf " + dir_).c_str());
  }

  pb::StartRequest Request(std::vector<std::string> args) {
    pb::StartRequest r;
    r.set_workspace_dir(dir_);
    for (auto& a : args) r.add_args(std::move(a));
    (*r.mutable_env())["TERM"] = "xterm-256color";
    return r;
  }

  // The whole Start stream.
  std::vector<pb::StartEvent> StartAll(const pb::StartRequest& r, grpc::Status* status) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto reader = stub_->Start(&ctx, r);
    std::vector<pb::StartEvent> events;
    for (pb::StartEvent e; reader->Read(&e);) events.push_back(e);
    *status = reader->Finish();
    return events;
  }

  std::vector<pb::SessionInfo> ListNow() {
    grpc::ClientContext ctx;
    pb::ListResponse resp;
    EXPECT_TRUE(stub_->List(&ctx, pb::ListRequest(), &resp).ok());
    return {resp.sessions().begin(), resp.sessions().end()};
  }

  pb::ListResponse ListAll() {
    grpc::ClientContext ctx;
    pb::ListResponse resp;
    EXPECT_TRUE(stub_->List(&ctx, pb::ListRequest(), &resp).ok());
    return resp;
  }

  // The one spare once it is ready for `workspace`; nullopt when none is
  // within 10 seconds.
  std::optional<pb::SpareInfo> AwaitReadySpare(const std::string& workspace) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    do {
      pb::ListResponse resp = ListAll();
      EXPECT_LE(resp.spares_size(), 1);
      if (resp.spares_size() == 1 && resp.spares(0).ready() &&
          resp.spares(0).workspace() == workspace) {
        return resp.spares(0);
      }
      absl::SleepFor(absl::Milliseconds(20));
    } while (absl::Now() < deadline);
    return std::nullopt;
  }

  // A session of `request` (its fake worker starts session `id`) in dir_,
  // stopped; then the spare it leaves, once ready (nullopt, with a
  // failure, when any step failed).
  std::optional<pb::SpareInfo> SessionThenSpare(const pb::StartRequest& request,
                                                const std::string& id) {
    grpc::Status st;
    StartAll(request, &st);
    EXPECT_TRUE(st.ok()) << st.error_message();
    if (!st.ok()) return std::nullopt;
    grpc::Status stopped = Stop(id, /*wait=*/true);
    EXPECT_TRUE(stopped.ok()) << stopped.error_message();
    if (!stopped.ok()) return std::nullopt;
    std::optional<pb::SpareInfo> spare = AwaitReadySpare(dir_);
    EXPECT_TRUE(spare.has_value()) << "no ready spare for " << dir_;
    return spare;
  }

  // A canonical workspace directory beside dir_'s own files.
  std::string MakeWorkspace(const std::string& name) {
    const std::string ws = dir_ + "/" + name;
    EXPECT_EQ(mkdir(ws.c_str(), 0700), 0);
    return ws;
  }

  grpc::Status Stop(const std::string& id, bool wait) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    pb::StopRequest req;
    req.set_session_id(id);
    req.set_wait(wait);
    pb::StopResponse resp;
    return stub_->Stop(&ctx, req, &resp);
  }

  grpc::Status Reap(const std::string& id, pb::ReapResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    pb::ReapRequest req;
    req.set_session_id(id);
    return stub_->Reap(&ctx, req, resp);
  }

  std::string dir_;
  std::shared_ptr<WorkerTable> workers_;
  std::unique_ptr<SessionServiceImpl> service_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::unique_ptr<pb::SessionService::Stub> stub_;
};

TEST_F(SessiondTest, StartRelaysTheWorkersNoticesUntilStartedThenListAndStopWork) {
  grpc::Status st;
  std::vector<pb::StartEvent> events = StartAll(Request({"start", "0123456789ab"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].notice(), "planning; stdin /dev/null");
  ASSERT_TRUE(events[1].has_started());
  EXPECT_EQ(events[1].started().session_id(), "0123456789ab");

  std::vector<pb::SessionInfo> sessions = ListNow();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].id(), "0123456789ab");
  EXPECT_EQ(sessions[0].state(), pb::SESSION_STATE_RUNNING);
  // The pid sessiond knows, not the one the worker claimed.
  EXPECT_GT(sessions[0].worker_pid(), 1);
  EXPECT_EQ(kill(sessions[0].worker_pid(), 0), 0);

  ASSERT_TRUE(Stop("0123456789ab", /*wait=*/true).ok());
  // wait=true answers only once the worker has ended its session.
  EXPECT_TRUE(Exists(dir_ + "/terminated"));
  EXPECT_TRUE(ListNow().empty());
  EXPECT_EQ(Stop("0123456789ab", false).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SessiondTest, AWorkerThatDiesBeforeStartedIsAFailedStartWithItsStatus) {
  grpc::Status st;
  std::vector<pb::StartEvent> events = StartAll(Request({"die"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].notice(), "about to fail");
  ASSERT_TRUE(events[1].has_failed());
  EXPECT_EQ(events[1].failed().exit_code(), 3);
  EXPECT_TRUE(absl::StrContains(events[1].failed().message(), "exited with status 3"))
      << events[1].failed().message();
}

TEST_F(SessiondTest, APlanEndsTheStart) {
  grpc::Status st;
  std::vector<pb::StartEvent> events = StartAll(Request({"plan"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].plan(), "the plan\n");
}

TEST_F(SessiondTest, ACallerCancellingBeforeStartedEndsTheWorkerWithSigterm) {
  grpc::ClientContext ctx;
  auto reader = stub_->Start(&ctx, Request({"hang"}));
  pb::StartEvent e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_EQ(e.notice(), "waiting");
  ctx.TryCancel();
  EXPECT_TRUE(EventuallyExists(dir_ + "/terminated"));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(SessiondTest, StopOfAnUnknownSessionIsNotFoundAndNamesPs) {
  grpc::Status st = Stop("aaaaaaaaaaaa", true);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "lazaret ps")) << st.error_message();
  EXPECT_EQ(Stop("../etc", true).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SessiondTest, ReapIsRefusedWhileTheWorkerLivesAndRelaysTheReapsLines) {
  grpc::Status st;
  StartAll(Request({"start", "00000000000a"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  pb::ReapResponse resp;
  EXPECT_EQ(Reap("00000000000a", &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(Stop("00000000000a", true).ok());

  resp.Clear();
  ASSERT_TRUE(Reap("00000000000a", &resp).ok());
  ASSERT_EQ(resp.notices_size(), 2);
  EXPECT_EQ(resp.notices(0), "session 00000000000a (profile p):");
  EXPECT_EQ(resp.notices(1), "  removed its containers");

  resp.Clear();
  grpc::Status left = Reap("00000000000b", &resp);
  EXPECT_EQ(left.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_TRUE(absl::StrContains(left.error_message(), "removed its containers"));
  EXPECT_EQ(Reap("00000000000d", &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SessiondTest, AReapThatHangsIsKilledAtItsTimeout) {
  pb::ReapResponse resp;
  const absl::Time before = absl::Now();
  grpc::Status st = Reap("00000000000c", &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LT(absl::Now() - before, absl::Seconds(10));
}

TEST_F(SessiondTest, ShuttingDownSendsEveryWorkerItsCleanEnd) {
  grpc::Status st;
  StartAll(Request({"start", "0123456789ac"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  workers_->Shutdown(absl::Seconds(5));
  EXPECT_TRUE(Exists(dir_ + "/terminated"));
}

// Spares: a session that started gets, once its worker has exited, a
// spare for the next request with its SpareKey (spare.h).

TEST_F(SessiondTest, ASessionThatEndsLeavesASpareThatListShowsApartFromSessions) {
  grpc::Status st;
  StartAll(Request({"start", "0123456789ab"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // Not while the session runs: preparing one would slow it.
  pb::ListResponse running = ListAll();
  EXPECT_EQ(running.spares_size(), 0);
  ASSERT_EQ(running.sessions_size(), 1);

  ASSERT_TRUE(Stop("0123456789ab", /*wait=*/true).ok());
  std::optional<pb::SpareInfo> spare = AwaitReadySpare(dir_);
  ASSERT_TRUE(spare.has_value());
  EXPECT_TRUE(IsValidSessionId(spare->id())) << spare->id();
  EXPECT_EQ(kill(SparePid(*spare), 0), 0);
  // The spare is no session.
  EXPECT_EQ(ListAll().sessions_size(), 0);
  EXPECT_FALSE(Exists(dir_ + "/adopted"));
  EXPECT_FALSE(Exists(dir_ + "/spare-terminated"));
}

TEST_F(SessiondTest, TheNextStartLikeTheLastIsServedByItsSpareAndANewSpareFollows) {
  grpc::Status st;
  std::optional<pb::SpareInfo> spare =
      SessionThenSpare(Request({"start", "0123456789ab"}), "0123456789ab");
  ASSERT_TRUE(spare.has_value());

  // Another command of the same profile in the same workspace.
  std::vector<pb::StartEvent> events =
      StartAll(Request({"start", "0123456789ad", "--", "make", "test"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].notice(), "planning; stdin /dev/null");
  ASSERT_TRUE(events[1].has_started());
  EXPECT_EQ(events[1].started().session_id(), "0123456789ad");
  EXPECT_EQ(ReadFile(dir_ + "/adopted"), "start 0123456789ad -- make test\n");

  // The spare's process runs the session, and is no spare any more.
  std::vector<pb::SessionInfo> sessions = ListNow();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].id(), "0123456789ad");
  EXPECT_EQ(sessions[0].worker_pid(), SparePid(*spare));
  EXPECT_EQ(ListAll().spares_size(), 0);

  // Adopted, it ends its session like any worker; then a new spare.
  ASSERT_TRUE(Stop("0123456789ad", /*wait=*/true).ok());
  EXPECT_TRUE(Exists(dir_ + "/terminated"));
  EXPECT_FALSE(Exists(dir_ + "/spare-terminated"));
  std::optional<pb::SpareInfo> next = AwaitReadySpare(dir_);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->id(), spare->id());
}

TEST_F(SessiondTest, AStartOfAnotherKeyReplacesTheSpareAndTwoReplacedInARowPauseSpares) {
  grpc::Status st;
  std::optional<pb::SpareInfo> first =
      SessionThenSpare(Request({"start", "0123456789ab"}), "0123456789ab");
  ASSERT_TRUE(first.has_value());

  // Another workspace: a worker of its own; the spare is told to end at
  // once, and once that session ends one for its key takes its place.
  const std::string other = MakeWorkspace("other");
  pb::StartRequest in_other = Request({"start", "0123456789ae"});
  in_other.set_workspace_dir(other);
  std::vector<pb::StartEvent> events = StartAll(in_other, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_started());
  EXPECT_FALSE(Exists(dir_ + "/adopted"));
  EXPECT_FALSE(Exists(other + "/adopted"));
  std::vector<pb::SessionInfo> sessions = ListNow();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_NE(sessions[0].worker_pid(), SparePid(*first));
  ASSERT_TRUE(Stop("0123456789ae", /*wait=*/true).ok());
  EXPECT_TRUE(EventuallyExists(dir_ + "/spare-terminated"));
  EXPECT_TRUE(EventuallyGone(SparePid(*first)));
  std::optional<pb::SpareInfo> second = AwaitReadySpare(other);
  ASSERT_TRUE(second.has_value());

  // Another profile in that workspace ("decline" starts like "start" when
  // no spare is handed it).
  pb::StartRequest other_profile = Request({"decline", "0123456789af"});
  other_profile.set_workspace_dir(other);
  events = StartAll(other_profile, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_started());
  EXPECT_FALSE(Exists(other + "/adopted"));
  EXPECT_FALSE(Exists(other + "/declined"));
  ASSERT_TRUE(Stop("0123456789af", /*wait=*/true).ok());
  EXPECT_TRUE(EventuallyExists(other + "/spare-terminated"));
  EXPECT_TRUE(EventuallyGone(SparePid(*second)));

  // Two spares in a row ended unused: none is made after this session.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(ListAll().spares_size(), 0);
  // The same request again: spares are made again, after its session.
  other_profile.set_args(1, "0123456789b0");
  events = StartAll(other_profile, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_started());
  EXPECT_EQ(ListAll().spares_size(), 0);
  ASSERT_TRUE(Stop("0123456789b0", /*wait=*/true).ok());
  std::optional<pb::SpareInfo> third = AwaitReadySpare(other);
  ASSERT_TRUE(third.has_value());
  EXPECT_NE(third->id(), second->id());
}

TEST_F(SessiondTest, AStartOfAnotherKeyWhileASessionRunsDropsThatSessionsSpare) {
  grpc::Status st;
  StartAll(Request({"start", "0123456789ab"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const std::string other = MakeWorkspace("other");
  pb::StartRequest in_other = Request({"start", "0123456789ae"});
  in_other.set_workspace_dir(other);
  StartAll(in_other, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();

  // The first session ends while the later one runs: no spare for the
  // first one's requests (it would wait beside the running session).
  ASSERT_TRUE(Stop("0123456789ab", /*wait=*/true).ok());
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(ListAll().spares_size(), 0);
  // The later request's spare follows its session.
  ASSERT_TRUE(Stop("0123456789ae", /*wait=*/true).ok());
  EXPECT_TRUE(AwaitReadySpare(other).has_value());
}

TEST_F(SessiondTest, ASpareThatDeclinesItsRequestLeavesItToANewWorker) {
  grpc::Status st;
  std::optional<pb::SpareInfo> spare =
      SessionThenSpare(Request({"decline", "0123456789ab"}), "0123456789ab");
  ASSERT_TRUE(spare.has_value());

  std::vector<pb::StartEvent> events = StartAll(Request({"decline", "0123456789ad"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // The new worker's start, relayed whole; nothing of the spare's.
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].notice(), "planning; stdin /dev/null");
  ASSERT_TRUE(events[1].has_started());
  EXPECT_EQ(events[1].started().session_id(), "0123456789ad");
  EXPECT_TRUE(Exists(dir_ + "/declined"));
  EXPECT_FALSE(Exists(dir_ + "/adopted"));
  EXPECT_TRUE(EventuallyGone(SparePid(*spare)));

  std::vector<pb::SessionInfo> sessions = ListNow();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].id(), "0123456789ad");
  EXPECT_NE(sessions[0].worker_pid(), SparePid(*spare));
  EXPECT_EQ(kill(sessions[0].worker_pid(), 0), 0);

  // That session, too, leaves a spare when it ends.
  ASSERT_TRUE(Stop("0123456789ad", /*wait=*/true).ok());
  std::optional<pb::SpareInfo> next = AwaitReadySpare(dir_);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->id(), spare->id());
}

TEST_F(SessiondTest, AClientRequestWithSpareSetIsRefused) {
  pb::StartRequest r = Request({"start", "0123456789ab"});
  r.set_spare(true);
  grpc::Status st;
  std::vector<pb::StartEvent> events = StartAll(r, &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "spare")) << st.error_message();
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(ListAll().sessions_size(), 0);
}

TEST_F(SessiondTest, AStartThatEndsWithoutASessionLeavesNoSpare) {
  grpc::Status st;
  StartAll(Request({"plan"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  StartAll(Request({"die"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // Both workers have exited; a spare would be on its way by now.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(ListAll().spares_size(), 0);
}

TEST_F(SessiondTest, ShuttingDownEndsAWaitingSpare) {
  std::optional<pb::SpareInfo> spare =
      SessionThenSpare(Request({"start", "0123456789ab"}), "0123456789ab");
  ASSERT_TRUE(spare.has_value());
  workers_->Shutdown(absl::Seconds(5));
  EXPECT_TRUE(Exists(dir_ + "/spare-terminated"));
  EXPECT_TRUE(EventuallyGone(SparePid(*spare)));
}

TEST_F(SessiondTest, ShuttingDownWhileASessionRunsPreparesNoSpare) {
  grpc::Status st;
  StartAll(Request({"start", "0123456789ab"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  workers_->Shutdown(absl::Seconds(5));
  EXPECT_TRUE(Exists(dir_ + "/terminated"));
  // A spare started now would be ended by its death signal and say so.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(Exists(dir_ + "/spare-terminated"));
}

class SessiondWithoutSparesTest : public SessiondTest {
 protected:
  bool SpareSidecars() const override { return false; }
};

TEST_F(SessiondWithoutSparesTest, ASessionThatEndsLeavesNoSpare) {
  grpc::Status st;
  StartAll(Request({"start", "0123456789ab"}), &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(Stop("0123456789ab", /*wait=*/true).ok());
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(ListAll().spares_size(), 0);
  workers_->Shutdown(absl::Seconds(5));
  EXPECT_FALSE(Exists(dir_ + "/spare-terminated"));
}

TEST(CheckStartRequestTest, RefusesWhatAWorkerMustNotBeGiven) {
  char tmpl[] = "/tmp/laz-sessiond-req-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  char canonical[PATH_MAX];
  ASSERT_NE(realpath(tmpl, canonical), nullptr);
  const std::string dir = canonical;
  pb::StartRequest ok;
  ok.set_workspace_dir(dir);
  ok.add_args("claude");
  (*ok.mutable_env())["TERM"] = "xterm";
  ok.mutable_terminal()->set_rows(24);
  ok.mutable_terminal()->set_cols(80);
  EXPECT_TRUE(CheckStartRequest(ok).ok()) << CheckStartRequest(ok);

  auto refused = [&](auto edit) {
    pb::StartRequest r = ok;
    edit(r);
    return CheckStartRequest(r).code() == absl::StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(refused([](pb::StartRequest& r) { r.set_workspace_dir("relative"); }));
  EXPECT_TRUE(refused([&](pb::StartRequest& r) { r.set_workspace_dir(dir + "/."); }));
  EXPECT_TRUE(refused([&](pb::StartRequest& r) { r.set_workspace_dir(dir + "/missing"); }));
  EXPECT_TRUE(refused([](pb::StartRequest& r) { r.add_args(std::string("a\0b", 3)); }));
  EXPECT_TRUE(refused([](pb::StartRequest& r) { (*r.mutable_env())["A=B"] = "x"; }));
  EXPECT_TRUE(refused([](pb::StartRequest& r) { (*r.mutable_env())["X"] = std::string("\0", 1); }));
  EXPECT_TRUE(refused([](pb::StartRequest& r) { r.mutable_terminal()->set_rows(0); }));
  EXPECT_TRUE(refused([](pb::StartRequest& r) { r.mutable_terminal()->set_cols(70000); }));
  EXPECT_TRUE(
      refused([](pb::StartRequest& r) { r.add_args(std::string(kMaxStartRequestBytes, 'x')); }));
  // Only sessiond makes spares.
  pb::StartRequest spare = ok;
  spare.set_spare(true);
  const absl::Status spare_status = CheckStartRequest(spare);
  EXPECT_EQ(spare_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(spare_status.message(), "spare")) << spare_status;
  rmdir(canonical);
}

TEST(SessiondFlagsTest, ModesAndDirectories) {
  std::vector<std::string> args = {"lazaret-sessiond", "--session-worker", "--runtime-dir=/r",
                                   "--libexec-dir=/l"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  absl::StatusOr<Invocation> inv = ParseFlags(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->mode, Invocation::Mode::kSessionWorker);
  EXPECT_EQ(inv->options.service.runtime_dir, "/r");
  EXPECT_EQ(inv->options.libexec_dir, "/l");
  EXPECT_EQ(inv->options.program[0], '/');

  std::vector<std::string> bad = {"lazaret-sessiond", "--reap-session=../x"};
  std::vector<char*> bad_argv;
  for (auto& a : bad) bad_argv.push_back(a.data());
  EXPECT_FALSE(ParseFlags(static_cast<int>(bad_argv.size()), bad_argv.data()).ok());
}

}  // namespace
}  // namespace lazaret::sessiond
