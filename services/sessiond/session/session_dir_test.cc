#include "services/sessiond/session/session_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "services/sessiond/session/names.h"
#include "services/common/fs/dir.h"

namespace lazaret::cli::session {
namespace {

TEST(SessionIdTest, TwelveHexDigitsAndRandom) {
  const std::string a = NewSessionId();
  EXPECT_TRUE(IsValidSessionId(a));
  EXPECT_NE(a, NewSessionId());
  EXPECT_FALSE(IsValidSessionId("0123456789AB"));
  EXPECT_FALSE(IsValidSessionId("../../etc/x"));
  EXPECT_EQ(SidecarName("0123456789ab"), "lazaret-0123456789ab-sidecar");
  EXPECT_EQ(SandboxName("0123456789ab"), "lazaret-0123456789ab-sandbox");
}

TEST(SessionRecordTest, RoundTripsAndRejectsGarbage) {
  SessionRecord r{"0123456789ab", "p1", "/ws", "/data/p1/git", 42, 1700000000, ""};
  auto back = ParseSessionRecord(SessionRecordJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->profile, "p1");
  EXPECT_EQ(back->pid, 42);
  EXPECT_EQ(back->explicit_config, "");
  r.explicit_config = "/home/u/ci.toml";
  back = ParseSessionRecord(SessionRecordJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->explicit_config, "/home/u/ci.toml");
  EXPECT_FALSE(ParseSessionRecord("{").ok());
  EXPECT_FALSE(ParseSessionRecord("{\"id\":\"../x\"}").ok());
  EXPECT_FALSE(ParseSessionRecord("[1,2]").ok());
}

TEST(SessionDirTest, PrivateDirectoryEnvFileAndLockThenGone) {
  char tmpl[] = "/tmp/laz-sess-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string rt = tmpl;
  SessionRecord r{NewSessionId(), "p1", "/ws", "/data/p1/git", getpid(), 1, ""};
  auto dir = SessionDir::Create(rt, r);
  ASSERT_TRUE(dir.ok()) << dir.status();
  struct stat st {};
  ASSERT_EQ(stat((*dir)->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_TRUE((*dir)->WriteEnvFile("A=1\n").ok());
  ASSERT_EQ(stat((*dir)->env_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_FALSE((*dir)->WriteEnvFile("A=2\n").ok());  // never replaced
  // Removed before the rest of the directory, and again without error.
  ASSERT_TRUE((*dir)->RemoveEnvFile().ok());
  EXPECT_NE(access((*dir)->env_file().c_str(), F_OK), 0);
  EXPECT_TRUE((*dir)->RemoveEnvFile().ok());
  EXPECT_EQ(access((*dir)->router_dir().c_str(), F_OK), 0);
  EXPECT_TRUE(SessionOwnerAlive((*dir)->path()));
  auto found = FindSessionDirs(rt);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_TRUE((*found)[0].owner_alive);
  EXPECT_EQ((*found)[0].record.profile, "p1");
  const std::string path = (*dir)->path();
  ASSERT_TRUE((*dir)->Remove().ok());
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  (void)!std::system(("rm -rf " + rt).c_str());
}

TEST(SessionDirTest, ADeadOwnersLockIsFree) {
  char tmpl[] = "/tmp/laz-sess-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string rt = tmpl;
  const std::string id = NewSessionId();
  const pid_t pid = fork();
  if (pid == 0) {
    auto dir = SessionDir::Create(rt, SessionRecord{id, "p1", "/ws", "", getpid(), 1, ""});
    if (!dir.ok()) _exit(1);
    std::quick_exit(0);  // no destructor: like a kill -9
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto found = FindSessionDirs(rt);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_FALSE((*found)[0].owner_alive);
  EXPECT_TRUE(fs::RemoveTree((*found)[0].path).ok());
  (void)!std::system(("rm -rf " + rt).c_str());
}

}  // namespace
}  // namespace lazaret::cli::session
