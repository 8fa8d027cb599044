// mTLS from inside a real sandbox: certificates that are not this socket's
// live session's - another live session's of the same profile, another
// profile's, an ended session's, a self-signed one naming this session, a
// directory with only the CA - are refused before the payload is read
// (nothing runs, the audit has no record), and a resumption attempt is
// never honoured. The same copy procedure with the session's own
// certificates works (the control). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;

constexpr char kCertsMount[] = "/run/lazaret/certs";
constexpr long kTmpfsMagic = 0x01021994;
constexpr long kRamfsMagic = 0x858458f6;

bool Exists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

// Copies a host certificate directory into a workspace, readable by the
// sandbox's user; returns the path inside the sandbox.
std::string CopyCerts(const std::string& from, const std::string& workspace,
                      const std::string& name, const std::vector<std::string>& files) {
  const std::string dir = workspace + "/" + name;
  test::Run({"rm", "-rf", dir});
  RunAs(workspace, {"mkdir", "-p", name});
  for (const auto& f : files) {
    test::Run({"cp", from + "/" + f, dir + "/" + f});
    test::Run(
        {"chown", std::to_string(Env().uid) + ":" + std::to_string(Env().gid), dir + "/" + f});
    chmod((dir + "/" + f).c_str(), 0644);
  }
  return "/workspace/" + name;
}

const std::vector<std::string> kAll = {"ca.pem", "client.pem", "client.key"};

size_t AuditCount() {
  absl::StatusOr<std::vector<AuditRecord>> all = Audit();
  return all.ok() ? all->size() : static_cast<size_t>(-1);
}

// uname -s is auto-approved: with certificates that pass, it runs at once.
void ExpectRefused(const net::NetSession& a, const std::string& certs, const std::string& what) {
  CommandResult r = Escalate(a, {"--certs", certs, "--", "uname", "-s"});
  EXPECT_TRUE(r.exit_code == 242 || r.exit_code == 243)
      << what << ": exit " << r.exit_code << " " << r.err;
  EXPECT_EQ(r.out, "") << what << " ran";
}

TEST_F(EscE2eTest, CertificatesLiveOnlyInMemoryAndReadOnly) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string src = HostMountSource(*a, kCertsMount);
  ASSERT_FALSE(src.empty()) << "no mount at " << kCertsMount;
  struct statfs fs {};
  ASSERT_EQ(statfs(src.c_str(), &fs), 0) << src;
  EXPECT_TRUE(fs.f_type == kTmpfsMagic || fs.f_type == kRamfsMagic) << src << " is on disk";
  CommandResult w = a->Shell(std::string("touch ") + kCertsMount + "/x 2>&1; echo rc=$?");
  EXPECT_THAT(w.out, HasSubstr("Read-only file system"));
  EXPECT_FALSE(Exists(src + "/x"));
}

TEST_F(EscE2eTest, OtherSessionsCertificatesAreRefusedBeforePayload) {
  net::NetSession* a = S(Slot::kA);
  net::NetSession* b = S(Slot::kB);
  net::NetSession* other = S(Slot::kOther);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  ASSERT_NE(b, nullptr) << Why(Slot::kB);
  ASSERT_NE(other, nullptr) << Why(Slot::kOther);
  const std::string ws = W().Workspace(Slot::kA);
  const std::string a_src = HostMountSource(*a, kCertsMount);
  const std::string b_src = HostMountSource(*b, kCertsMount);
  const std::string o_src = HostMountSource(*other, kCertsMount);
  ASSERT_FALSE(a_src.empty() || b_src.empty() || o_src.empty());
  ASSERT_NE(a_src, b_src);

  // The control: A's own certificates, copied the same way, work.
  const std::string own = CopyCerts(a_src, ws, "certs-own", kAll);
  CommandResult ok = Escalate(*a, {"--certs", own, "--", "uname", "-s"});
  ASSERT_EQ(ok.exit_code, 0) << "the copy procedure itself is broken: " << ok.err;
  ASSERT_EQ(ok.out, "Linux\n");

  const size_t before = AuditCount();
  ASSERT_NE(before, static_cast<size_t>(-1));
  const std::string b_certs = CopyCerts(b_src, ws, "certs-b", kAll);
  ExpectRefused(*a, b_certs, "session B's certificates");
  ExpectRefused(*a, CopyCerts(o_src, ws, "certs-other", kAll), "esc2's certificates");
  ExpectRefused(*a, CopyCerts(a_src, ws, "certs-ca-only", {"ca.pem"}), "no client certificate");

  // Self-signed, naming A's session and profile, next to the real CA.
  const std::string fake = CopyCerts(a_src, ws, "certs-fake", {"ca.pem"});
  CommandResult gen =
      test::Run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-days", "1", "-subj", "/CN=lazaret-e2e-fake", "-addext",
                 "subjectAltName=URI:urn:lazaret:session:" + std::string(kProfile) + ":" + a->id(),
                 "-keyout", ws + "/certs-fake/client.key", "-out", ws + "/certs-fake/client.pem"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  test::Run({"chmod", "0644", ws + "/certs-fake/client.key", ws + "/certs-fake/client.pem"});
  ExpectRefused(*a, fake, "a certificate of another CA");

  // B ends: its files go, and the copy kept of them is dead.
  W().End(Slot::kB);
  EXPECT_FALSE(Exists(b_src)) << "an ended session's certificates are left at " << b_src;
  ExpectRefused(*a, b_certs, "an ended session's certificates");

  EXPECT_EQ(AuditCount(), before) << "a refused handshake reached the audit";
}

TEST_F(EscE2eTest, ResumptionIsNeverHonoured) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  CommandResult r = Raw(*a, {"resume"});
  std::map<std::string, std::string> kv = RawSummary(r.out, "resume");
  ASSERT_FALSE(kv.empty()) << r.out << r.err;
  EXPECT_EQ(kv["first"], "eof") << r.out;
  EXPECT_EQ(kv["reused"], "0");
  EXPECT_EQ(kv["tickets"], "0");
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
