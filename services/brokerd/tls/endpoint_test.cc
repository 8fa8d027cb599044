// SessionEndpoint's directories on the real filesystem: what it creates,
// what it refuses to use, adoption, renewal and removal.
#include "services/brokerd/tls/endpoint.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "services/brokerd/tls/ca.h"
#include "services/brokerd/tls/private_dir.h"
#include "services/brokerd/tls/test_client.h"

namespace lazaret::brokerd::tls {
namespace {

const SessionIdentity kSession{"dev", "0123456789ab"};

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = CertificateAuthority::Create();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
    scratch_ = testing::MakeScratchDir("/tmp");
    shm_ = testing::MakeScratchDir("/dev/shm");
    ASSERT_FALSE(scratch_.empty() || shm_.empty());
    sockets_ = scratch_ + "/sock";
    certs_ = shm_ + "/certs";
  }
  void TearDown() override {
    testing::RemoveScratchDir(scratch_);
    testing::RemoveScratchDir(shm_);
  }

  absl::StatusOr<std::unique_ptr<SessionEndpoint>> Create(bool adopt = false) {
    return SessionEndpoint::Create(sockets_, certs_, kSession, *ca_, absl::Hours(1), adopt);
  }
  static struct stat Lstat(const std::string& path) {
    struct stat st {};
    st.st_mode = 0;
    lstat(path.c_str(), &st);
    return st;
  }
  static bool Exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void ExpectNothingOfTheSession() {
    EXPECT_FALSE(Exists(sockets_ + "/" + kSession.session_id));
    EXPECT_FALSE(Exists(certs_ + "/" + kSession.session_id));
  }

  std::unique_ptr<CertificateAuthority> ca_;
  std::string scratch_, shm_, sockets_, certs_;
};

TEST_F(EndpointTest, CreatesPrivateDirectoriesTheSocketAndTheCertificates) {
  auto ep = Create();
  ASSERT_TRUE(ep.ok()) << ep.status();
  const std::string sdir = sockets_ + "/" + kSession.session_id;
  const std::string cdir = certs_ + "/" + kSession.session_id;
  EXPECT_EQ((*ep)->socket_dir(), sdir);
  EXPECT_EQ((*ep)->certs_dir(), cdir);
  EXPECT_EQ(Lstat(sockets_).st_mode & 07777, 0700u);  // created, one level
  EXPECT_EQ(Lstat(certs_).st_mode & 07777, 0700u);
  for (const std::string& d : {sdir, cdir}) {
    struct stat st = Lstat(d);
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << d;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
    EXPECT_EQ(st.st_uid, geteuid()) << d;
  }
  struct stat sock = Lstat(sdir + "/escalate.sock");
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));
  EXPECT_EQ(sock.st_mode & 07777, 0600u);
  EXPECT_EQ(Lstat(cdir + "/ca.pem").st_mode & 07777, 0600u);
  EXPECT_EQ(Lstat(cdir + "/client.pem").st_mode & 07777, 0600u);
  EXPECT_EQ(Lstat(cdir + "/client.key").st_mode & 07777, 0600u);
  EXPECT_EQ(Slurp(cdir + "/ca.pem"), ca_->ca_pem());
  // Only what the sandbox is meant to see.
  EXPECT_EQ(system(("test $(ls -A " + sdir + " | wc -l) -eq 1").c_str()), 0);
  EXPECT_EQ(system(("test $(ls -A " + cdir + " | wc -l) -eq 3").c_str()), 0);
  int accepting = 0;
  socklen_t len = sizeof(accepting);
  ASSERT_EQ(getsockopt((*ep)->listen_fd(), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len), 0);
  EXPECT_EQ(accepting, 1);
  EXPECT_TRUE((*ep)->IsLiveSerial((*ep)->current_serial()));
  EXPECT_NEAR(absl::ToDoubleSeconds((*ep)->not_after() - absl::Now()), 3600, 5);
  EXPECT_LT((*ep)->renew_at(), (*ep)->not_after());
  EXPECT_GT((*ep)->renew_at(), absl::Now() + absl::Minutes(29));
}

