// The mTLS preflight over real Unix sockets and real TLS: what is accepted,
// and that every refusal happens before one application byte is read.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "services/brokerd/tls/acceptor.h"
#include "services/brokerd/tls/ca.h"
#include "services/brokerd/tls/endpoint.h"
#include "services/brokerd/tls/test_client.h"

namespace lazaret::brokerd::tls {
namespace {

using ::lazaret::brokerd::tls::testing::ClientCredentials;
using ::lazaret::brokerd::tls::testing::ClientOptions;
using ::lazaret::brokerd::tls::testing::ClientResult;

const SessionIdentity kTlsSession{"dev", "0123456789ab"};
// A frame as the client sends it: 4-byte big-endian length, then JSON.
const std::string kFrame = std::string("\0\0\0\x0d", 4) + R"({"argv":["x"]})";
const std::string kSecret = std::string("\0\0\0\x06", 4) + "SECRET";

class TlsTest : public ::testing::Test {
 protected:
  // As in every service (service_main): a write to a closed peer is EPIPE.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  void SetUp() override {
    auto ca = CertificateAuthority::Create();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
    auto acceptor = TlsAcceptor::Create(*ca_);
    ASSERT_TRUE(acceptor.ok()) << acceptor.status();
    acceptor_ = *std::move(acceptor);
    scratch_ = testing::MakeScratchDir("/tmp");
    shm_ = testing::MakeScratchDir("/dev/shm");
    ASSERT_FALSE(scratch_.empty() || shm_.empty());
    endpoint_ = NewEndpoint(kTlsSession);
    ASSERT_NE(endpoint_, nullptr);
  }
  void TearDown() override {
    endpoint_.reset();
    testing::RemoveScratchDir(scratch_);
    testing::RemoveScratchDir(shm_);
  }

  std::unique_ptr<SessionEndpoint> NewEndpoint(const SessionIdentity& identity,
                                               EndpointOptions options = {}) {
    auto ep = SessionEndpoint::Create(scratch_ + "/sock", shm_ + "/certs", identity, *ca_,
                                      absl::Hours(1), false, options);
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? *std::move(ep) : nullptr;
  }
  std::string SocketPath() const { return endpoint_->socket_dir() + "/" + kSocketName; }
  ClientCredentials Credentials() const { return testing::ReadCredentials(endpoint_->certs_dir()); }
  ClientCredentials Issued(const IssuedCertificate& cert) const {
    return {ca_->ca_pem(), cert.cert_pem, cert.key_pem};
  }

  struct Outcome {
    absl::Status status;
    std::string read_by_server;
    ClientResult client;
  };

  // One client on a thread against one Accept here. An accepted stream
  // reads the client's bytes, answers "ok" and closes with close_notify.
  Outcome Exchange(const ClientCredentials& creds, const std::string& send,
                   const ClientOptions& options = {}) {
    Outcome out;
    std::thread client(
        [&] { out.client = testing::RunClient(SocketPath(), creds, send, options); });
    auto stream = endpoint_->Accept(*acceptor_);
    out.status = stream.status();
    if (stream.ok()) {
      char buf[256];
      while (out.read_by_server.size() < send.size()) {
        auto n = (*stream)->Read(buf, sizeof(buf));
        if (!n.ok() || *n == 0) break;
        out.read_by_server.append(buf, *n);
      }
      EXPECT_GE((*stream)->application_records_read(), send.empty() ? 0u : 1u);
      EXPECT_TRUE((*stream)->WriteAll("ok", 2).ok());
      EXPECT_TRUE((*stream)->Close().ok());
    }
    client.join();
    return out;
  }

  // A refused exchange: the status names `check`, the client's bytes were
  // never decrypted and the client got nothing back.
  void ExpectRefusedBeforePayload(const Outcome& out, const std::string& check) {
    EXPECT_FALSE(out.status.ok());

    EXPECT_TRUE(absl::StrContains(out.status.message(), check)) << out.status;
    EXPECT_EQ(acceptor_->records_read_before_preflight(), 0u);
    EXPECT_EQ(out.read_by_server, "");
    EXPECT_EQ(out.client.received, "");
    EXPECT_FALSE(out.client.clean_close);
  }

