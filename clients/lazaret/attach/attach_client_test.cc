// The attach client against a fake AttachService on a Unix socket: the
// client's descriptors are pipes, so what it sends and writes is judged
// exactly.
#include "clients/lazaret/attach/attach_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::attach {
namespace {

namespace pb = ::lazaret::session::v1;

// What the fake saw, and how it answers: the output it sends once it has
// the client's stdin to its end (stream) or at once (tty).
class FakeAttach final : public pb::AttachService::Service {
 public:
  std::vector<pb::AttachOutput> answer;
  bool answer_after_eof = true;

  grpc::Status Attach(grpc::ServerContext*,
                      grpc::ServerReaderWriter<pb::AttachOutput, pb::AttachInput>* stream) override {
    pb::AttachInput in;
    bool answered = false;
    auto send_answer = [&] {
      for (const pb::AttachOutput& o : answer) stream->Write(o);
      answered = true;
    };
    if (!answer_after_eof) send_answer();
    while (stream->Read(&in)) {
      bool eof = false;
      {
        absl::MutexLock lock(&mu);
        inputs.push_back(in);
        if (in.input_case() == pb::AttachInput::kStdin) stdin_bytes += in.stdin();
        eof = in.input_case() == pb::AttachInput::kStdinEof;
      }
      if (eof && !answered) {
        send_answer();
        return grpc::Status::OK;
      }
    }
    absl::MutexLock lock(&mu);
    ended_by_client = true;
    return grpc::Status::OK;
  }

  absl::Mutex mu;
  std::vector<pb::AttachInput> inputs ABSL_GUARDED_BY(mu);
  std::string stdin_bytes ABSL_GUARDED_BY(mu);
  bool ended_by_client ABSL_GUARDED_BY(mu) = false;
};

// Everything readable on `fd` until its writers are gone.
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

class AttachClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/attach.sock";
    absl::StatusOr<std::unique_ptr<UnixListener>> l = UnixListener::Bind(socket_);
    ASSERT_TRUE(l.ok()) << l.status();
    absl::StatusOr<std::unique_ptr<GrpcUnixServer>> s =
        GrpcUnixServer::Start(*std::move(l), {&fake_}, PeerPolicy{geteuid()});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    for (int* p : {in_, out_, err_}) ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    for (int* p : {in_, out_, err_}) {
      for (int i : {0, 1}) {
        if (p[i] >= 0) close(p[i]);
      }
    }
  }
  AttachOptions Options(bool tty) {
    AttachOptions o;
    o.program = "attach_client_test";
    o.session_id = "0123456789ab";
    o.attach_socket = socket_;
    o.runtime_dir = dir_.path();
    o.tty_session = tty;
    o.inline_approver = false;
    o.in_fd = in_[0];
    o.out_fd = out_[1];
    o.err_fd = err_[1];
    return o;
  }
  // Runs the client to its end; its output pipes are then read whole.
  int Run(const AttachOptions& o) {
    const int code = RunAttached(o);
    close(out_[1]);
    close(err_[1]);
    out_[1] = err_[1] = -1;
    return code;
  }

  test::TempDir dir_{"laz-attach"};
  std::string socket_;
  FakeAttach fake_;
  std::unique_ptr<GrpcUnixServer> server_;
  int in_[2] = {-1, -1};
  int out_[2] = {-1, -1};
  int err_[2] = {-1, -1};
};

TEST_F(AttachClientTest, StreamSessionSendsStdinToItsEndAndKeepsStdoutAndStderrApart) {
  pb::AttachOutput o;
  o.set_stdout("to stdout");
  fake_.answer.push_back(o);
  o.set_stderr("to stderr");
  fake_.answer.push_back(o);
  o.set_notice("lazaret: written back");
  fake_.answer.push_back(o);
  o.mutable_exit()->set_exit_code(3);
  fake_.answer.push_back(o);
  ASSERT_EQ(write(in_[1], "typed input", 11), 11);
  close(in_[1]);
  in_[1] = -1;
  EXPECT_EQ(Run(Options(/*tty=*/false)), 3);
  EXPECT_EQ(ReadAll(out_[0]), "to stdout");
  EXPECT_EQ(ReadAll(err_[0]), "to stderrlazaret: written back\n");
  absl::MutexLock lock(&fake_.mu);
  EXPECT_EQ(fake_.stdin_bytes, "typed input");
  ASSERT_FALSE(fake_.inputs.empty());
  ASSERT_TRUE(fake_.inputs[0].has_hello());
  EXPECT_TRUE(fake_.inputs[0].hello().take_input());
  EXPECT_EQ(fake_.inputs.back().input_case(), pb::AttachInput::kStdinEof);
}

TEST_F(AttachClientTest, DetachKeyEndsTheAttachWithoutStoppingAndNeverReachesTheSession) {
  fake_.answer_after_eof = false;
  pb::AttachOutput o;
  o.set_terminal("agent screen");
  fake_.answer.push_back(o);
  AttachOptions opts = Options(/*tty=*/true);
  opts.take_input = false;
  int code = -1;
  std::thread client([&] { code = Run(opts); });
  // The keys only once the screen arrived.
  std::string screen(12, '\0');
  size_t got = 0;
  while (got < screen.size()) {
    const ssize_t n = read(out_[0], screen.data() + got, screen.size() - got);
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(screen, "agent screen");
  ASSERT_EQ(write(in_[1], "ls\r\x1c" "d", 5), 5);
  client.join();
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ReadAll(out_[0]), "");
  EXPECT_NE(ReadAll(err_[0]).find("detached from session 0123456789ab"), std::string::npos);
  ASSERT_TRUE(test::WaitFor(
      [&] {
        absl::MutexLock lock(&fake_.mu);
        return fake_.ended_by_client;
      },
      std::chrono::seconds(5)));
  absl::MutexLock lock(&fake_.mu);
  EXPECT_EQ(fake_.stdin_bytes, "ls\r");
  ASSERT_FALSE(fake_.inputs.empty());
  EXPECT_FALSE(fake_.inputs[0].hello().take_input());
  for (const pb::AttachInput& in : fake_.inputs) {
    EXPECT_NE(in.input_case(), pb::AttachInput::kStop) << "a detach never stops the session";
  }
}

TEST_F(AttachClientTest, TakeInputKeySendsTakeInput) {
  fake_.answer_after_eof = false;
  auto took = [&] {
    absl::MutexLock lock(&fake_.mu);
    for (const pb::AttachInput& in : fake_.inputs) {
      if (in.take_input()) return true;
    }
    return false;
  };
  ASSERT_EQ(write(in_[1], "\x1c" "i", 2), 2);
  // The detach only once the worker has the take_input: a detach cancels
  // the call, and a message still in flight may go with it.
  std::thread detacher([&] {
    (void)test::WaitFor(took, std::chrono::seconds(10));
    (void)!write(in_[1], "\x1c" "d", 2);
  });
  EXPECT_EQ(Run(Options(/*tty=*/true)), 0);
  detacher.join();
  EXPECT_TRUE(took());
  absl::MutexLock lock(&fake_.mu);
  EXPECT_EQ(fake_.stdin_bytes, "");
}

TEST_F(AttachClientTest, ASessionThatEndsWithoutAnExitIsReportedLost) {
  server_->Shutdown();
  server_.reset();
  close(in_[1]);
  in_[1] = -1;
  EXPECT_EQ(Run(Options(/*tty=*/false)), 125);
  EXPECT_NE(ReadAll(err_[0]).find("0123456789ab"), std::string::npos);
}

}  // namespace
}  // namespace lazaret::cli::attach
