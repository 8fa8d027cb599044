// Runs the real lazaret-escalate binary against a TLS test broker on the
// loopback in this process, and against a stand-in for the session's relay
// that cannot reach its broker.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "escalate/client/exit_codes.h"
#include "escalate/client/test_broker.h"
#include "services/wire/frame.h"
#include "services/wire/messages.h"
#include "gtest/gtest.h"

namespace lazaret::escalation::client {
namespace {

using testing::PemPair;
using testing::ResultFrame;
using testing::TestBroker;
using testing::TestBrokerConnection;
using testing::TestCa;

constexpr char kBinary[] = LAZARET_ESCALATE_BIN;
constexpr char kSessionUri[] = "urn:lazaret:session:dev-box:0123456789ab";

// A loopback port nothing listens on (bound, then released).
uint16_t UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// What the session's relay does when its broker cannot be reached: accept
// the connection, then close it (`reset`: with an RST) before any byte.
class RelayWithoutBroker {
 public:
  explicit RelayWithoutBroker(bool reset) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd_, 4);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, reset] {
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      if (reset) {
        linger l{1, 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      }
      close(c);
    });
  }
  ~RelayWithoutBroker() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-escalate-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    certs_ = base_ + "/certs";
    endpoint_ = absl::StrCat("127.0.0.1:", UnusedPort());
    ASSERT_EQ(mkdir(certs_.c_str(), 0700), 0);
    auto ca = TestCa::Create();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = std::move(*ca);
    auto client = ca_->Issue({kSessionUri}, /*server=*/false);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_TRUE(testing::WriteClientCerts(certs_, ca_->ca_pem(), *client).ok());
    auto server = ca_->Issue({"urn:lazaret:broker"}, /*server=*/true);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *server;
  }
  void TearDown() override {
    broker_.reset();
    (void)!system(("rm -rf " + base_).c_str());
  }

  void StartBroker(TestBroker::Handler handler, const PemPair* server = nullptr) {
    auto broker = TestBroker::Start(ca_->ca_pem(), server ? *server : server_, std::move(handler));
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = std::move(*broker);
    endpoint_ = broker_->endpoint();
  }

  // Runs the binary with --endpoint and --certs of this test (unless
  // `defaults`), in base_.
  Outcome Run(std::vector<std::string> args, bool defaults = false) {
    std::vector<std::string> full = {kBinary};
    if (!defaults) full.insert(full.end(), {"--endpoint", endpoint_, "--certs", certs_});
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out_path = base_ + "/out", err_path = base_ + "/err";
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(base_.c_str()) != 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(99);
      execv(kBinary, argv.data());
      _exit(98);
    }
    close(out);
    close(err);
    int status = 0;
    waitpid(pid, &status, 0);
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    o.out = Slurp(out_path);
    o.err = Slurp(err_path);
    return o;
  }

  std::string base_, certs_, endpoint_;
  std::unique_ptr<TestCa> ca_;
  PemPair server_;
  std::unique_ptr<TestBroker> broker_;
};

v1::EscalateResponse Ran(const v1::EscalateRequest& request, int exit_code, const std::string& out,
                         const std::string& err) {
  v1::EscalateResponse r;
  r.set_request_id(request.request_id());
  r.set_approved(true);
  r.set_exit_code(exit_code);
  r.set_stdout(out);
  r.set_stderr(err);
  for (const auto& a : request.argv()) r.add_argv(a);
  return r;
}

TEST_F(ClientTest, OutputBytesAndExitCodePassThrough) {
  const std::string out("bin\0ary\xff\n", 9);
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    ASSERT_TRUE(request.ok()) << request.status();
    ASSERT_TRUE(c.Send(ResultFrame(Ran(*request, 7, out, "warn\n"))).ok());
    c.CloseCleanly();
  });
  Outcome o = Run({"--justify", "need it", "--", "aws", "sts", "", "get-caller-identity"});
  EXPECT_EQ(o.exit_code, 7) << o.err;
  EXPECT_EQ(o.out, out);
  EXPECT_EQ(o.err, "warn\n");
  auto requests = broker_->requests();
  ASSERT_EQ(requests.size(), 1u);
  const v1::EscalateRequest& r = requests[0];
  EXPECT_EQ(r.profile(), "dev-box");
  EXPECT_EQ(r.request_id().size(), 32u);
  EXPECT_EQ(r.request_id().find_first_not_of("0123456789abcdef"), std::string::npos);
  ASSERT_EQ(r.argv_size(), 4);
  EXPECT_EQ(r.argv(2), "");
  EXPECT_EQ(r.command(), "");
  EXPECT_EQ(r.justification(), "need it");
  EXPECT_EQ(r.cwd(), base_);
}

