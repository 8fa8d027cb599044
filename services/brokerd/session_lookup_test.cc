// The broker's session lookup and registry follow against in-process
// supervisor and configd servers on the runtime directory's real socket
// paths.
#include "services/brokerd/session_lookup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::brokerd {
namespace {

namespace cfg = ::lazaret::config::v1;
namespace sv = ::lazaret::supervisor::v1;

constexpr char kId[] = "0123456789ab";
constexpr char kOtherId[] = "ba9876543210";

sv::SessionInfo Info(const std::string& id, sv::SessionState state) {
  sv::SessionInfo info;
  info.mutable_record()->set_id(id);
  info.mutable_record()->set_profile("agent");
  info.mutable_record()->set_workspace("/home/u/proj");
  info.mutable_record()->set_explicit_config("/home/u/proj/lazaret.toml");
  info.set_state(state);
  return info;
}

// A supervisor whose sessions and watch streams the test drives.
class FakeSupervisor final : public sv::SupervisorService::Service {
 public:
  void Set(sv::SessionInfo info) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_[info.record().id()] = info;
    sv::SessionEvent ev;
    ev.set_kind(sv::SESSION_EVENT_STARTED);
    *ev.mutable_session() = info;
    Push(ev);
  }
  void End(const std::string& id, bool announce = true) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    sv::SessionEvent ev;
    ev.set_kind(sv::SESSION_EVENT_ENDED);
    *ev.mutable_session() = it->second;
    sessions_.erase(it);
    if (announce) Push(ev);
  }
  // Ends every open WatchSessions stream (the supervisor went away).
  void DropStreams() {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    cv_.notify_all();
  }
  int streams_opened() {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }

  grpc::Status GetSession(grpc::ServerContext*, const sv::GetSessionRequest* req,
                          sv::SessionInfo* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(req->id());
    if (it == sessions_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such session");
    *resp = it->second;
    return grpc::Status::OK;
  }
  grpc::Status ListSessions(grpc::ServerContext*, const sv::ListSessionsRequest*,
                            sv::ListSessionsResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, info] : sessions_) *resp->add_sessions() = info;
    return grpc::Status::OK;
  }
  grpc::Status WatchSessions(grpc::ServerContext* ctx, const sv::WatchSessionsRequest*,
                             grpc::ServerWriter<sv::SessionEvent>* writer) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++opened_;
    const int generation = generation_;
    std::deque<sv::SessionEvent> mine;
    for (const auto& [id, info] : sessions_) {
      sv::SessionEvent ev;
      ev.set_kind(sv::SESSION_EVENT_STARTED);
      *ev.mutable_session() = info;
      mine.push_back(ev);
    }
    queues_.insert(&mine);
    while (!ctx->IsCancelled() && generation == generation_) {
      while (!mine.empty()) {
        sv::SessionEvent ev = mine.front();
        mine.pop_front();
        lock.unlock();
        writer->Write(ev);
        lock.lock();
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
    queues_.erase(&mine);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "supervisor restarting");
  }

 private:
  void Push(const sv::SessionEvent& ev) {
    for (auto* q : queues_) q->push_back(ev);
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, sv::SessionInfo> sessions_;
  std::set<std::deque<sv::SessionEvent>*> queues_;
  int generation_ = 0;
  int opened_ = 0;
};

class FakeConfigd final : public cfg::ConfigService::Service {
 public:
  grpc::Status ResolveProfile(grpc::ServerContext*, const cfg::ResolveProfileRequest* req,
                              cfg::ResolveProfileResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = *req;
    resp->mutable_profile()->set_name(req->profile());
    resp->mutable_profile()->mutable_escalation()->set_enabled(true);
    resp->mutable_profile()->mutable_escalation()->set_approval_timeout_seconds(120);
    return grpc::Status::OK;
  }
  cfg::ResolveProfileRequest last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  std::mutex mu_;
  cfg::ResolveProfileRequest last_;
};

std::unique_ptr<GrpcUnixServer> Serve(grpc::Service* service, const std::string& socket) {
  auto listener = UnixListener::Bind(socket);
  EXPECT_TRUE(listener.ok()) << listener.status();
  auto server = GrpcUnixServer::Start(std::move(*listener), {service}, {.allowed_uid = geteuid()});
  EXPECT_TRUE(server.ok()) << server.status();
  return *std::move(server);
}

class SessionLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    supervisor_server_ = Serve(&supervisor_, SocketPath(dir_.path(), "supervisor"));
    configd_server_ = Serve(&configd_, SocketPath(dir_.path(), "configd"));
  }
  void TearDown() override {
    supervisor_.DropStreams();
    supervisor_server_->Shutdown();
    configd_server_->Shutdown();
  }

  test::TempDir dir_{"laz-slk"};
  FakeSupervisor supervisor_;
  FakeConfigd configd_;
  std::unique_ptr<GrpcUnixServer> supervisor_server_;
  std::unique_ptr<GrpcUnixServer> configd_server_;
};

TEST_F(SessionLookupTest, FactsComeFromTheSupervisorAndConfigd) {
  supervisor_.Set(Info(kId, sv::SESSION_STATE_ATTACHED));
  auto facts = LookUpSession(dir_.path(), kId);
  ASSERT_TRUE(facts.ok()) << facts.status();
  EXPECT_EQ(facts->record.profile(), "agent");
  EXPECT_EQ(facts->profile.name(), "agent");
  EXPECT_TRUE(facts->profile.escalation().enabled());
  EXPECT_EQ(facts->state, sv::SESSION_STATE_ATTACHED);
  cfg::ResolveProfileRequest asked = configd_.last();
  EXPECT_EQ(asked.profile(), "agent");
  EXPECT_EQ(asked.selector().workspace_dir(), "/home/u/proj");
  EXPECT_EQ(asked.selector().explicit_config(), "/home/u/proj/lazaret.toml");
}

TEST_F(SessionLookupTest, BadUnknownAndEndingSessionsAreRefused) {
  EXPECT_EQ(LookUpSession(dir_.path(), "../etc").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LookUpSession(dir_.path(), kOtherId).status().code(), absl::StatusCode::kNotFound);
  supervisor_.Set(Info(kId, sv::SESSION_STATE_REAPING));
  EXPECT_EQ(LookUpSession(dir_.path(), kId).status().code(), absl::StatusCode::kFailedPrecondition);
}

class Events {
 public:
  SessionEvents Callbacks() {
    return SessionEvents{
        .started = [this](const std::string& id) { Note("started " + id); },
        .ended = [this](const std::string& id) { Note("ended " + id); },
    };
  }
  bool Saw(const std::string& what) {
    return test::WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return std::find(seen_.begin(), seen_.end(), what) != seen_.end();
        },
        std::chrono::seconds(10));
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void Note(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(what);
  }
  std::mutex mu_;
  std::vector<std::string> seen_;
};

TEST_F(SessionLookupTest, WatcherReportsStartsAndEnds) {
  supervisor_.Set(Info(kId, sv::SESSION_STATE_REGISTERED));
  supervisor_.Set(Info(kOtherId, sv::SESSION_STATE_REAPING));
  Events events;
  auto watcher = WatchSessions(dir_.path(), events.Callbacks(), std::chrono::milliseconds(50));
  EXPECT_TRUE(events.Saw(std::string("started ") + kId));
  supervisor_.End(kId);
  EXPECT_TRUE(events.Saw(std::string("ended ") + kId));
  watcher->Stop();
  for (const auto& e : events.seen()) EXPECT_NE(e, std::string("started ") + kOtherId);
}

TEST_F(SessionLookupTest, WatcherReconnectsAndEndsWhatEndedMeanwhile) {
  supervisor_.Set(Info(kId, sv::SESSION_STATE_ATTACHED));
  Events events;
  auto watcher = WatchSessions(dir_.path(), events.Callbacks(), std::chrono::milliseconds(50));
  ASSERT_TRUE(events.Saw(std::string("started ") + kId));
  // The stream goes down; the session ends unannounced; a new one starts.
  supervisor_.End(kId, /*announce=*/false);
  supervisor_.DropStreams();
  EXPECT_TRUE(events.Saw(std::string("ended ") + kId));
  supervisor_.Set(Info(kOtherId, sv::SESSION_STATE_ATTACHED));
  EXPECT_TRUE(events.Saw(std::string("started ") + kOtherId));
  EXPECT_GE(supervisor_.streams_opened(), 2);
}

}  // namespace
}  // namespace lazaret::brokerd
