#include "services/configd/trust_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "services/configd/layer_files.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;
using testing::Scratch;

TEST(TrustStoreTest, Sha256MatchesKnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TrustStoreTest, RecordsExactDigestPerFileAndRevokes) {
  Scratch s;
  TrustStore store(s.Path("state/lazaret/trusted-workspace-files"));
  const std::string a = Sha256Hex("a");
  const std::string b = Sha256Hex("b");
  EXPECT_FALSE(*store.IsTrusted("/ws/lazaret.toml", a)) << "a missing store trusts nothing";
  ASSERT_TRUE(store.Trust("/ws/lazaret.toml", a).ok());
  ASSERT_TRUE(store.Trust("/other/lazaret.toml", b).ok());
  EXPECT_TRUE(*store.IsTrusted("/ws/lazaret.toml", a));
  EXPECT_FALSE(*store.IsTrusted("/ws/lazaret.toml", b));
  EXPECT_FALSE(*store.IsTrusted("/ws2/lazaret.toml", a));
  // Trusting new content replaces the old digest of that file.
  ASSERT_TRUE(store.Trust("/ws/lazaret.toml", b).ok());
  EXPECT_FALSE(*store.IsTrusted("/ws/lazaret.toml", a));
  EXPECT_TRUE(*store.IsTrusted("/ws/lazaret.toml", b));
  EXPECT_TRUE(*store.IsTrusted("/other/lazaret.toml", b));
  ASSERT_TRUE(store.Revoke("/ws/lazaret.toml").ok());
  EXPECT_FALSE(*store.IsTrusted("/ws/lazaret.toml", b));
  EXPECT_TRUE(*store.IsTrusted("/other/lazaret.toml", b));
  EXPECT_EQ(store.Revoke("/ws/lazaret.toml").code(), absl::StatusCode::kNotFound);
}

TEST(TrustStoreTest, StoreAndDirectoryArePrivate) {
  Scratch s;
  TrustStore store(s.Path("state/lazaret/trusted-workspace-files"));
  ASSERT_TRUE(store.Trust("/ws/lazaret.toml", Sha256Hex("x")).ok());
  struct stat st {};
  ASSERT_EQ(stat(store.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(s.Path("state/lazaret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(TrustStoreTest, RefusesAWritableOrSymlinkedStore) {
  Scratch s;
  TrustStore store(s.Path("state/trusted"));
  ASSERT_TRUE(store.Trust("/ws/lazaret.toml", Sha256Hex("x")).ok());
  ASSERT_EQ(chmod(store.path().c_str(), 0622), 0);
  absl::StatusOr<bool> r = store.IsTrusted("/ws/lazaret.toml", Sha256Hex("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("nothing is trusted"));
  // A symlinked store (planted to point at an attacker-written file) is refused too.
  s.File("attacker", Sha256Hex("x") + " /ws/lazaret.toml\n");
  s.Symlink(s.Path("attacker"), "state/linked");
  EXPECT_FALSE(
      TrustStore(s.Path("state/linked")).IsTrusted("/ws/lazaret.toml", Sha256Hex("x")).ok());
}

TEST(TrustStoreTest, IgnoresDamagedLinesAndRejectsBadInput) {
  Scratch s;
  const std::string d = Sha256Hex("x");
  s.File("state/t", "# comment\nnot-a-digest /ws/lazaret.toml\n" + d + " relative\n" + d +
                        " /ws/lazaret.toml\n");
  TrustStore store(s.Path("state/t"));
  EXPECT_TRUE(*store.IsTrusted("/ws/lazaret.toml", d));
  EXPECT_FALSE(*store.IsTrusted("relative", d));
  EXPECT_FALSE(store.Trust("relative", d).ok());
  EXPECT_FALSE(store.Trust("/a\nb", d).ok());
  EXPECT_FALSE(store.Trust("/a", "ABC").ok());
}

TEST(TrustStoreTest, CanonicalWorkspaceFileResolvesTheDirectoryOnly) {
  Scratch s;
  s.Dir("real");
  s.Symlink(s.Path("real"), "link");
  EXPECT_EQ(*CanonicalWorkspaceFile(s.Path("link/lazaret.toml")), s.Path("real/lazaret.toml"));
  EXPECT_FALSE(CanonicalWorkspaceFile(s.Path("missing/lazaret.toml")).ok());
}

}  // namespace
}  // namespace lazaret::config
