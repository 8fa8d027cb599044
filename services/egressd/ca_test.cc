#include "services/egressd/ca.h"

#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/egressd/tls.h"
#include "tests/support/test_support.h"

namespace lazaret::egressd {
namespace {

using ::testing::HasSubstr;

// OpenSSL's own chain verification of `leaf` against `ca` alone, with a
// hostname check for `host`; returns the verify error (X509_V_OK = 0).
int Verify(X509* ca, X509* leaf, const std::string& host) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  const int ok = X509_verify_cert(ctx);
  const int err = X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok == 1 ? X509_V_OK : (err == X509_V_OK ? -1 : err);
}

TEST(SessionCaTest, LeafVerifiesForItsHostOnly) {
  auto ca = SessionCa::Create("s1", {"api.example.com", "*.githubusercontent.com"});
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto leaf = (*ca)->LeafFor("api.example.com");
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(Verify((*ca)->ca_cert(), (*leaf)->cert.get(), "api.example.com"), X509_V_OK);
  EXPECT_EQ(Verify((*ca)->ca_cert(), (*leaf)->cert.get(), "evil.example.com"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  auto raw = (*ca)->LeafFor("raw.githubusercontent.com");
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(Verify((*ca)->ca_cert(), (*raw)->cert.get(), "raw.githubusercontent.com"), X509_V_OK);
  EXPECT_THAT((*ca)->CaPem(), HasSubstr("BEGIN CERTIFICATE"));
}

TEST(SessionCaTest, NameConstraintsStopLeavesForOtherHosts) {
  auto ca = SessionCa::Create("s1", {"api.example.com"});
  ASSERT_TRUE(ca.ok()) << ca.status();
  // The CA mints what it is asked; the constraint is what a client checks.
  auto other = (*ca)->LeafFor("www.google.com");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Verify((*ca)->ca_cert(), (*other)->cert.get(), "www.google.com"),
            X509_V_ERR_PERMITTED_VIOLATION);
}

TEST(SessionCaTest, CaShape) {
  auto ca = SessionCa::Create("abc123", {"api.example.com"});
  ASSERT_TRUE(ca.ok()) << ca.status();
  X509* cert = (*ca)->ca_cert();
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  EXPECT_STREQ(cn, "Lazaret session abc123 egress CA");
  EXPECT_TRUE(X509_check_ca(cert));
  EXPECT_EQ(X509_get_pathlen(cert), 0);
  EXPECT_TRUE(X509_get_key_usage(cert) & KU_KEY_CERT_SIGN);
  EXPECT_TRUE(X509_get_key_usage(cert) & KU_CRL_SIGN);
  int crit = -1;
  void* bc = X509_get_ext_d2i(cert, NID_basic_constraints, &crit, nullptr);
  EXPECT_EQ(crit, 1);
  BASIC_CONSTRAINTS_free(static_cast<BASIC_CONSTRAINTS*>(bc));
  time_t now = time(nullptr);
  EXPECT_LT(X509_cmp_time(X509_get0_notBefore(cert), &now), 0);
  time_t in29d = now + 29 * 86400;
  time_t in31d = now + 31 * 86400;
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(cert), &in29d), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(cert), &in31d), 0);
}

TEST(SessionCaTest, LeafShapeAndCache) {
  auto ca = SessionCa::Create("s", {"api.example.com"});
  ASSERT_TRUE(ca.ok());
  auto a = (*ca)->LeafFor("api.example.com");
  auto b = (*ca)->LeafFor("api.example.com");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  X509* leaf = (*a)->cert.get();
  EXPECT_FALSE(X509_check_ca(leaf));
  EXPECT_TRUE(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr,
                                                            nullptr));
  ASSERT_NE(sans, nullptr);
  EXPECT_EQ(sk_GENERAL_NAME_num(sans), 1);
  GENERAL_NAMES_free(sans);
  EXPECT_LE(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter((*ca)->ca_cert())), 0);
  EXPECT_GE(ASN1_TIME_compare(X509_get0_notBefore(leaf), X509_get0_notBefore((*ca)->ca_cert())),
            0);
  EXPECT_EQ(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);
}

TEST(SessionCaTest, RefusesBadNames) {
  auto ca = SessionCa::Create("s", {"api.example.com"});
  ASSERT_TRUE(ca.ok());
  for (const char* bad : {"", "*.example.com", "API.example.com", "a b.com", "a.com:443",
                          "127.0.0.1", "x\x01y.com"}) {
    EXPECT_FALSE((*ca)->LeafFor(bad).ok()) << bad;
  }
  EXPECT_FALSE(SessionCa::Create("s", {"Bad.Example.com"}).ok());
  EXPECT_FALSE(SessionCa::Create("a b", {"api.example.com"}).ok());
}

