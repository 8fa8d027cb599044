// ApproverService through a real gRPC channel over a Unix socket
// (GrpcUnixServer, peer-checked), with the real RequestBook and AuditLog.
#include "services/brokerd/approver_service.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "lazaret/egress/v1/egress.grpc.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/brokerd/test_requests.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

using testing::kOther;
using testing::kSession;
using testing::Request;

pb::Approver Script() {
  pb::Approver a;
  a.set_kind(pb::Approver::KIND_SCRIPT);
  a.set_name("ci-script");
  a.set_pid(getpid());
  return a;
}

class ApproverServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RequestBookOptions options;
    options.decide_wait = absl::Milliseconds(100);
    book_ = std::make_unique<RequestBook>(
        options,
        [](const pb::Edit& edit, const pb::PendingRequest&) -> absl::StatusOr<EditedCommand> {
          if (edit.argv_size() == 0 || edit.argv(0) != "uname") {
            return absl::NotFoundError("argv[0] is not on the broker's PATH");
          }
          EditedCommand c;
          c.argv.assign(edit.argv().begin(), edit.argv().end());
          c.binary = "/usr/bin/uname";
          return c;
        },
        [this](const std::string& id) {
          std::lock_guard<std::mutex> lock(mu_);
          aborted_.push_back(id);
        });
    auto audit = AuditLog::Open(dir_.path() + "/state/lazaret/audit.jsonl");
    ASSERT_TRUE(audit.ok()) << audit.status();
    audit_ = *std::move(audit);
    service_ = std::make_unique<ApproverService>(
        book_.get(),
        [] {
          pb::SessionEndpoint e;
          e.set_session_id(kSession);
          e.set_profile("default");
          e.set_socket("/run/user/0/lazaret/escalation/0123456789ab/escalate.sock");
          e.add_auto_approve("git status");
          return std::vector<pb::SessionEndpoint>{e};
        },
        [](const pb::ParseCommandRequest& req) {
          pb::ParseCommandResponse resp;
          resp.set_ok(true);
          resp.add_argv(req.command());
          return resp;
        },
        audit_.get());
    socket_ = dir_.path() + "/brokerd.sock";
    auto listener = UnixListener::Bind(socket_);
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server =
        GrpcUnixServer::Start(std::move(*listener), {service_.get()}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = pb::ApproverService::NewStub(DialUnix(socket_));
  }

  void TearDown() override {
    book_->Close();
    if (server_) server_->Shutdown();
  }

  grpc::Status Decide(const pb::DecideRequest& req, pb::DecideResponse* resp = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::DecideResponse ignored;
    return stub_->Decide(&ctx, req, resp != nullptr ? resp : &ignored);
  }

  pb::DecideRequest Approve(const std::string& id) {
    pb::DecideRequest d;
    d.set_request_id(id);
    *d.mutable_approver() = Script();
    d.mutable_approve();
    return d;
  }

  test::TempDir dir_{"laz-apv"};
  std::mutex mu_;
  std::vector<std::string> aborted_;
  std::unique_ptr<RequestBook> book_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<ApproverService> service_;
  std::string socket_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::unique_ptr<pb::ApproverService::Stub> stub_;
};

TEST_F(ApproverServiceTest, ReflectionListsTheApproverService) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(DialUnix(socket_));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  std::vector<std::string> names;
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  while (stream->Read(&resp)) {
    for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  }
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_NE(std::find(names.begin(), names.end(), "lazaret.approver.v1.ApproverService"),
            names.end());
}

TEST_F(ApproverServiceTest, WatchStreamsPendingThenAddedAndResolved) {
  ASSERT_TRUE(book_->Add(Request("first")).ok());
  grpc::ClientContext ctx;
  pb::WatchPendingRequest req;
  req.set_session_id(kSession);
  *req.mutable_approver() = Script();
  req.mutable_approver()->set_kind(pb::Approver::KIND_TERMINAL);
  auto reader = stub_->WatchPending(&ctx, req);
  pb::PendingEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), pb::PendingEvent::KIND_ADDED);
  EXPECT_EQ(event.request().request_id(), "first");

  // While the stream is open, ListSessions counts the watcher.
  {
    grpc::ClientContext list_ctx;
    pb::ListSessionsResponse list;
    ASSERT_TRUE(stub_->ListSessions(&list_ctx, pb::ListSessionsRequest(), &list).ok());
    ASSERT_EQ(list.sessions_size(), 1);
    EXPECT_EQ(list.sessions(0).pending(), 1u);
    EXPECT_EQ(list.sessions(0).approvers_terminal(), 1u);
    EXPECT_EQ(list.sessions(0).approvers_script(), 0u);
    EXPECT_EQ(list.sessions(0).auto_approve(0), "git status");
  }

  ASSERT_TRUE(book_->Add(Request("second")).ok());
  ASSERT_TRUE(book_->Add(Request("elsewhere", kOther)).ok());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), pb::PendingEvent::KIND_ADDED);
  EXPECT_EQ(event.request().request_id(), "second");
  pb::DecideRequest deny = Approve("first");
  deny.mutable_deny()->set_reason("not today");
  ASSERT_TRUE(Decide(deny).ok());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), pb::PendingEvent::KIND_RESOLVED);
  EXPECT_EQ(event.request().request_id(), "first");
  EXPECT_TRUE(absl::StrContains(event.resolution(), "denied by ci-script")) << event.resolution();
  ctx.TryCancel();
  while (reader->Read(&event)) {
  }
  reader->Finish();
  // Once the stream is gone the watcher no longer counts.
  EXPECT_TRUE(test::WaitFor(
      [&] {
        grpc::ClientContext list_ctx;
        pb::ListSessionsResponse list;
        return stub_->ListSessions(&list_ctx, pb::ListSessionsRequest(), &list).ok() &&
               list.sessions_size() == 1 && list.sessions(0).approvers_terminal() == 0;
      },
      std::chrono::seconds(5)));
}