TEST_F(ClientTest, CommandFormAndCwdAreSent) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    ASSERT_TRUE(request.ok());
    ASSERT_TRUE(c.Send(ResultFrame(Ran(*request, 0, "", ""))).ok());
  });
  Outcome o = Run({"--cwd", "/workspace/x", "-c", "ls -l 'a b'"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  ASSERT_EQ(broker_->requests().size(), 1u);
  EXPECT_EQ(broker_->requests()[0].command(), "ls -l 'a b'");
  EXPECT_EQ(broker_->requests()[0].argv_size(), 0);
  EXPECT_EQ(broker_->requests()[0].cwd(), "/workspace/x");
}

TEST_F(ClientTest, MebibyteOutputsPassThrough) {
  const std::string out(1 << 20, 'o'), err(1 << 20, 'e');
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    ASSERT_TRUE(request.ok());
    v1::EscalateResponse r = Ran(*request, 3, out, err);
    r.set_stdout_truncated(true);
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "cat", "big"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.out, out);
  ASSERT_GT(o.err.size(), err.size());
  EXPECT_EQ(o.err.substr(0, err.size()), err);
  EXPECT_NE(o.err.find("stdout was truncated", err.size()), std::string::npos);
}

TEST_F(ClientTest, DeniedExits240WithTheReason) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::EscalateResponse r;
    r.set_request_id(request->request_id());
    r.set_reason("denied by the developer");
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "rm", "-rf", "/"});
  EXPECT_EQ(o.exit_code, kExitDenied);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("denied by the developer"), std::string::npos) << o.err;
}

TEST_F(ClientTest, PendingThenResult) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::ServerFrame pending;
    pending.mutable_pending()->set_request_id(request->request_id());
    pending.mutable_pending()->set_reason("not auto-approved");
    pending.mutable_pending()->set_deadline_unix(time(nullptr) + 30);
    ASSERT_TRUE(c.Send(pending).ok());
    ASSERT_TRUE(c.Send(pending).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(c.Send(ResultFrame(Ran(*request, 5, "done\n", ""))).ok());
  });
  Outcome o = Run({"--", "make", "deploy"});
  EXPECT_EQ(o.exit_code, 5) << o.err;
  EXPECT_EQ(o.out, "done\n");
  const std::string id = broker_->requests().at(0).request_id();
  const std::string line29 = absl::StrCat(
      "lazaret-escalate: waiting for approval on the host (request ", id, ", denied after 29 s)\n");
  const std::string line30 = absl::StrCat(
      "lazaret-escalate: waiting for approval on the host (request ", id, ", denied after 30 s)\n");
  EXPECT_TRUE(o.err == line30 || o.err == line29) << o.err;
}

TEST_F(ClientTest, ApprovalTimeoutExits241) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::ServerFrame pending;
    pending.mutable_pending()->set_request_id(request->request_id());
    pending.mutable_pending()->set_deadline_unix(time(nullptr));
    ASSERT_TRUE(c.Send(pending).ok());
    v1::EscalateResponse r;
    r.set_request_id(request->request_id());
    r.set_reason("no decision before the approval timeout");
    r.set_approval_expired(true);
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "make"});
  EXPECT_EQ(o.exit_code, kExitTimedOut) << o.err;
}

// A person who denies at the last moment is a denial, not a timeout: only
// the broker's approval_expired says the request expired.
TEST_F(ClientTest, DenialAtTheDeadlineExits240) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::ServerFrame pending;
    pending.mutable_pending()->set_request_id(request->request_id());
    pending.mutable_pending()->set_deadline_unix(time(nullptr));
    ASSERT_TRUE(c.Send(pending).ok());
    v1::EscalateResponse r;
    r.set_request_id(request->request_id());
    r.set_reason("no");
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "make"});
  EXPECT_EQ(o.exit_code, kExitDenied) << o.err;
}

