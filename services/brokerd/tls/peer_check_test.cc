// CheckPeerCertificate on certificates crafted with OpenSSL directly: the
// shapes our CA never issues must be refused, each for its own reason.
#include "services/brokerd/tls/peer_check.h"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <string>

#include "absl/strings/match.h"
#include "services/brokerd/tls/ca.h"
#include "services/common/openssl_util.h"

namespace lazaret::brokerd::tls {
namespace {

const SessionIdentity kPeerSession{"dev", "0123456789ab"};
constexpr char kUri[] = "urn:lazaret:session:dev:0123456789ab";

// A self-signed certificate with the given SAN entries (each "URI:..." or
// "DNS:...", or a raw GENERAL_NAME when `raw_uri` is set) and serial.
X509Ptr Craft(const std::vector<std::string>& sans, const std::string& serial_hex = "01",
              const std::string& raw_uri = "") {
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), X509_VERSION_3);
  BIGNUM* bn = nullptr;
  BN_hex2bn(&bn, serial_hex.c_str());
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_set_pubkey(cert.get(), key.get());
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  for (const std::string& san : sans) {
    const bool uri = absl::StartsWith(san, "URI:");
    GENERAL_NAME* gn = GENERAL_NAME_new();
    ASN1_IA5STRING* s = ASN1_IA5STRING_new();
    ASN1_STRING_set(s, san.data() + 4, static_cast<int>(san.size() - 4));
    GENERAL_NAME_set0_value(gn, uri ? GEN_URI : GEN_DNS, s);
    sk_GENERAL_NAME_push(names, gn);
  }
  if (!raw_uri.empty()) {
    GENERAL_NAME* gn = GENERAL_NAME_new();
    ASN1_IA5STRING* s = ASN1_IA5STRING_new();
    ASN1_STRING_set(s, raw_uri.data(), static_cast<int>(raw_uri.size()));
    GENERAL_NAME_set0_value(gn, GEN_URI, s);
    sk_GENERAL_NAME_push(names, gn);
  }
  if (sk_GENERAL_NAME_num(names) > 0) {
    X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT);
  }
  GENERAL_NAMES_free(names);
  X509_sign(cert.get(), key.get(), EVP_sha256());
  return cert;
}

ExpectedPeer Expect(bool live = true) {
  return {kPeerSession, [live](const std::string&) { return live; }};
}

std::string Refusal(X509* cert, const ExpectedPeer& expected = Expect()) {
  auto r = CheckPeerCertificate(cert, expected, absl::Now());
  return r.ok() ? "accepted" : std::string(r.status().message());
}

TEST(PeerCheckTest, TheOneShapeWeIssueIsAccepted) {
  X509Ptr cert = Craft({std::string("URI:") + kUri}, "00112233445566778899aabbccddeeff");
  auto r = CheckPeerCertificate(cert.get(), Expect(), absl::Now());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->identity, kPeerSession);
  EXPECT_EQ(r->serial_hex, "00112233445566778899aabbccddeeff");
  EXPECT_NEAR(r->not_after_unix, absl::ToUnixSeconds(absl::Now()) + 3600, 5);
}

TEST(PeerCheckTest, SanShapesWeNeverIssueAreRefused) {
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({}).get()), "no subjectAltName URI"));
  EXPECT_TRUE(absl::StrContains(
      Refusal(Craft({std::string("URI:") + kUri, std::string("URI:") + kUri}).get()),
      "exactly one entry"));
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({std::string("URI:") + kUri, "DNS:localhost"}).get()),
                                "exactly one entry"));
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({std::string("DNS:") + kUri}).get()), "not a URI"));
  EXPECT_TRUE(absl::StrContains(
      Refusal(Craft({}, "01", std::string(kUri) + std::string("\0", 1)).get()), "session URI"));
  EXPECT_TRUE(
      absl::StrContains(Refusal(Craft({"URI:urn:lazaret:broker"}).get()), "urn:lazaret:session"));
}

TEST(PeerCheckTest, SerialsWeNeverIssueAreRefused) {
  const std::string san = std::string("URI:") + kUri;
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({san}, "0100112233445566778899aabbccddeeff").get()),
                                "longer than 128 bits"));
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({san}, "-01").get()), "negative"));
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({san}).get(), Expect(false)), "is not live"));
  EXPECT_TRUE(absl::StrContains(Refusal(Craft({san}).get(), ExpectedPeer{kPeerSession, nullptr}),
                                "is not live"));
}

TEST(PeerCheckTest, NoCertificateAndTimeAreChecked) {
  EXPECT_TRUE(absl::StrContains(Refusal(nullptr), "no client certificate"));
  X509Ptr cert = Craft({std::string("URI:") + kUri});
  EXPECT_TRUE(absl::StrContains(
      std::string(CheckPeerCertificate(cert.get(), Expect(), absl::Now() + absl::Hours(2))
                      .status()
                      .message()),
      "expired"));
  EXPECT_TRUE(absl::StrContains(
      std::string(CheckPeerCertificate(cert.get(), Expect(), absl::Now() - absl::Hours(1))
                      .status()
                      .message()),
      "not yet valid"));
}

}  // namespace
}  // namespace lazaret::brokerd::tls