  std::unique_ptr<CertificateAuthority> ca_;
  std::unique_ptr<TlsAcceptor> acceptor_;
  std::string scratch_;
  std::string shm_;
  std::unique_ptr<SessionEndpoint> endpoint_;
};

TEST_F(TlsTest, GoodClientIsAcceptedAndItsFirstFrameIsRead) {
  Outcome out = Exchange(Credentials(), kFrame);
  ASSERT_TRUE(out.status.ok()) << out.status;
  EXPECT_EQ(out.read_by_server, kFrame);
  EXPECT_TRUE(out.client.handshake_ok);
  EXPECT_TRUE(out.client.server_cert_is_broker);
  EXPECT_EQ(out.client.received, "ok");
  EXPECT_TRUE(out.client.clean_close) << out.client.error;
  EXPECT_EQ(acceptor_->records_read_before_preflight(), 0u);
}

TEST_F(TlsTest, AcceptedStreamNamesItsPeer) {
  std::thread client([&] { testing::RunClient(SocketPath(), Credentials(), kFrame); });
  auto stream = endpoint_->Accept(*acceptor_);
  ASSERT_TRUE(stream.ok()) << stream.status();
  EXPECT_EQ((*stream)->peer().identity, kTlsSession);
  EXPECT_EQ((*stream)->peer().serial_hex, endpoint_->current_serial());
  EXPECT_EQ((*stream)->peer().not_after_unix, absl::ToUnixSeconds(endpoint_->not_after()));
  EXPECT_EQ((*stream)->application_records_read(), 0u);  // nothing read yet
  EXPECT_TRUE((*stream)->Close().ok());
  client.join();
}

TEST_F(TlsTest, NoClientCertificateIsRefused) {
  ClientCredentials creds = Credentials();
  creds.cert_pem.clear();
  creds.key_pem.clear();
  ExpectRefusedBeforePayload(Exchange(creds, kSecret), "certificate");
}

TEST_F(TlsTest, AnotherSessionsCertificateIsRefused) {
  auto other = ca_->IssueClient({kTlsSession.profile, "ba9876543210"}, absl::Hours(1));
  ASSERT_TRUE(other.ok());
  ExpectRefusedBeforePayload(Exchange(Issued(*other), kSecret),
                             "names session ba9876543210, this socket is session 0123456789ab");
}

TEST_F(TlsTest, AnotherSessionsLiveCertificateIsRefused) {
  auto other = NewEndpoint({kTlsSession.profile, "ba9876543210"});
  ASSERT_NE(other, nullptr);
  ExpectRefusedBeforePayload(Exchange(testing::ReadCredentials(other->certs_dir()), kSecret),
                             "names session");
}

TEST_F(TlsTest, AnotherProfilesCertificateIsRefused) {
  auto other = ca_->IssueClient({"prod", kTlsSession.session_id}, absl::Hours(1));
  ASSERT_TRUE(other.ok());
  ExpectRefusedBeforePayload(Exchange(Issued(*other), kSecret),
                             "names profile 'prod', this socket is profile 'dev'");
}

TEST_F(TlsTest, ExpiredCertificateIsRefused) {
  const absl::Time now = absl::Now();
  auto expired =
      ca_->IssueClientForTesting(kTlsSession, now - absl::Hours(2), now - absl::Hours(1));
  ASSERT_TRUE(expired.ok());
  ExpectRefusedBeforePayload(Exchange(Issued(*expired), kSecret), "expired");
}

TEST_F(TlsTest, NotYetValidCertificateIsRefused) {
  const absl::Time now = absl::Now();
  auto future = ca_->IssueClientForTesting(kTlsSession, now + absl::Hours(1), now + absl::Hours(2));
  ASSERT_TRUE(future.ok());
  ExpectRefusedBeforePayload(Exchange(Issued(*future), kSecret), "not yet valid");
}

TEST_F(TlsTest, ValidCertificateWhoseSerialIsNotLiveIsRefused) {
  // Same CA, same session and profile, valid - but never handed out.
  auto unknown = ca_->IssueClient(kTlsSession, absl::Hours(1));
  ASSERT_TRUE(unknown.ok());
  ExpectRefusedBeforePayload(Exchange(Issued(*unknown), kSecret), "is not live");
}

TEST_F(TlsTest, CertificateOfAnEndedSessionIsRefusedByANewEndpointOfTheSameId) {
  const ClientCredentials kept = Credentials();
  ASSERT_TRUE(Exchange(kept, kFrame).status.ok());
  ASSERT_TRUE(endpoint_->Close().ok());
  endpoint_ = NewEndpoint(kTlsSession);
  ASSERT_NE(endpoint_, nullptr);
  ExpectRefusedBeforePayload(Exchange(kept, kSecret), "is not live");
  EXPECT_TRUE(Exchange(Credentials(), kFrame).status.ok());
}

TEST_F(TlsTest, CertificateOfAnotherCaWithTheSameNamesIsRefused) {
  auto other_ca = CertificateAuthority::Create();
  ASSERT_TRUE(other_ca.ok());
  auto forged = (*other_ca)->IssueClient(kTlsSession, absl::Hours(1));
  ASSERT_TRUE(forged.ok());
  // The client trusts our CA for the server; only its own certificate is foreign.
  ExpectRefusedBeforePayload(Exchange(Issued(*forged), kSecret), "failed verification");
}

TEST_F(TlsTest, Tls12ClientIsRefused) {
  ClientOptions options;
  options.max_version = TLS1_2_VERSION;
  Outcome out = Exchange(Credentials(), kSecret, options);
  ExpectRefusedBeforePayload(out, "unsupported protocol");
  EXPECT_FALSE(out.client.handshake_ok);
}

TEST_F(TlsTest, NoTicketIsIssuedAndNoSessionIsResumed) {
  Outcome first = Exchange(Credentials(), kFrame);
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_EQ(first.client.tickets, 0);
  ASSERT_NE(first.client.session, nullptr);
  ClientOptions options;
  options.offer_session = first.client.session.get();
  Outcome second = Exchange(Credentials(), kFrame, options);
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_FALSE(second.client.reused);
  EXPECT_EQ(second.client.tickets, 0);
}

TEST_F(TlsTest, SilentClientRunsIntoTheHandshakeDeadline) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const absl::Time start = absl::Now();
  auto stream = acceptor_->Establish(fs::UniqueFd(fds[0]), endpoint_->expected_peer(),
                                     start + absl::Milliseconds(300));
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kDeadlineExceeded) << stream.status();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  close(fds[1]);
}

