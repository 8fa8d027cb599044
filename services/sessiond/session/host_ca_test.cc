#include "services/sessiond/session/host_ca.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/plan_test_inputs.h"

namespace lazaret::cli::session {
namespace {

namespace pb_config = ::lazaret::config::v1;

// A self-signed certificate with `cn` (and its key's PEM in `key_pem`).
std::string MakeCertificate(const std::string& cn, std::string* key_pem = nullptr) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, key);
  X509_sign(x, key, EVP_sha256());
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(out, x);
  char* p = nullptr;
  const long n = BIO_get_mem_data(out, &p);
  std::string pem(p, static_cast<size_t>(n));
  BIO_free(out);
  if (key_pem != nullptr) {
    BIO* k = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
    const long kn = BIO_get_mem_data(k, &p);
    key_pem->assign(p, static_cast<size_t>(kn));
    BIO_free(k);
  }
  X509_free(x);
  EVP_PKEY_free(key);
  return pem;
}

// The CN of each certificate in `pem`, in order.
std::vector<std::string> CommonNames(const std::string& pem) {
  std::vector<std::string> out;
  BIO* in = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* x = PEM_read_bio_X509(in, nullptr, nullptr, nullptr)) {
    char buf[256];
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, sizeof(buf));
    out.push_back(buf);
    X509_free(x);
  }
  BIO_free(in);
  return out;
}

class HostCaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-hostca-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(HostCaTest, ReencodesOnlyCertificates) {
  const std::string a = MakeCertificate("Test Root A");
  const std::string b = MakeCertificate("Test Root B");
  // A bundle as distributions write them: comments between the blocks, and
  // trailing bytes that are no PEM at all.
  const std::string bundle = absl::StrCat("# Issuer: CN=Test Root A\n", a,
                                          "\n# garbage line \x01\x02\n", b, "trailer bytes\n");
  absl::StatusOr<HostCaCertificates> got = ReencodeCertificates(bundle, "/x/bundle.pem");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->count, 2u);
  EXPECT_EQ(got->pem, a + b) << "exactly the two certificates, re-encoded";
  EXPECT_FALSE(absl::StrContains(got->pem, "#"));
  EXPECT_EQ(CommonNames(got->pem), (std::vector<std::string>{"Test Root A", "Test Root B"}));

  // A private key in the file: the whole store is refused, and the key's
  // bytes never appear in the message.
  std::string key;
  const std::string c = MakeCertificate("Test Root C", &key);
  absl::StatusOr<HostCaCertificates> with_key =
      ReencodeCertificates(absl::StrCat(a, key, c), "/x/withkey.pem");
  ASSERT_FALSE(with_key.ok());
  EXPECT_TRUE(absl::StrContains(with_key.status().message(), "PRIVATE KEY")) << with_key.status();
  EXPECT_TRUE(absl::StrContains(with_key.status().message(), "not a certificate"));
  EXPECT_TRUE(absl::StrContains(with_key.status().message(), "SSL_CERT_FILE"));

  // A CERTIFICATE block whose body is not X.509.
  const std::string fake =
      "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
  absl::StatusOr<HostCaCertificates> bad = ReencodeCertificates(a + fake, "/x/fake.pem");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "certificate 2 is not a valid X.509"))
      << bad.status();

  // A truncated block.
  absl::StatusOr<HostCaCertificates> cut =
      ReencodeCertificates(a + b.substr(0, b.size() / 2), "/x/cut.pem");
  EXPECT_FALSE(cut.ok());

  // Nothing at all.
  absl::StatusOr<HostCaCertificates> none = ReencodeCertificates("# empty\n", "/x/none.pem");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::StrContains(none.status().message(), "holds no certificate"));
}

TEST_F(HostCaTest, RefusesOversize) {
  const std::string a = MakeCertificate("Test Root A");
  // Bytes: one past the limit is refused before anything is parsed.
  std::string big = a + std::string(kMaxHostCaBytes, '#');
  absl::StatusOr<HostCaCertificates> got = ReencodeCertificates(big, "/x/big.pem");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  // And read from a file: ReadHostFile stops at the limit.
  const std::string path = Write("big.pem", big);
  std::map<std::string, std::string> env = {{"SSL_CERT_FILE", path}};
  auto lookup = [&env](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<HostCaCertificates> read = ReadHostCaStore(lookup);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kResourceExhausted) << read.status();

  // Count: kMaxHostCaCertificates are fine, one more is refused (small
  // enough in bytes to pass the first bound).
  std::string many;
  for (size_t i = 0; i <= kMaxHostCaCertificates; ++i) many += a;
  ASSERT_LE(many.size(), kMaxHostCaBytes);
  absl::StatusOr<HostCaCertificates> too_many = ReencodeCertificates(many, "/x/many.pem");
  ASSERT_FALSE(too_many.ok());
  EXPECT_TRUE(absl::StrContains(too_many.status().message(), "more than 4000 certificates"))
      << too_many.status();
  many.resize(many.size() - a.size());
  absl::StatusOr<HostCaCertificates> at_limit = ReencodeCertificates(many, "/x/limit.pem");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->count, kMaxHostCaCertificates);
}