TEST_F(EndpointTest, CloseRemovesEverythingAndForgetsTheSerial) {
  auto ep = Create();
  ASSERT_TRUE(ep.ok()) << ep.status();
  const std::string serial = (*ep)->current_serial();
  ASSERT_TRUE((*ep)->Close().ok());
  ExpectNothingOfTheSession();
  EXPECT_TRUE(Exists(sockets_));
  EXPECT_TRUE(Exists(certs_));
  EXPECT_FALSE((*ep)->IsLiveSerial(serial));
  EXPECT_LT((*ep)->listen_fd(), 0);
  EXPECT_TRUE((*ep)->Close().ok());  // idempotent
  EXPECT_FALSE((*ep)->Renew().ok());
}

TEST_F(EndpointTest, DestructorRemovesEverything) {
  {
    auto ep = Create();
    ASSERT_TRUE(ep.ok()) << ep.status();
  }
  ExpectNothingOfTheSession();
}

TEST_F(EndpointTest, PreexistingDirectoryFileOrSymlinkAtTheSessionPathIsRefused) {
  ASSERT_EQ(mkdir(sockets_.c_str(), 0700), 0);
  const std::string at = sockets_ + "/" + kSession.session_id;
  for (const std::string kind : {"dir", "file", "symlink"}) {
    if (kind == "dir") {
      ASSERT_EQ(mkdir(at.c_str(), 0700), 0);
    } else if (kind == "file") {
      std::ofstream(at) << "x";
    } else {
      ASSERT_EQ(symlink("/tmp", at.c_str()), 0);
    }
    auto ep = Create();
    EXPECT_EQ(ep.status().code(), absl::StatusCode::kAlreadyExists) << kind;
    EXPECT_TRUE(
        absl::StrContains(ep.status().message(),
                          "a file, directory or symlink already exists at " + at + "; remove it"))
        << ep.status();
    EXPECT_TRUE(Exists(at)) << kind << ": what was there is left alone";
    EXPECT_FALSE(Exists(certs_ + "/" + kSession.session_id));
    ASSERT_EQ(system(("rm -rf " + at).c_str()), 0);
  }
  EXPECT_TRUE(Exists("/tmp"));
}

TEST_F(EndpointTest, PreexistingCertificateDirectoryIsRefusedAndTheSocketDirRemoved) {
  ASSERT_EQ(mkdir(certs_.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((certs_ + "/" + kSession.session_id).c_str(), 0700), 0);
  auto ep = Create();
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kAlreadyExists) << ep.status();
  EXPECT_FALSE(Exists(sockets_ + "/" + kSession.session_id));
  EXPECT_TRUE(Exists(certs_ + "/" + kSession.session_id));
}

TEST_F(EndpointTest, SocketDirThatIsASymlinkIsRefused) {
  const std::string real = scratch_ + "/real";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), sockets_.c_str()), 0);
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(absl::StrContains(ep.status().message(), "is a symlink")) << ep.status();
  EXPECT_FALSE(Exists(real + "/" + kSession.session_id));
}

