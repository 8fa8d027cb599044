#include "services/brokerd/tls/ca.h"

#include <gtest/gtest.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <string>

#include "services/common/openssl_util.h"
#include "services/brokerd/tls/session_identity.h"

namespace lazaret::brokerd::tls {
namespace {

const SessionIdentity kAlice{"dev", "0123456789ab"};

std::unique_ptr<CertificateAuthority> NewCa() {
  auto ca = CertificateAuthority::Create();
  EXPECT_TRUE(ca.ok()) << ca.status();
  return *std::move(ca);
}

// X509_verify_cert of `leaf_pem` against `ca_pem` for `purpose`.
int Verify(const std::string& ca_pem, const std::string& leaf_pem, int purpose) {
  auto ca = CertificateFromPem(ca_pem);
  auto leaf = CertificateFromPem(leaf_pem);
  if (!ca.ok() || !leaf.ok()) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca->get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf->get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_X509_STRICT);
  const int ok = X509_verify_cert(ctx);
  const int err = X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok == 1 ? X509_V_OK : err;
}

std::string SanUri(const std::string& pem) {
  auto cert = CertificateFromPem(pem);
  if (!cert.ok()) return "";
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert->get(), NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return "";
  std::string uri;
  if (sk_GENERAL_NAME_num(names) == 1 && sk_GENERAL_NAME_value(names, 0)->type == GEN_URI) {
    const ASN1_IA5STRING* s = sk_GENERAL_NAME_value(names, 0)->d.uniformResourceIdentifier;
    uri.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
  }
  GENERAL_NAMES_free(names);
  return uri;
}

TEST(CertificateAuthorityTest, CaCertificateIsACriticalCaForCertSigningOnly) {
  auto ca = NewCa();
  auto cert = CertificateFromPem(ca->ca_pem());
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_EQ(X509_check_ca(cert->get()), 1);
  int crit = 0;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(cert->get(), NID_basic_constraints, &crit, nullptr));
  ASSERT_NE(bc, nullptr);
  EXPECT_TRUE(bc->ca);
  EXPECT_EQ(crit, 1);
  BASIC_CONSTRAINTS_free(bc);
  EXPECT_EQ(X509_get_key_usage(cert->get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN));
  char cn[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert->get()), NID_commonName, cn, sizeof(cn));
  EXPECT_STREQ(cn, kCaCommonName);
  EVP_PKEY* key = X509_get0_pubkey(cert->get());
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
  char group[32] = {};
  size_t group_len = 0;
  EVP_PKEY_get_group_name(key, group, sizeof(group), &group_len);
  EXPECT_STREQ(group, "prime256v1");
}