TEST_F(ClientTest, ClientTimeoutExits241) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::ServerFrame pending;
    pending.mutable_pending()->set_request_id(request->request_id());
    pending.mutable_pending()->set_deadline_unix(time(nullptr) + 600);
    ASSERT_TRUE(c.Send(pending).ok());
    std::this_thread::sleep_for(std::chrono::seconds(3));
  });
  const auto start = std::chrono::steady_clock::now();
  Outcome o = Run({"--timeout", "1", "--", "make"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(o.exit_code, kExitTimedOut) << o.err;
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  EXPECT_NE(o.err.find("--timeout"), std::string::npos) << o.err;
}

TEST_F(ClientTest, HostTimeoutExits124) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::EscalateResponse r = Ran(*request, 143, "partial", "");
    r.set_timed_out(true);
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "sleep", "999"});
  EXPECT_EQ(o.exit_code, kExitHostTimeout);
  EXPECT_EQ(o.out, "partial");
  EXPECT_NE(o.err.find("timeout"), std::string::npos);
}

TEST_F(ClientTest, JsonPrintsTheResponseAndExitsZero) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::EscalateResponse r;
    r.set_request_id(request->request_id());
    r.set_reason("no");
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--json", "--", "id"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  ASSERT_FALSE(o.out.empty());
  EXPECT_EQ(o.out.find('\n'), o.out.size() - 1);
  EXPECT_NE(o.out.find("\"approved\":false"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"reason\":\"no\""), std::string::npos) << o.out;
}

TEST_F(ClientTest, BrokerRefusingTheRequestExits243) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>& request, TestBrokerConnection& c) {
    v1::EscalateResponse r;
    r.set_request_id(request->request_id());
    r.set_protocol_error(true);
    r.set_reason("request_id used before");
    ASSERT_TRUE(c.Send(ResultFrame(r)).ok());
  });
  Outcome o = Run({"--", "id"});
  EXPECT_EQ(o.exit_code, kExitProtocol);
  EXPECT_NE(o.err.find("request_id used before"), std::string::npos);
}

TEST_F(ClientTest, ServerClosingMidFrameExits243) {
  for (bool clean : {true, false}) {
    StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection& c) {
      const char header[4] = {0, 0, 0, 100};
      ASSERT_TRUE(c.WriteAll(header, 4).ok());
      ASSERT_TRUE(c.WriteAll("{\"result\":", 10).ok());
      if (clean) c.CloseCleanly();
    });
    Outcome o = Run({"--", "id"});
    EXPECT_EQ(o.exit_code, kExitProtocol) << clean << o.err;
    broker_.reset();
  }
}

TEST_F(ClientTest, BadFramesExit243) {
  for (std::string payload : {std::string("{\"result\":{\"bogus\":1}}"), std::string("{}"),
                              std::string("not json"), std::string("{\"result\":{}}")}) {
    StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection& c) {
      ASSERT_TRUE(WriteFrame(c, payload).ok());
    });
    Outcome o = Run({"--", "id"});
    EXPECT_EQ(o.exit_code, kExitProtocol) << payload << o.err;
    broker_.reset();
  }
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection& c) {
    const char header[4] = {0x7f, 0, 0, 0};  // 2 GiB announced
    ASSERT_TRUE(c.WriteAll(header, 4).ok());
  });
  EXPECT_EQ(Run({"--", "id"}).exit_code, kExitProtocol);
}

TEST_F(ClientTest, BrokerWithoutTheBrokerSanIsRefusedBeforeTheRequest) {
  auto impostor = ca_->Issue({"urn:lazaret:session:dev-box:0123456789ab"}, /*server=*/true);
  ASSERT_TRUE(impostor.ok());
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection&) {},
              &*impostor);
  Outcome o = Run({"--", "id"});
  EXPECT_EQ(o.exit_code, kExitProtocol) << o.err;
  EXPECT_NE(o.err.find("urn:lazaret:broker"), std::string::npos) << o.err;
  EXPECT_TRUE(broker_->requests().empty());
}