TEST_F(EndpointTest, SocketDirOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown the directory to nobody";
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  ASSERT_EQ(mkdir(sockets_.c_str(), 0700), 0);
  ASSERT_EQ(chown(sockets_.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(
      absl::StrContains(ep.status().message(), "is owned by uid " + std::to_string(nobody->pw_uid)))
      << ep.status();
  ExpectNothingOfTheSession();
}

TEST_F(EndpointTest, SocketDirWithGroupOrOtherBitsIsRefusedWithTheFix) {
  ASSERT_EQ(mkdir(sockets_.c_str(), 0700), 0);
  ASSERT_EQ(chmod(sockets_.c_str(), 0755), 0);
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(absl::StrContains(ep.status().message(), "has mode 0755; chmod 0700 " + sockets_))
      << ep.status();
  ASSERT_EQ(chmod(sockets_.c_str(), 0710), 0);
  EXPECT_FALSE(Create().ok());
  ExpectNothingOfTheSession();
}

TEST_F(EndpointTest, SocketDirWhoseParentIsMissingIsNotCreated) {
  sockets_ = scratch_ + "/missing/sock";
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(absl::StrContains(ep.status().message(), "only its last component is created"))
      << ep.status();
  EXPECT_FALSE(Exists(scratch_ + "/missing"));
}

TEST_F(EndpointTest, SocketDirThatIsAFileIsRefused) {
  std::ofstream(sockets_) << "x";
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(absl::StrContains(ep.status().message(), "not a directory")) << ep.status();
}

TEST_F(EndpointTest, CertificatesOffAMemoryFilesystemAreRefused) {
  struct statfs sfs {};
  ASSERT_EQ(statfs("/tmp", &sfs), 0);
  if (sfs.f_type == 0x01021994 /* TMPFS_MAGIC */) GTEST_SKIP() << "/tmp is tmpfs here";
  certs_ = scratch_ + "/certs";
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(
      absl::StrContains(ep.status().message(), "certificates must live on a memory filesystem"))
      << ep.status();
  EXPECT_FALSE(Exists(sockets_ + "/" + kSession.session_id));
  EXPECT_FALSE(Exists(certs_ + "/" + kSession.session_id));
}

TEST_F(EndpointTest, CertificateRootThatIsASymlinkIsRefused) {
  const std::string real = shm_ + "/real";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), certs_.c_str()), 0);
  auto ep = Create();
  EXPECT_FALSE(ep.ok());
  EXPECT_TRUE(absl::StrContains(ep.status().message(), "is a symlink")) << ep.status();
  EXPECT_FALSE(Exists(real + "/" + kSession.session_id));
}

TEST_F(EndpointTest, AdoptExistingTakesALiveSessionBack) {
  std::string old_serial;
  {
    auto first = Create();
    ASSERT_TRUE(first.ok()) << first.status();
    old_serial = (*first)->current_serial();
    // A broker that dies leaves its directories behind: keep copies.
    ASSERT_EQ(system(("cp -a " + sockets_ + " " + scratch_ + "/keep-sock && cp -a " + certs_ + " " +
                      shm_ + "/keep-certs")
                         .c_str()),
              0);
  }
  ASSERT_EQ(system(("rm -rf " + sockets_ + " " + certs_ + " && mv " + scratch_ + "/keep-sock " +
                    sockets_ + " && mv " + shm_ + "/keep-certs " + certs_)
                       .c_str()),
            0);
  const std::string sdir = sockets_ + "/" + kSession.session_id;
  std::ofstream(sdir + "/stale") << "x";
  EXPECT_EQ(Create(/*adopt=*/false).status().code(), absl::StatusCode::kAlreadyExists);
  auto adopted = Create(/*adopt=*/true);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_TRUE(S_ISSOCK(Lstat(sdir + "/escalate.sock").st_mode));
  EXPECT_FALSE(Exists(sdir + "/stale"));
  EXPECT_NE((*adopted)->current_serial(), old_serial);
  EXPECT_FALSE((*adopted)->IsLiveSerial(old_serial));
  EXPECT_EQ(Slurp((*adopted)->certs_dir() + "/ca.pem"), ca_->ca_pem());
  // The adopted socket accepts connections.
  auto acceptor = TlsAcceptor::Create(*ca_);
  ASSERT_TRUE(acceptor.ok());
  std::thread client([&] {
    testing::RunClient(sdir + "/escalate.sock", testing::ReadCredentials((*adopted)->certs_dir()),
                       "hi");
  });
  auto stream = (*adopted)->Accept(**acceptor);
  EXPECT_TRUE(stream.ok()) << stream.status();
  if (stream.ok()) {
    EXPECT_TRUE((*stream)->Close().ok());
  }
  client.join();
}