TEST_F(ApproverServiceTest, SecondDecisionIsFailedPreconditionNamingTheFirst) {
  auto handle = book_->Add(Request("r1"));
  ASSERT_TRUE(handle.ok());
  std::thread runner([&] {
    auto d = book_->WaitForDecision(*handle, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(d.ok());
    book_->Started(*handle);
  });
  pb::DecideResponse resp;
  grpc::Status first = Decide(Approve("r1"), &resp);
  runner.join();
  ASSERT_TRUE(first.ok()) << first.error_message();
  EXPECT_EQ(resp.binary(), "/usr/bin/id");
  ASSERT_EQ(resp.argv_size(), 2);
  grpc::Status second = Decide(Approve("r1"));
  EXPECT_EQ(second.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(second.error_message(), "approved by ci-script (script"))
      << second.error_message();
  EXPECT_EQ(Decide(Approve("unknown")).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ApproverServiceTest, EditIsCheckedAndAFailedEditKeepsItPending) {
  ASSERT_TRUE(book_->Add(Request("e1")).ok());
  pb::DecideRequest edit = Approve("e1");
  edit.mutable_edit()->add_argv("sh");
  edit.mutable_edit()->add_argv("-c");
  grpc::Status bad = Decide(edit);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(bad.error_message(), "PATH")) << bad.error_message();
  grpc::ClientContext ctx;
  pb::GetRequestRequest get;
  get.set_request_id("e1");
  pb::RequestState state;
  ASSERT_TRUE(stub_->GetRequest(&ctx, get, &state).ok());
  EXPECT_EQ(state.phase(), pb::RequestState::PHASE_PENDING);

  edit.mutable_edit()->clear_argv();
  edit.mutable_edit()->add_argv("uname");
  pb::DecideResponse resp;
  ASSERT_TRUE(Decide(edit, &resp).ok());
  EXPECT_EQ(resp.binary(), "/usr/bin/uname");
}

TEST_F(ApproverServiceTest, AbortStopsTheSession) {
  ASSERT_TRUE(book_->Add(Request("a1")).ok());
  pb::DecideRequest abort = Approve("a1");
  abort.mutable_abort()->set_reason("it tried to read ~/.ssh");
  ASSERT_TRUE(Decide(abort).ok());
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(aborted_, std::vector<std::string>{kSession});
}

TEST_F(ApproverServiceTest, MalformedInputIsInvalidArgument) {
  ASSERT_TRUE(book_->Add(Request("ok")).ok());
  pb::DecideRequest none;
  none.set_request_id("ok");
  EXPECT_EQ(Decide(none).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Decide(Approve("bad id")).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Decide(Approve(std::string(65, 'a'))).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::DecideRequest tty = Approve("ok");
  tty.mutable_approver()->set_tty("/dev/pts/1\x1b]0;owned\x07");
  EXPECT_EQ(Decide(tty).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::DecideRequest kind = Approve("ok");
  kind.mutable_approver()->set_kind(static_cast<pb::Approver::Kind>(42));
  EXPECT_EQ(Decide(kind).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::DecideRequest both = Approve("ok");
  both.mutable_edit()->set_command("uname");
  both.mutable_edit()->add_argv("uname");
  EXPECT_EQ(Decide(both).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::DecideRequest reason = Approve("ok");
  reason.mutable_deny()->set_reason("no\nnewline");
  EXPECT_EQ(Decide(reason).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext ctx;
  pb::WatchPendingRequest watch;
  watch.set_session_id("../../etc");
  auto reader = stub_->WatchPending(&ctx, watch);
  pb::PendingEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext get_ctx;
  pb::GetRequestRequest get;
  get.set_request_id("a/b");
  pb::RequestState state;
  EXPECT_EQ(stub_->GetRequest(&get_ctx, get, &state).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext parse_ctx;
  pb::ParseCommandRequest parse;
  parse.set_command("id");
  parse.set_session_id("XYZ");
  pb::ParseCommandResponse parsed;
  EXPECT_EQ(stub_->ParseCommand(&parse_ctx, parse, &parsed).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Still pending after all of that.
  EXPECT_EQ(book_->Get("ok")->phase(), pb::RequestState::PHASE_PENDING);
}

TEST_F(ApproverServiceTest, DecideAndGetRequestByTheBrokersId) {
  auto handle = book_->Add(Request("cat-README-md"));
  ASSERT_TRUE(handle.ok());
  pb::DecideRequest bad = Approve("");
  bad.set_id("cat-README-md");  // an agent's id is no broker id
  EXPECT_EQ(Decide(bad).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext get_ctx;
  pb::GetRequestRequest get;
  get.set_id(handle->id());
  pb::RequestState state;
  ASSERT_TRUE(stub_->GetRequest(&get_ctx, get, &state).ok());
  EXPECT_EQ(state.request().id(), handle->id());
  EXPECT_EQ(state.request().request_id(), "cat-README-md");
  pb::DecideRequest deny = Approve("");
  deny.set_id(handle->id());
  deny.mutable_deny()->set_reason("no");
  ASSERT_TRUE(Decide(deny).ok());
  EXPECT_EQ(book_->Get("cat-README-md")->phase(), pb::RequestState::PHASE_DONE);
  grpc::ClientContext bad_get_ctx;
  get.set_id("q1;rm");
  EXPECT_EQ(stub_->GetRequest(&bad_get_ctx, get, &state).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ApproverServiceTest, ParseCommandCallsTheParser) {
  grpc::ClientContext ctx;
  pb::ParseCommandRequest req;
  req.set_command("git status");
  req.set_session_id(kSession);
  pb::ParseCommandResponse resp;
  ASSERT_TRUE(stub_->ParseCommand(&ctx, req, &resp).ok());
  EXPECT_TRUE(resp.ok());
  EXPECT_EQ(resp.argv(0), "git status");
}

TEST_F(ApproverServiceTest, GetRequestShowsTheResult) {
  auto h = book_->AddRunning(Request("done"));
  ASSERT_TRUE(h.ok());
  pb::AuditRecord record;
  record.set_request_id("done");
  record.set_decision(pb::AuditRecord::DECISION_AUTO_APPROVED);
  record.set_exit_code(0);
  book_->Complete(*h, record, "1000\n", "");
  grpc::ClientContext ctx;
  pb::GetRequestRequest req;
  req.set_request_id("done");
  pb::RequestState state;
  ASSERT_TRUE(stub_->GetRequest(&ctx, req, &state).ok());
  EXPECT_EQ(state.phase(), pb::RequestState::PHASE_DONE);
  EXPECT_EQ(state.record().decision(), pb::AuditRecord::DECISION_AUTO_APPROVED);
  EXPECT_EQ(state.stdout(), "1000\n");
}

TEST_F(ApproverServiceTest, ReadAuditStreamsTheLogFilteredAndLast) {
  // Nothing audited yet: an empty stream, not an error.
  {
    grpc::ClientContext ctx;
    auto reader = stub_->ReadAudit(&ctx, pb::ReadAuditRequest());
    pb::AuditRecord r;
    EXPECT_FALSE(reader->Read(&r));
    EXPECT_TRUE(reader->Finish().ok());
  }
  for (int i = 0; i < 4; ++i) {
    pb::AuditRecord r;
    r.set_session_id(i % 2 == 0 ? kSession : kOther);
    r.set_request_id(absl::StrCat("r", i));
    ASSERT_TRUE(audit_->Append(r).ok());
  }
  auto read = [&](const std::string& session, uint32_t last) {
    grpc::ClientContext ctx;
    pb::ReadAuditRequest req;
    req.set_session_id(session);
    req.set_last(last);
    auto reader = stub_->ReadAudit(&ctx, req);
    std::vector<std::string> ids;
    pb::AuditRecord r;
    while (reader->Read(&r)) ids.push_back(r.request_id());
    EXPECT_TRUE(reader->Finish().ok());
    auto meta = ctx.GetServerTrailingMetadata().find(kAuditUnparsableMetadata);
    EXPECT_NE(meta, ctx.GetServerTrailingMetadata().end());
    return ids;
  };
  EXPECT_EQ(read("", 0), (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
  EXPECT_EQ(read(kSession, 0), (std::vector<std::string>{"r0", "r2"}));
  EXPECT_EQ(read("", 3), (std::vector<std::string>{"r1", "r2", "r3"}));
  EXPECT_EQ(read(kOther, 1), (std::vector<std::string>{"r3"}));
}

// A netpolicyd that streams two entries of session kSession.
class FakeNetPolicy final : public netpolicy::v1::NetPolicyService::Service {
 public:
  grpc::Status WatchLog(grpc::ServerContext*, const netpolicy::v1::WatchLogRequest* req,
                        grpc::ServerWriter<netpolicy::v1::LogEntry>* writer) override {
    if (req->session().id() != kSession) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no");
    follow = req->follow();
    for (const char* dst : {"198.51.100.2", "10.0.0.1"}) {
      netpolicy::v1::LogEntry e;
      e.set_kind(netpolicy::v1::LOG_KIND_CONNECT_REFUSED);
      e.set_destination(dst);
      e.set_process("curl\x1b");
      writer->Write(e);
    }
    return grpc::Status::OK;
  }
  bool follow = false;
};

TEST_F(ApproverServiceTest, WatchEgressLogPassesNetpolicydsLogThrough) {
  auto call = [&](const std::string& id, std::vector<netpolicy::v1::LogEntry>* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::WatchEgressLogRequest req;
    req.set_session_id(id);
    req.set_follow(true);
    auto reader = stub_->WatchEgressLog(&ctx, req);
    netpolicy::v1::LogEntry e;
    while (reader->Read(&e)) out->push_back(e);
    return reader->Finish();
  };
  std::vector<netpolicy::v1::LogEntry> got;
  // Not configured: says so.
  EXPECT_EQ(call(kSession, &got).error_code(), grpc::StatusCode::UNAVAILABLE);

  const std::string runtime = dir_.path() + "/run";
  ASSERT_EQ(mkdir(runtime.c_str(), 0700), 0);
  FakeNetPolicy fake;
  auto listener = UnixListener::Bind(runtime + "/netpolicyd.sock");
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto netpolicyd = GrpcUnixServer::Start(std::move(*listener), {&fake}, {.allowed_uid = geteuid()});
  ASSERT_TRUE(netpolicyd.ok()) << netpolicyd.status();
  service_->set_egress_log(NetpolicydEgressLog(runtime));

  ASSERT_TRUE(call(kSession, &got).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].destination(), "198.51.100.2");
  EXPECT_EQ(got[1].process(), "curl\x1b");
  EXPECT_TRUE(fake.follow);
  // netpolicyd's refusal comes back with its code; a malformed id never
  // leaves brokerd.
  got.clear();
  grpc::Status other = call(kOther, &got);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::NOT_FOUND) << other.error_message();
  EXPECT_EQ(call("../etc", &got).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(got.empty());
  (*netpolicyd)->Shutdown();
}

class FakeEgress final : public egress::v1::EgressService::Service {
 public:
  grpc::Status WatchRequests(grpc::ServerContext*, const egress::v1::WatchRequestsRequest* req,
                             grpc::ServerWriter<egress::v1::RequestRecord>* writer) override {
    if (req->session_id() != kSession) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no");
    follow = req->follow();
    for (const char* path : {"/v1/messages", "/v1/admin"}) {
      egress::v1::RequestRecord r;
      r.set_host("api.example.com");
      r.set_path(path);
      r.add_secrets("anthropic");
      writer->Write(r);
    }
    return grpc::Status::OK;
  }
  bool follow = false;
};

TEST_F(ApproverServiceTest, WatchRequestLogPassesEgressdsLogThrough) {
  auto call = [&](const std::string& id, std::vector<egress::v1::RequestRecord>* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::WatchEgressLogRequest req;
    req.set_session_id(id);
    req.set_follow(true);
    auto reader = stub_->WatchRequestLog(&ctx, req);
    egress::v1::RequestRecord r;
    while (reader->Read(&r)) out->push_back(r);
    return reader->Finish();
  };
  std::vector<egress::v1::RequestRecord> got;
  EXPECT_EQ(call(kSession, &got).error_code(), grpc::StatusCode::UNAVAILABLE);

  const std::string runtime = dir_.path() + "/run";
  ASSERT_EQ(mkdir(runtime.c_str(), 0700), 0);
  FakeEgress fake;
  auto listener = UnixListener::Bind(runtime + "/egressd.sock");
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto egressd = GrpcUnixServer::Start(std::move(*listener), {&fake}, {.allowed_uid = geteuid()});
  ASSERT_TRUE(egressd.ok()) << egressd.status();
  service_->set_request_log(EgressdRequestLog(runtime));

  ASSERT_TRUE(call(kSession, &got).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].path(), "/v1/admin");
  EXPECT_EQ(got[0].secrets(0), "anthropic");
  EXPECT_TRUE(fake.follow);
  got.clear();
  EXPECT_EQ(call(kOther, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(call("../etc", &got).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(got.empty());
  (*egressd)->Shutdown();
}

}  // namespace
}  // namespace lazaret::brokerd