TEST_F(TlsTest, ReadHonoursTheStreamDeadline) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const ClientCredentials creds = Credentials();
  // The client handshakes, then sends nothing and waits for the server to close.
  std::thread client([&] { testing::RunClientOnFd(fds[1], creds, ""); });
  auto stream = acceptor_->Establish(fs::UniqueFd(fds[0]), endpoint_->expected_peer(),
                                     absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(stream.ok()) << stream.status();
  (*stream)->set_deadline(absl::Now() + absl::Milliseconds(200));
  char buf[16];
  auto n = (*stream)->Read(buf, sizeof(buf));
  EXPECT_EQ(n.status().code(), absl::StatusCode::kDeadlineExceeded) << n.status();
  (*stream)->set_deadline(absl::Now() + absl::Seconds(5));
  EXPECT_TRUE((*stream)->Close().ok());
  client.join();
}

TEST_F(TlsTest, ConnectionCutWithoutCloseNotifyIsAnErrorNotAnEnd) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const ClientCredentials creds = Credentials();
  std::thread client([&] { testing::RunClientOnFd(fds[1], creds, "abc"); });
  auto stream = acceptor_->Establish(fs::UniqueFd(fds[0]), endpoint_->expected_peer(),
                                     absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(stream.ok()) << stream.status();
  char buf[16];
  auto n = (*stream)->Read(buf, sizeof(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(std::string(buf, *n), "abc");
  shutdown(fds[1], SHUT_WR);  // the client's side ends with no close_notify
  auto cut = (*stream)->Read(buf, sizeof(buf));
  EXPECT_FALSE(cut.ok());
  EXPECT_TRUE((*stream)->Close().ok());
  EXPECT_FALSE((*stream)->Read(buf, sizeof(buf)).ok());
  client.join();
}

TEST_F(TlsTest, PeerOfAnotherUidIsRefusedBeforeTheHandshake) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to setuid() the client to nobody";
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  // A socket that nobody may reach: in a 0755 directory, mode 0777.
  const std::string dir = testing::MakeScratchDir("/tmp", 0755);
  const std::string path = dir + "/peer.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(chmod(path.c_str(), 0777), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  const ClientCredentials creds = Credentials();  // a good certificate, even
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(gid) != 0 || setuid(uid) != 0) _exit(3);
    ClientResult r = testing::RunClient(path, creds, kSecret);
    _exit(r.received.empty() && !r.clean_close ? 0 : 1);
  }
  auto stream = acceptor_->Accept(listener, endpoint_->expected_peer());
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(stream.status().message(),
                                "peer uid " + std::to_string(uid) + " is not the broker's uid 0"))
      << stream.status();
  EXPECT_TRUE(absl::StrContains(stream.status().message(), "SO_PEERCRED"));
  if (stream.ok()) (void)(*stream)->Close();  // never hang on a child left waiting
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  EXPECT_EQ(acceptor_->records_read_before_preflight(), 0u);
  close(listener);
  testing::RemoveScratchDir(dir);
}

TEST_F(TlsTest, RenewalKeepsTheOldSerialForTheOverlapThenRefusesIt) {
  endpoint_.reset();
  EndpointOptions options;
  options.renewal_overlap = absl::Milliseconds(700);
  endpoint_ = NewEndpoint(kTlsSession, options);
  ASSERT_NE(endpoint_, nullptr);
  const ClientCredentials old_creds = Credentials();
  const std::string old_serial = endpoint_->current_serial();
  ASSERT_TRUE(endpoint_->Renew().ok());
  const ClientCredentials new_creds = Credentials();
  EXPECT_NE(new_creds.cert_pem, old_creds.cert_pem);
  EXPECT_EQ(new_creds.key_pem, old_creds.key_pem);
  EXPECT_NE(endpoint_->current_serial(), old_serial);
  EXPECT_TRUE(Exchange(old_creds, kFrame).status.ok());
  EXPECT_TRUE(Exchange(new_creds, kFrame).status.ok());
  absl::SleepFor(absl::Milliseconds(800));
  ExpectRefusedBeforePayload(Exchange(old_creds, kSecret), "is not live");
  EXPECT_TRUE(Exchange(new_creds, kFrame).status.ok());
}

TEST_F(TlsTest, StopAcceptingWakesABlockedAccept) {
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(100));
    endpoint_->StopAccepting();
  });
  auto stream = endpoint_->Accept(*acceptor_);
  EXPECT_FALSE(stream.ok());
  stopper.join();
}

}  // namespace
}  // namespace lazaret::brokerd::tls