TEST_F(EndpointTest, AdoptExistingRefusesWhatIsNotAPrivateDirectoryOfOurs) {
  ASSERT_EQ(mkdir(sockets_.c_str(), 0700), 0);
  const std::string at = sockets_ + "/" + kSession.session_id;
  ASSERT_EQ(mkdir(at.c_str(), 0755), 0);
  auto open_dir = Create(/*adopt=*/true);
  EXPECT_FALSE(open_dir.ok());
  EXPECT_TRUE(absl::StrContains(open_dir.status().message(), "has mode 0755")) << open_dir.status();
  ASSERT_EQ(rmdir(at.c_str()), 0);
  ASSERT_EQ(symlink(scratch_.c_str(), at.c_str()), 0);
  auto link = Create(/*adopt=*/true);
  EXPECT_FALSE(link.ok());
  EXPECT_TRUE(absl::StrContains(link.status().message(), "is a symlink")) << link.status();
  EXPECT_TRUE(Exists(scratch_));
  ASSERT_EQ(unlink(at.c_str()), 0);
  if (geteuid() == 0) {
    ASSERT_EQ(mkdir(at.c_str(), 0700), 0);
    ASSERT_EQ(chown(at.c_str(), 65534, 65534), 0);
    auto theirs = Create(/*adopt=*/true);
    EXPECT_FALSE(theirs.ok());
    EXPECT_TRUE(absl::StrContains(theirs.status().message(), "is owned by uid 65534"))
        << theirs.status();
  }
}

TEST_F(EndpointTest, RenewReplacesTheCertificateAloneAndMovesNotAfter) {
  auto ep = Create();
  ASSERT_TRUE(ep.ok()) << ep.status();
  const std::string cdir = (*ep)->certs_dir();
  const std::string old_cert = Slurp(cdir + "/client.pem");
  const std::string old_key = Slurp(cdir + "/client.key");
  const std::string old_serial = (*ep)->current_serial();
  const ino_t old_ino = Lstat(cdir + "/client.pem").st_ino;
  absl::SleepFor(absl::Milliseconds(1100));
  ASSERT_TRUE((*ep)->Renew().ok());
  EXPECT_NE(Slurp(cdir + "/client.pem"), old_cert);
  EXPECT_NE(Lstat(cdir + "/client.pem").st_ino, old_ino);  // renamed into place
  EXPECT_EQ(Lstat(cdir + "/client.pem").st_mode & 07777, 0600u);
  EXPECT_EQ(Slurp(cdir + "/client.key"), old_key);
  EXPECT_NE((*ep)->current_serial(), old_serial);
  EXPECT_TRUE((*ep)->IsLiveSerial(old_serial));  // the overlap
  EXPECT_TRUE((*ep)->IsLiveSerial((*ep)->current_serial()));
  EXPECT_GT((*ep)->not_after(), absl::Now() + absl::Minutes(59));
  EXPECT_EQ(system(("test $(ls -A " + cdir + " | wc -l) -eq 3").c_str()), 0);
}

TEST_F(EndpointTest, RefusesAnInvalidIdentity) {
  auto ep =
      SessionEndpoint::Create(sockets_, certs_, {"dev", "../../etc"}, *ca_, absl::Hours(1), false);
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Exists(sockets_));
}

// CertsRoot::Claim with a scratch /dev/shm directory standing in for
// /dev/shm and a private scratch runtime directory.
class CertsRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shm_ = testing::MakeScratchDir("/dev/shm", 01777);
    runtime_ = testing::MakeScratchDir("/tmp");
    other_runtime_ = testing::MakeScratchDir("/tmp");
    ASSERT_FALSE(shm_.empty() || runtime_.empty() || other_runtime_.empty());
    ASSERT_EQ(chmod(shm_.c_str(), 01777), 0);
    prefix_ = shm_ + "/lazaret-" + std::to_string(geteuid());
  }
  void TearDown() override {
    testing::RemoveScratchDir(shm_);
    testing::RemoveScratchDir(runtime_);
    testing::RemoveScratchDir(other_runtime_);
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static bool Exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
  }
  std::string shm_, runtime_, other_runtime_, prefix_;
};