// A real handshake between the proxy's two TLS ends over a socketpair: the
// server presents the leaf chosen for the SNI, the client verifies it
// against the session CA file; ALPN picks the server's preference.
TEST(TlsTest, ServerAndClientStreamsTalk) {
  auto ca = SessionCa::Create("s", {"api.example.com"});
  ASSERT_TRUE(ca.ok());
  test::TempDir dir;
  const std::string ca_file = dir.path() + "/ca.pem";
  std::ofstream(ca_file) << (*ca)->CaPem();
  auto server_ctx = TlsServerContext::Create();
  auto client_ctx = TlsClientContext::Create({.ca_file = ca_file});
  ASSERT_TRUE(server_ctx.ok() && client_ctx.ok());
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::string seen_name;
  PickLeaf pick = [&](const std::string& name) -> absl::StatusOr<std::shared_ptr<const LeafCert>> {
    seen_name = name;
    return (*ca)->LeafFor(name);
  };
  absl::StatusOr<std::unique_ptr<TlsServerStream>> server;
  std::thread t([&] {
    server = TlsServerStream::Accept(**server_ctx, fs::UniqueFd(sv[0]), pick, {"h2", "http/1.1"},
                                     absl::Now() + kTlsHandshakeTimeout);
  });
  auto client = TlsClientStream::Connect(**client_ctx, fs::UniqueFd(sv[1]), "api.example.com",
                                         {"http/1.1", "h2"}, absl::Now() + kTlsHandshakeTimeout);
  t.join();
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(seen_name, "api.example.com");
  EXPECT_EQ((*server)->Alpn(), "h2");
  EXPECT_EQ((*client)->Alpn(), "h2");
  EXPECT_EQ((*server)->ServerName(), "api.example.com");
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  ASSERT_EQ(WriteAllBefore(**client, "hello", deadline), IoStatus::kOk);
  char buf[16];
  size_t n = 0;
  ASSERT_EQ(ReadBefore(**server, buf, sizeof(buf), &n, deadline), IoStatus::kOk);
  EXPECT_EQ(std::string(buf, n), "hello");
  (*client)->ShutdownWrite();
  EXPECT_EQ(ReadBefore(**server, buf, sizeof(buf), &n, deadline), IoStatus::kClosed);
}

TEST(TlsTest, ClientRefusesWrongHostAndServerRefusesUnknownName) {
  auto ca = SessionCa::Create("s", {"api.example.com", "other.example.com"});
  ASSERT_TRUE(ca.ok());
  test::TempDir dir;
  const std::string ca_file = dir.path() + "/ca.pem";
  std::ofstream(ca_file) << (*ca)->CaPem();
  auto server_ctx = TlsServerContext::Create();
  auto client_ctx = TlsClientContext::Create({.ca_file = ca_file});
  ASSERT_TRUE(server_ctx.ok() && client_ctx.ok());
  // The server presents api.example.com's leaf whatever the name: the
  // client, asking for other.example.com, must refuse it.
  {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    PickLeaf pick = [&](const std::string&) { return (*ca)->LeafFor("api.example.com"); };
    std::thread t([&] {
      (void)TlsServerStream::Accept(**server_ctx, fs::UniqueFd(sv[0]), pick, {},
                                    absl::Now() + absl::Seconds(5));
    });
    auto client = TlsClientStream::Connect(**client_ctx, fs::UniqueFd(sv[1]), "other.example.com",
                                           {}, absl::Now() + absl::Seconds(5));
    t.join();
    ASSERT_FALSE(client.ok());
    EXPECT_THAT(client.status().message(), HasSubstr("not trusted"));
  }
  // A name the pick refuses ends the handshake on the server side.
  {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    PickLeaf pick = [&](const std::string& name)
        -> absl::StatusOr<std::shared_ptr<const LeafCert>> {
      return absl::PermissionDeniedError(absl::StrCat(name, " is not intercepted"));
    };
    absl::StatusOr<std::unique_ptr<TlsServerStream>> server;
    std::thread t([&] {
      server = TlsServerStream::Accept(**server_ctx, fs::UniqueFd(sv[0]), pick, {},
                                       absl::Now() + absl::Seconds(5));
    });
    auto client = TlsClientStream::Connect(**client_ctx, fs::UniqueFd(sv[1]), "evil.example.net",
                                           {}, absl::Now() + absl::Seconds(5));
    t.join();
    EXPECT_FALSE(client.ok());
    ASSERT_FALSE(server.ok());
    EXPECT_THAT(server.status().message(), HasSubstr("evil.example.net is not intercepted"));
  }
}

TEST(TlsTest, HandshakeTimesOut) {
  auto server_ctx = TlsServerContext::Create();
  ASSERT_TRUE(server_ctx.ok());
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  fs::UniqueFd silent(sv[1]);
  PickLeaf pick = [](const std::string&) -> absl::StatusOr<std::shared_ptr<const LeafCert>> {
    return absl::InternalError("unused");
  };
  const absl::Time start = absl::Now();
  auto server = TlsServerStream::Accept(**server_ctx, fs::UniqueFd(sv[0]), pick, {},
                                        start + absl::Milliseconds(300));
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(server.status())) << server.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace lazaret::egressd