TEST_F(ClientTest, BrokerFromAnotherCaIsRefused) {
  auto other_ca = TestCa::Create();
  ASSERT_TRUE(other_ca.ok());
  auto other = (*other_ca)->Issue({"urn:lazaret:broker"}, /*server=*/true);
  ASSERT_TRUE(other.ok());
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection&) {}, &*other);
  Outcome o = Run({"--", "id"});
  EXPECT_EQ(o.exit_code, kExitProtocol) << o.err;
  EXPECT_TRUE(broker_->requests().empty());
}

TEST_F(ClientTest, NothingListeningExits242) {
  Outcome o = Run({"--", "id"});
  EXPECT_EQ(o.exit_code, kExitUnreachable);
  EXPECT_NE(o.err.find("cannot reach the broker"), std::string::npos) << o.err;
}

// The relay answers the connection but cannot reach the broker: it resets
// (or closes) before one byte of the broker's. That is "unreachable", not a
// TLS failure.
TEST_F(ClientTest, RelayThatCannotReachTheBrokerExits242) {
  for (bool reset : {true, false}) {
    RelayWithoutBroker relay(reset);
    endpoint_ = relay.endpoint();
    Outcome o = Run({"--", "id"});
    EXPECT_EQ(o.exit_code, kExitUnreachable) << (reset ? "reset: " : "closed: ") << o.err;
    EXPECT_NE(o.err.find("before the broker answered"), std::string::npos) << o.err;
  }
}

// Only an IPv4 address and a port: the client has no way to name a Unix
// socket (the sandbox has none of the host's).
TEST_F(ClientTest, EndpointIsAnIpv4AddressAndAPort) {
  for (const char* bad :
       {"localhost:7457", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1:+80", "127.0.0.256:80", "[::1]:7457", "/run/lazaret/escalate.sock", ":7457"}) {
    Outcome o = Run({"--endpoint", bad, "--", "id"}, /*defaults=*/true);
    EXPECT_EQ(o.exit_code, kExitUsage) << bad << ": " << o.err;
  }
  EXPECT_EQ(Run({"--socket", "/run/lazaret/escalate.sock", "--", "id"}).exit_code, kExitUsage);
}

TEST_F(ClientTest, MissingCertsExit242) {
  StartBroker([&](const absl::StatusOr<v1::EscalateRequest>&, TestBrokerConnection&) {});
  ASSERT_EQ(unlink((certs_ + "/client.key").c_str()), 0);
  Outcome o = Run({"--", "id"});
  EXPECT_EQ(o.exit_code, kExitUnreachable);
  EXPECT_NE(o.err.find("client.key is missing"), std::string::npos) << o.err;
  EXPECT_EQ(broker_->failed_handshakes(), 0);
  EXPECT_EQ(Run({"--", "bad\xff"}).exit_code, kExitUsage);
  // The defaults name /run/lazaret, which this machine lacks.
  EXPECT_EQ(Run({"--", "id"}, /*defaults=*/true).exit_code, kExitUnreachable);
}

TEST_F(ClientTest, BadArgumentsExit244) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{},
                                             {"id"},
                                             {"--"},
                                             {"--", ""},
                                             {"-c"},
                                             {"-c", ""},
                                             {"-c", "ls", "extra"},
                                             {"--bogus", "--", "id"},
                                             {"--timeout", "0", "--", "id"},
                                             {"--timeout", "x", "--", "id"},
                                             {"--cwd", "relative", "--", "id"},
                                             {"--justify"},
                                             {"--justify", std::string(8193, 'j'), "--", "id"},
                                             {"--", "bad\xff"}}) {
    Outcome o = Run(args);
    EXPECT_EQ(o.exit_code, kExitUsage) << (args.empty() ? "" : args[0]) << o.err;
  }
  Outcome help = Run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("244"), std::string::npos);
}

TEST_F(ClientTest, BinaryIsStatic) {
  const std::string out = base_ + "/ldd";
  (void)!system(absl::StrCat("ldd ", kBinary, " > ", out, " 2>&1").c_str());
  EXPECT_NE(Slurp(out).find("not a dynamic executable"), std::string::npos) << Slurp(out);
}

}  // namespace
}  // namespace lazaret::escalation::client