TEST(CertificateAuthorityTest, ClientCertificateNamesTheSessionForClientAuthOnly) {
  auto ca = NewCa();
  const int64_t before = absl::ToUnixSeconds(absl::Now());
  auto issued = ca->IssueClient(kAlice, absl::Hours(1));
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(SanUri(issued->cert_pem), "urn:lazaret:session:dev:0123456789ab");
  EXPECT_EQ(Verify(ca->ca_pem(), issued->cert_pem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_NE(Verify(ca->ca_pem(), issued->cert_pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(issued->serial_hex.size(), 32u);
  EXPECT_EQ(issued->serial_hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  auto cert = CertificateFromPem(issued->cert_pem);
  ASSERT_TRUE(cert.ok());
  auto serial = CertificateSerialHex(cert->get());
  ASSERT_TRUE(serial.ok());
  EXPECT_EQ(*serial, issued->serial_hex);
  EXPECT_NEAR(issued->not_before_unix, before - 60, 2);
  EXPECT_NEAR(issued->not_after_unix, before + 3600, 2);
  EXPECT_EQ(X509_check_ca(cert->get()), 0);
  auto key = PrivateKeyFromPem(issued->key_pem);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(X509_check_private_key(cert->get(), key->get()), 1);
}

TEST(CertificateAuthorityTest, ServerCertificateIsTheBrokersForServerAuthOnly) {
  auto ca = NewCa();
  EXPECT_EQ(SanUri(ca->server_pem()), "urn:lazaret:broker");
  EXPECT_EQ(Verify(ca->ca_pem(), ca->server_pem(), X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_NE(Verify(ca->ca_pem(), ca->server_pem(), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
}

TEST(CertificateAuthorityTest, SerialsAreFreshAndAnotherCaIsNotTrusted) {
  auto ca = NewCa();
  auto other = NewCa();
  auto a = ca->IssueClient(kAlice, absl::Hours(1));
  auto b = ca->IssueClient(kAlice, absl::Hours(1));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->serial_hex, b->serial_hex);
  EXPECT_NE(a->key_pem, b->key_pem);
  EXPECT_NE(ca->ca_pem(), other->ca_pem());
  EXPECT_NE(Verify(other->ca_pem(), a->cert_pem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
}

TEST(CertificateAuthorityTest, RenewalKeepsTheKeyAndChangesTheSerial) {
  auto ca = NewCa();
  auto first = ca->IssueClient(kAlice, absl::Hours(1));
  ASSERT_TRUE(first.ok());
  auto renewed = ca->RenewClient(kAlice, absl::Hours(1), first->key_pem);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_NE(renewed->serial_hex, first->serial_hex);
  auto cert = CertificateFromPem(renewed->cert_pem);
  auto key = PrivateKeyFromPem(first->key_pem);
  ASSERT_TRUE(cert.ok() && key.ok());
  EXPECT_EQ(X509_check_private_key(cert->get(), key->get()), 1);
}

TEST(CertificateAuthorityTest, RefusesBadIdentitiesAndLifetimes) {
  auto ca = NewCa();
  for (const SessionIdentity& bad :
       std::vector<SessionIdentity>{{"Dev", "0123456789ab"},
                                    {"a", "0123456789ab"},
                                    {"", "0123456789ab"},
                                    {std::string(33, 'a'), "0123456789ab"},
                                    {"dev:x", "0123456789ab"},
                                    {"dev", "0123456789AB"},
                                    {"dev", "0123456789a"},
                                    {"dev", "0123456789abc"},
                                    {"dev,URI:x", "0123456789ab"}}) {
    EXPECT_FALSE(ca->IssueClient(bad, absl::Hours(1)).ok()) << bad.profile << " " << bad.session_id;
  }
  EXPECT_TRUE(ca->IssueClient({std::string(32, 'a'), "0123456789ab"}, absl::Hours(1)).ok());
  // The configuration's rule: what configd accepts, a certificate can name.
  EXPECT_TRUE(ca->IssueClient({"-dev", "0123456789ab"}, absl::Hours(1)).ok());
  EXPECT_FALSE(ca->IssueClient(kAlice, absl::ZeroDuration()).ok());
  EXPECT_FALSE(ca->IssueClient(kAlice, -absl::Hours(1)).ok());
  EXPECT_FALSE(ca->IssueClient(kAlice, absl::Hours(25)).ok());
}

TEST(SessionUriTest, ParsesExactlyWhatItWrites) {
  auto parsed = CertificateAuthority::ParseSessionUri("urn:lazaret:session:dev:0123456789ab");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, kAlice);
  EXPECT_EQ(SessionUri(kAlice), "urn:lazaret:session:dev:0123456789ab");
  auto underscore = ParseSessionUri("urn:lazaret:session:my_profile-2:abcdefabcdef");
  ASSERT_TRUE(underscore.ok());
  EXPECT_EQ(underscore->profile, "my_profile-2");
}

TEST(SessionUriTest, RefusesAnythingElse) {
  for (const std::string& bad : std::vector<std::string>{
           "",
           "urn:lazaret:session:",
           "urn:lazaret:session:dev",
           "urn:lazaret:session:dev:",
           "urn:lazaret:session::0123456789ab",
           "URN:lazaret:session:dev:0123456789ab",
           "urn:lazaret:Session:dev:0123456789ab",
           " urn:lazaret:session:dev:0123456789ab",
           "urn:lazaret:session:dev:0123456789ab ",
           "urn:lazaret:session:dev:0123456789ab\n",
           "urn:lazaret:session:dev:0123456789ab:x",
           "urn:lazaret:session:dev:x:0123456789ab",
           "urn:lazaret:session:dev:0123456789AB",
           "urn:lazaret:session:Dev:0123456789ab",
           "urn:lazaret:session:dev:0123456789a",
           "urn:lazaret:session:dev/../x:0123456789ab",
           "urn:lazaret:broker",
           std::string("urn:lazaret:session:dev:0123456789ab\0", 37),
           std::string("urn:lazaret:session:de\0v:0123456789ab", 37),
       }) {
    EXPECT_FALSE(ParseSessionUri(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lazaret::brokerd::tls