TEST_F(HostCaTest, HonoursSslCertFile) {
  std::map<std::string, std::string> env;
  auto lookup = [&env](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  // Unset or empty: OpenSSL's compiled-in default file.
  EXPECT_EQ(HostCaStorePath(lookup), X509_get_default_cert_file());
  env["SSL_CERT_FILE"] = "";
  EXPECT_EQ(HostCaStorePath(lookup), X509_get_default_cert_file());

  const std::string path = Write("store.pem", MakeCertificate("Only Test Root"));
  env["SSL_CERT_FILE"] = path;
  EXPECT_EQ(HostCaStorePath(lookup), path);
  absl::StatusOr<HostCaCertificates> got = ReadHostCaStore(lookup);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->source, path);
  EXPECT_EQ(CommonNames(got->pem), std::vector<std::string>{"Only Test Root"});

  env["SSL_CERT_FILE"] = dir_ + "/missing.pem";
  absl::StatusOr<HostCaCertificates> missing = ReadHostCaStore(lookup);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "missing.pem")) << missing.status();
  env["SSL_CERT_FILE"] = "relative.pem";
  EXPECT_FALSE(ReadHostCaStore(lookup).ok());

  // Written into the session directory: ca/ 0700, host.pem 0644, never
  // over something already there.
  ASSERT_TRUE(WriteHostCaFile(dir_, *got).ok());
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/ca").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(lstat(HostCaFilePath(dir_).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  std::ifstream in(HostCaFilePath(dir_));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), got->pem);
  EXPECT_FALSE(WriteHostCaFile(dir_, *got).ok());
}

TEST(HostCaPlanTest, BindsTheFileAndNamesItAndTheBundle) {
  const HostCaPlan p = PlanHostCaMounts("/run/x/sessions/s1");
  ASSERT_EQ(p.mounts.size(), 2u);
  const auto* b = std::get_if<BindMount>(&p.mounts[0]);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->host, "/run/x/sessions/s1/ca/host.pem");
  EXPECT_EQ(b->container, "/run/lazaret/ca/host.pem");
  EXPECT_TRUE(b->read_only);
  EXPECT_TRUE(b->selinux_shared);
  const auto* t = std::get_if<TmpfsMount>(&p.mounts[1]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->container, "/run/lazaret/ca-bundle");
  EXPECT_EQ(p.init_args,
            (std::vector<std::string>{"--ca-host=/run/lazaret/ca/host.pem",
                                      "--ca-bundle=/run/lazaret/ca-bundle/bundle.pem"}));
  std::map<std::string, std::string> env;
  for (const EnvSetting& e : p.env) env[e.name] = e.value;
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"NODE_EXTRA_CA_CERTS", "/run/lazaret/ca/host.pem"},
                     {"SSL_CERT_FILE", "/run/lazaret/ca-bundle/bundle.pem"},
                     {"REQUESTS_CA_BUNDLE", "/run/lazaret/ca-bundle/bundle.pem"},
                     {"CURL_CA_BUNDLE", "/run/lazaret/ca-bundle/bundle.pem"},
                     {"GIT_SSL_CAINFO", "/run/lazaret/ca-bundle/bundle.pem"},
                     {"PIP_CERT", "/run/lazaret/ca-bundle/bundle.pem"},
                 }));
}

// In a whole session: the file and the tmpfs among the sandbox's mounts,
// sandbox-init told to build the bundle after the Git Shadow's options,
// and the variables before the profile's env, so the profile's win.
TEST(HostCaPlanTest, SessionWithTrustHostCaProfileEnvWins) {
  PlanInputs in = test_plan::Inputs();
  in.profile_env = {{"PIP_CERT", "/etc/pip-ca.pem", true}};
  pb_config::ResolvedProfile profile = test_plan::PlainProfile();
  auto without = PlanSession(in, profile, test_plan::RepoGitPlan());
  ASSERT_TRUE(without.ok()) << without.status();
  for (const std::string& a : without->sandbox_argv) {
    EXPECT_FALSE(absl::StrContains(a, "/run/lazaret/ca")) << a;
  }
  profile.set_trust_host_ca(true);
  auto plan = PlanSession(in, profile, test_plan::RepoGitPlan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string> mounts = test_plan::MountFlags(plan->sandbox_argv);
  EXPECT_TRUE(test_plan::Has(
      mounts, "--volume=/rt/sessions/0123456789ab/ca/host.pem:/run/lazaret/ca/host.pem:ro,z"));
  EXPECT_TRUE(test_plan::Has(
      mounts, "--mount=type=tmpfs,destination=/run/lazaret/ca-bundle,tmpfs-mode=0755"));
  const std::vector<std::string>& init = plan->sandbox.init_args;
  ASSERT_GE(init.size(), 2u);
  EXPECT_EQ(init[init.size() - 2], "--ca-host=/run/lazaret/ca/host.pem");
  EXPECT_EQ(init.back(), "--ca-bundle=/run/lazaret/ca-bundle/bundle.pem");
  EXPECT_EQ(std::vector<std::string>(init.begin(), init.end() - 2), without->sandbox.init_args);
  std::map<std::string, std::string> env;  // later lines win, as in podman's env file
  for (const EnvSetting& e : plan->env) env[e.name] = e.value;
  EXPECT_EQ(env["PIP_CERT"], "/etc/pip-ca.pem");
  EXPECT_EQ(env["GIT_SSL_CAINFO"], "/run/lazaret/ca-bundle/bundle.pem");
  EXPECT_EQ(env["NODE_EXTRA_CA_CERTS"], "/run/lazaret/ca/host.pem");
}

}  // namespace
}  // namespace lazaret::cli::session