TEST_F(CertsRootTest, ARandomPrivateMemoryRootIsMadeAndRecorded) {
  absl::StatusOr<CertsRoot> root = CertsRoot::Claim(shm_, runtime_);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_TRUE(absl::StartsWith(root->path(), prefix_ + ".")) << root->path();
  EXPECT_EQ(root->path().size(), prefix_.size() + 7);
  struct stat st {};
  ASSERT_EQ(lstat(root->path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(Slurp(runtime_ + "/" + kCertsRootRecord), root->path());
}

// What the attack of issue 20 did, and its other forms: the old
// predictable name, and names of the new form planted in advance as a
// directory and as a symlink. None of them is used or followed, and the
// broker still gets a root.
TEST_F(CertsRootTest, WhatAnotherUserPlantedIsNeitherUsedNorFollowed) {
  const std::string victim_target = shm_ + "/target";
  ASSERT_EQ(mkdir(victim_target.c_str(), 0777), 0);
  ASSERT_EQ(mkdir(prefix_.c_str(), 0777), 0);
  ASSERT_EQ(mkdir((prefix_ + ".AAAAAA").c_str(), 0777), 0);
  ASSERT_EQ(symlink(victim_target.c_str(), (prefix_ + ".BBBBBB").c_str()), 0);
  if (geteuid() == 0) {
    for (const std::string& p : {prefix_, prefix_ + ".AAAAAA", victim_target}) {
      ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0);
    }
    ASSERT_EQ(lchown((prefix_ + ".BBBBBB").c_str(), 65534, 65534), 0);
  }
  // A record that names the planted directory is not believed either.
  std::ofstream(runtime_ + "/" + kCertsRootRecord) << prefix_ + ".AAAAAA";
  absl::StatusOr<CertsRoot> root = CertsRoot::Claim(shm_, runtime_);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_NE(root->path(), prefix_);
  EXPECT_NE(root->path(), prefix_ + ".AAAAAA");
  EXPECT_NE(root->path(), prefix_ + ".BBBBBB");
  EXPECT_EQ(Slurp(runtime_ + "/" + kCertsRootRecord), root->path());
  // Left as they were (the symlink's target untouched).
  EXPECT_TRUE(Exists(prefix_));
  EXPECT_TRUE(Exists(prefix_ + ".BBBBBB"));
  EXPECT_TRUE(Exists(victim_target));
}

TEST_F(CertsRootTest, ARestartedBrokerTakesItsRecordedRootBack) {
  std::string first;
  {
    absl::StatusOr<CertsRoot> root = CertsRoot::Claim(shm_, runtime_);
    ASSERT_TRUE(root.ok()) << root.status();
    first = root->path();
    ASSERT_EQ(mkdir((first + "/0123456789ab").c_str(), 0700), 0);
  }
  absl::StatusOr<CertsRoot> again = CertsRoot::Claim(shm_, runtime_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->path(), first);
  EXPECT_TRUE(Exists(first + "/0123456789ab"));  // a live session's, adopted later
}

TEST_F(CertsRootTest, ALiveBrokersRootIsKeptAndAStaleOneRemoved) {
  absl::StatusOr<CertsRoot> live = CertsRoot::Claim(shm_, runtime_);
  ASSERT_TRUE(live.ok()) << live.status();
  const std::string stale = prefix_ + ".ZZZZZZ";
  ASSERT_EQ(mkdir(stale.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((stale + "/ba9876543210").c_str(), 0700), 0);
  absl::StatusOr<CertsRoot> second = CertsRoot::Claim(shm_, other_runtime_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->path(), live->path());
  EXPECT_TRUE(Exists(live->path()));
  EXPECT_FALSE(Exists(stale));
}

TEST(LiveSerialsTest, RetiredSerialIsForgottenAtItsTime) {
  LiveSerials serials;
  const absl::Time now = absl::Now();
  serials.Add("a");
  serials.Add("b");
  serials.Retire("a", now + absl::Seconds(60));
  EXPECT_TRUE(serials.IsLive("a", now + absl::Seconds(59)));
  EXPECT_FALSE(serials.IsLive("a", now + absl::Seconds(60)));
  EXPECT_TRUE(serials.IsLive("b", now + absl::Hours(1000)));
  EXPECT_FALSE(serials.IsLive("c", now));
  serials.Retire("c", now + absl::Hours(1));  // never added: stays unknown
  EXPECT_FALSE(serials.IsLive("c", now));
  serials.Clear();
  EXPECT_FALSE(serials.IsLive("b", now));
  EXPECT_EQ(serials.size(), 0u);
}

}  // namespace
}  // namespace lazaret::brokerd::tls
