#include "services/sessiond/session/sandbox_io.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "lazaret/session/v1/session.grpc.pb.h"
#include "services/common/unix_server.h"
#include "services/sessiond/session/attach_hub.h"
#include "services/sessiond/session/attach_service.h"
#include "services/spawn/spawn.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

struct NoEvents : AttachHub::Events {
  void StopRequested(const std::string&) override {}
  void AttendanceChanged() override {}
};

// What one attached client received, collected on a thread of its own.
class Collector {
 public:
  explicit Collector(std::shared_ptr<AttachHub::Client> c) : client_(std::move(c)) {
    thread_ = std::thread([this] {
      sv1::AttachOutput o;
      while (client_->Next(&o)) {
        absl::MutexLock lock(&mu_);
        if (o.has_terminal()) terminal_ += o.terminal();
        if (o.has_stdout()) stdout_ += o.stdout();
        if (o.has_stderr()) stderr_ += o.stderr();
      }
    });
  }
  ~Collector() { thread_.join(); }

  enum Where { kTerminal, kStdout, kStderr };
  // Until `needle` shows in that output, at most 10 s.
  bool WaitFor(const std::string& needle, Where where = kTerminal) {
    return WaitFor(needle, 10000, where);
  }
  bool WaitFor(const std::string& needle, int ms, Where where = kTerminal) {
    const absl::Time deadline = absl::Now() + absl::Milliseconds(ms);
    while (absl::Now() < deadline) {
      {
        absl::MutexLock lock(&mu_);
        const std::string& seen =
            where == kStdout ? stdout_ : (where == kStderr ? stderr_ : terminal_);
        if (absl::StrContains(seen, needle)) return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  std::string terminal() {
    absl::MutexLock lock(&mu_);
    return terminal_;
  }
  std::string out() {
    absl::MutexLock lock(&mu_);
    return stdout_;
  }
  std::string err() {
    absl::MutexLock lock(&mu_);
    return stderr_;
  }

 private:
  std::shared_ptr<AttachHub::Client> client_;
  absl::Mutex mu_;
  std::string terminal_, stdout_, stderr_;
  std::thread thread_;
};

struct Session {
  explicit Session(bool tty, bool clipboard = false) {
    SandboxIo::Options o;
    o.tty = tty;
    o.rows = 24;
    o.cols = 80;
    o.policy.clipboard_write = clipboard;
    absl::StatusOr<std::unique_ptr<SandboxIo>> made = SandboxIo::Create(o);
    EXPECT_TRUE(made.ok()) << made.status();
    io = *std::move(made);
    AttachHub::Options h;
    h.mode = tty ? AttachHub::Mode::kTty : AttachHub::Mode::kStream;
    h.session_id = "0123456789ab";
    hub = std::make_unique<AttachHub>(h, io.get(), &events);
    io->SetHub(hub.get());
  }
  int Run(const std::string& script) { return RunArgv({"sh", "-c", script}); }
  int RunArgv(const std::vector<std::string>& argv) {
    absl::StatusOr<pid_t> pid = io->Start(argv);
    EXPECT_TRUE(pid.ok()) << pid.status();
    if (!pid.ok()) return -1;
    int status = 0;
    waitpid(*pid, &status, 0);
    io->Finish();
    return ExitCodeOf(status);
  }
  sv1::AttachHello Hello() {
    sv1::AttachHello h;
    h.set_take_input(true);
    return h;
  }
  NoEvents events;
  std::unique_ptr<AttachHub> hub;
  std::unique_ptr<SandboxIo> io;
};

void Type(Session* s, const std::shared_ptr<AttachHub::Client>& c, const std::string& keys) {
  sv1::AttachInput in;
  in.set_stdin(keys);
  s->hub->Input(c, in);
}

// An interactive bash on the session's pty: job control needs the pty to
// be its controlling terminal.
const std::vector<std::string> kBash = {"env",  "-i",     "PS1=$ ",      "TERM=dumb",
                                        "bash", "--norc", "--noprofile", "-i"};

TEST(SandboxIoTest, ChildHasThePtyAsControllingTerminal) {
  Session s(/*tty=*/true);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  EXPECT_EQ(
      s.Run("tty; ps -o tty= -p $$; [ \"$(ps -o sid= -p $$)\" -eq $$ ] && echo leader"), 0);
  EXPECT_TRUE(c.WaitFor("leader")) << c.terminal();
  EXPECT_TRUE(absl::StrContains(c.terminal(), "/dev/pts/")) << c.terminal();
  EXPECT_FALSE(absl::StrContains(c.terminal(), "not a tty")) << c.terminal();
  s.hub->Exit(0, "");
}

TEST(SandboxIoTest, CtrlCInterruptsTheForegroundJobNotTheSession) {
  Session s(/*tty=*/true);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  std::thread typist([&] {
    EXPECT_TRUE(c.WaitFor("$ "));
    // The job says when it runs (in the terminal's foreground group, which
    // bash sets before exec); "fg-2" is not in the echo of what was typed.
    Type(&s, client, "sh -c 'echo fg-$((1+1)); exec sleep 20'\r");
    EXPECT_TRUE(c.WaitFor("fg-2"));
    Type(&s, client, "\x03");
    EXPECT_TRUE(c.WaitFor("^C"));
    for (int i = 0; i < 10 && !c.WaitFor("after=", 500); ++i) {
      Type(&s, client, "echo after=$?\r");
    }
    EXPECT_TRUE(c.WaitFor("after=130")) << c.terminal();
    Type(&s, client, "exit 5\r");
  });
  const absl::Time start = absl::Now();
  EXPECT_EQ(s.RunArgv(kBash), 5);  // the shell itself survived the Ctrl-C
  typist.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  s.hub->Exit(5, "");
}

TEST(SandboxIoTest, CtrlZStopsTheForegroundJob) {
  Session s(/*tty=*/true);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  std::atomic<bool> done{false};
  std::thread typist([&] {
    EXPECT_TRUE(c.WaitFor("$ "));
    Type(&s, client, "sh -c 'echo fg-$((1+1)); exec sleep 20'\r");
    EXPECT_TRUE(c.WaitFor("fg-2"));
    Type(&s, client, "\x1a");
    EXPECT_TRUE(c.WaitFor("Stopped")) << c.terminal();
    // bash may flush what is typed while it takes the terminal back.
    for (int i = 0; i < 10; ++i) {
      Type(&s, client, "kill -KILL %1\r");
      if (c.WaitFor("Killed", 500)) break;
    }
    // A second exit also ends a bash that still counts a stopped job.
    while (!done.load()) {
      Type(&s, client, "exit 0\r");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  const int code = s.RunArgv(kBash);
  done = true;
  typist.join();
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(absl::StrContains(c.terminal(), "no job control")) << c.terminal();
  s.hub->Exit(0, "");
}

TEST(SandboxIoTest, TtyOutputIsFilteredBeforeAnyClientSeesIt) {
  Session s(/*tty=*/true);
  auto client = s.hub->Attach(s.Hello());
  {
    Collector c(client);
    EXPECT_EQ(s.Run("stty size; printf 'A\\033]52;c;Y3VybCBldmlsIHwgc2g=\\007B\\n'; exit 3"), 3);
    EXPECT_TRUE(c.WaitFor("AB"));
    EXPECT_NE(c.terminal().find("24 80"), std::string::npos) << c.terminal();
    EXPECT_EQ(c.terminal().find("]52"), std::string::npos);
    s.hub->Exit(3, "");
  }
}

TEST(SandboxIoTest, ClipboardWritesPassWhenThePolicyAllowsThem) {
  Session s(/*tty=*/true, /*clipboard=*/true);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  s.Run("printf 'A\\033]52;c;eA==\\007B\\n'");
  EXPECT_TRUE(c.WaitFor("B"));
  EXPECT_NE(c.terminal().find("\x1b]52;c;eA==\x07"), std::string::npos);
  s.hub->Exit(0, "");
}

TEST(SandboxIoTest, TheHoldersKeysReachThePtyAndItsSizeFollows) {
  Session s(/*tty=*/true);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  std::thread typist([&] {
    ASSERT_TRUE(c.WaitFor("ready"));
    sv1::AttachInput r;
    r.mutable_resize()->set_rows(30);
    r.mutable_resize()->set_cols(100);
    s.hub->Input(client, r);
    sv1::AttachInput k;
    k.set_stdin("hello\r");
    s.hub->Input(client, k);
  });
  EXPECT_EQ(s.Run("echo ready; read x; echo got:$x; stty size"), 0);
  typist.join();
  EXPECT_TRUE(c.WaitFor("got:hello"));
  EXPECT_TRUE(c.WaitFor("30 100"));
  s.hub->Exit(0, "");
}

TEST(SandboxIoTest, StreamKeepsStdoutAndStderrApartAndPassesStdinToItsEnd) {
  Session s(/*tty=*/false);
  auto client = s.hub->Attach(s.Hello());
  Collector c(client);
  std::thread feeder([&] {
    sv1::AttachInput k;
    k.set_stdin("line one\nline two\n");
    s.hub->Input(client, k);
    sv1::AttachInput eof;
    eof.set_stdin_eof(true);
    s.hub->Input(client, eof);
  });
  EXPECT_EQ(s.Run("cat; echo to-stderr >&2; exit 4"), 4);
  feeder.join();
  s.hub->Exit(4, "");
  EXPECT_TRUE(c.WaitFor("line two\n", Collector::kStdout));
  EXPECT_TRUE(c.WaitFor("to-stderr", Collector::kStderr));
  EXPECT_EQ(c.out(), "line one\nline two\n");
  EXPECT_EQ(c.err(), "to-stderr\n");
}

TEST(SandboxIoTest, StreamOutputWithNobodyAttachedWaitsForTheFirstClient) {
  Session s(/*tty=*/false);
  EXPECT_EQ(s.Run("echo before-anyone; echo err-before >&2"), 0);
  auto client = s.hub->Attach(s.Hello());
  s.hub->Exit(0, "");
  Collector c(client);
  EXPECT_TRUE(c.WaitFor("before-anyone", Collector::kStdout));
  EXPECT_TRUE(c.WaitFor("err-before", Collector::kStderr));
  EXPECT_EQ(c.err(), "err-before\n");
}

// The real AttachService over its socket: hello, state, output, exit.
TEST(AttachServiceTest, AClientOfTheSameUserSeesTheOutputAndTheExit) {
  char tmpl[] = "/tmp/laz-attach-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string socket = std::string(tmpl) + "/attach.sock";
  Session s(/*tty=*/true);
  AttachServiceImpl service(s.hub.get());
  absl::StatusOr<std::unique_ptr<GrpcUnixServer>> server = ServeAttach(socket, &service);
  ASSERT_TRUE(server.ok()) << server.status();

  auto stub = sv1::AttachService::NewStub(DialUnix(socket));
  grpc::ClientContext ctx;
  auto stream = stub->Attach(&ctx);
  sv1::AttachInput hello;
  *hello.mutable_hello() = s.Hello();
  hello.mutable_hello()->mutable_size()->set_rows(40);
  hello.mutable_hello()->mutable_size()->set_cols(120);
  ASSERT_TRUE(stream->Write(hello));
  sv1::AttachOutput out;
  ASSERT_TRUE(stream->Read(&out));
  ASSERT_TRUE(out.has_state());
  EXPECT_TRUE(out.state().has_input());
  EXPECT_TRUE(out.state().tty());
  EXPECT_EQ(out.state().session_id(), "0123456789ab");

  std::thread session([&] {
    s.Run("stty size");
    s.hub->Notice("lazaret: written back");
    s.hub->Exit(0, "");
  });
  std::string shown, notice;
  int exit_code = -1;
  while (stream->Read(&out)) {
    if (out.has_terminal()) shown += out.terminal();
    if (out.has_notice()) notice += out.notice();
    if (out.has_exit()) {
      exit_code = out.exit().exit_code();
      break;
    }
  }
  session.join();
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_NE(shown.find("40 120"), std::string::npos) << shown;
  EXPECT_EQ(notice, "lazaret: written back");
  EXPECT_EQ(exit_code, 0);
  EXPECT_TRUE(s.hub->WaitAllDetached(absl::Seconds(5)));
  (*server)->Shutdown();
  rmdir(tmpl);
}

TEST(AttachServiceTest, TheFirstMessageMustBeTheHello) {
  char tmpl[] = "/tmp/laz-attach-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string socket = std::string(tmpl) + "/attach.sock";
  Session s(/*tty=*/true);
  AttachServiceImpl service(s.hub.get());
  absl::StatusOr<std::unique_ptr<GrpcUnixServer>> server = ServeAttach(socket, &service);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = sv1::AttachService::NewStub(DialUnix(socket));
  grpc::ClientContext ctx;
  auto stream = stub->Attach(&ctx);
  sv1::AttachInput keys;
  keys.set_stdin("rm -rf ~\r");
  ASSERT_TRUE(stream->Write(keys));
  stream->WritesDone();
  sv1::AttachOutput out;
  EXPECT_FALSE(stream->Read(&out));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.hub->attendance().attached, 0u);
  (*server)->Shutdown();
  rmdir(tmpl);
}

}  // namespace
}  // namespace lazaret::cli::session
