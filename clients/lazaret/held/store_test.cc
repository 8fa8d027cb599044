#include "clients/lazaret/held/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::cli::held {
namespace {

class StoreTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    fs::ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("profile").c_str(), 0700), 0);
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("view").c_str(), 0755), 0);
  }
  std::string Profile() const { return P("profile"); }
  std::string Workspace() const { return P("ws"); }
  fs::DirFd View() const { return *fs::DirFd::Open(P("view")); }
  Store OpenStore() {
    absl::StatusOr<Store> s = Store::Open(Profile(), Workspace(), true);
    EXPECT_TRUE(s.ok()) << s.status();
    return *std::move(s);
  }
  static std::vector<HeldEntry> Entries(const Store& s) {
    absl::StatusOr<std::vector<HeldEntry>> list = s.List();
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *std::move(list) : std::vector<HeldEntry>();
  }
  static std::vector<std::string> Rels(const Store& s) {
    std::vector<std::string> out;
    for (const HeldEntry& e : Entries(s)) out.push_back(e.rel);
    return out;
  }
  std::string Link(const std::string& rel) {
    char buf[4096];
    const ssize_t n = readlink(P(rel).c_str(), buf, sizeof(buf));
    return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
  }
};

TEST_F(StoreTest, MissingStoreIsNotFoundWithoutCreate) {
  absl::StatusOr<Store> s = Store::Open(Profile(), Workspace(), false);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
}

TEST_F(StoreTest, KeyIsSixteenHexOfTheWorkspacePath) {
  const std::string key = StoreKey("/home/dev/project");
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(key, StoreKey("/home/dev/project2"));
  Store s = OpenStore();
  EXPECT_EQ(s.dir(), absl::StrCat(Profile(), "/held/", StoreKey(Workspace())));
  EXPECT_EQ(Slurp(absl::StrCat("profile/held/", StoreKey(Workspace()), "/workspace")), Workspace());
}

TEST_F(StoreTest, StoreOfAnotherWorkspaceUnderTheSameKeyIsRefused) {
  Store s = OpenStore();
  Write(absl::StrCat("profile/held/", StoreKey(Workspace()), "/workspace"), "/elsewhere");
  absl::StatusOr<Store> again = Store::Open(Profile(), Workspace(), true);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("/elsewhere"), std::string::npos);
}

TEST_F(StoreTest, HoldListDropRoundTrip) {
  Store s = OpenStore();
  ASSERT_EQ(mkdir(P("view/.claude").c_str(), 0755), 0);
  Write("view/.claude/settings.json", "{\"hooks\":{}}");
  Write("view/.envrc", "export A=1\n");
  ASSERT_TRUE(s.Hold(View(), ".claude/settings.json", Change::kChanged, "aaaaaaaaaaaa").ok());
  ASSERT_TRUE(s.Hold(View(), ".envrc", Change::kCreated, "bbbbbbbbbbbb").ok());
  absl::StatusOr<std::vector<HeldEntry>> list = s.List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].rel, ".claude/settings.json");
  EXPECT_EQ((*list)[0].change, Change::kChanged);
  EXPECT_EQ((*list)[0].kind, "file");
  EXPECT_EQ((*list)[0].session_id, "aaaaaaaaaaaa");
  EXPECT_GT((*list)[0].held_unix, 0);
  EXPECT_EQ((*list)[1].rel, ".envrc");
  EXPECT_EQ((*list)[1].change, Change::kCreated);
  EXPECT_EQ(
      Slurp(absl::StrCat("profile/held/", StoreKey(Workspace()), "/files/.claude/settings.json")),
      "{\"hooks\":{}}");

  // A second Open sees the same, and a later version replaces the first.
  Store again = *Store::Open(Profile(), Workspace(), false);
  Write("view/.envrc", "export A=2\n");
  ASSERT_TRUE(again.Hold(View(), ".envrc", Change::kChanged, "cccccccccccc").ok());
  std::optional<HeldEntry> envrc = *again.Find(".envrc");
  ASSERT_TRUE(envrc.has_value());
  // Still "created": the host has never had it.
  EXPECT_EQ(envrc->change, Change::kCreated);
  EXPECT_EQ(envrc->session_id, "cccccccccccc");
  EXPECT_EQ(Slurp(absl::StrCat("profile/held/", StoreKey(Workspace()), "/files/.envrc")),
            "export A=2\n");

  ASSERT_TRUE(s.Drop(".claude/settings.json").ok());
  EXPECT_EQ(Rels(s), std::vector<std::string>{".envrc"});
  EXPECT_FALSE(Exists(absl::StrCat("profile/held/", StoreKey(Workspace()), "/files/.claude")));
  EXPECT_TRUE(absl::IsNotFound(s.Drop(".claude/settings.json")));
  // The host folder was never written.
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_FALSE(Exists("ws/.claude"));
}

TEST_F(StoreTest, ApplyWritesTheHeldVersionAndForgetsIt) {
  Store s = OpenStore();
  ASSERT_EQ(mkdir(P("view/.vscode").c_str(), 0755), 0);
  Write("view/.vscode/tasks.json", "{\"tasks\":[]}");
  ASSERT_EQ(chmod(P("view/.vscode/tasks.json").c_str(), 06755), 0);
  ASSERT_TRUE(s.Hold(View(), ".vscode/tasks.json", Change::kCreated, "aaaaaaaaaaaa").ok());
  struct stat held {};
  ASSERT_EQ(
      lstat(P(absl::StrCat("profile/held/", StoreKey(Workspace()), "/files/.vscode/tasks.json"))
                .c_str(),
            &held),
      0);
  EXPECT_EQ(held.st_mode & 07777, 0755u) << "setuid/setgid dropped";

  ASSERT_TRUE(s.Apply(".vscode/tasks.json").ok());
  EXPECT_EQ(Slurp("ws/.vscode/tasks.json"), "{\"tasks\":[]}");
  struct stat applied {};
  ASSERT_EQ(lstat(P("ws/.vscode/tasks.json").c_str(), &applied), 0);
  EXPECT_TRUE(S_ISREG(applied.st_mode));
  EXPECT_EQ(applied.st_mode & 07777, 0755u);
  struct stat dir {};
  ASSERT_EQ(lstat(P("ws/.vscode").c_str(), &dir), 0);
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_TRUE(Entries(s).empty());
  EXPECT_TRUE(absl::IsNotFound(s.Apply(".vscode/tasks.json")));
}

TEST_F(StoreTest, AsRootApplyHandsNewFilesToTheWorkspaceOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the rootful case): chown to another user";
  ASSERT_EQ(chown(P("ws").c_str(), 12345, 23456), 0);
  Store s = OpenStore();
  ASSERT_EQ(mkdir(P("view/.githooks").c_str(), 0755), 0);
  Write("view/.githooks/pre-commit", "#!/bin/sh\n");
  ASSERT_EQ(symlink("pre-commit", P("view/.githooks/pre-push").c_str()), 0);
  ASSERT_TRUE(s.Hold(View(), ".githooks/pre-commit", Change::kCreated, "aaaaaaaaaaaa").ok());
  ASSERT_TRUE(s.Hold(View(), ".githooks/pre-push", Change::kCreated, "aaaaaaaaaaaa").ok());
  ASSERT_TRUE(s.Apply(".githooks/pre-commit").ok());
  ASSERT_TRUE(s.Apply(".githooks/pre-push").ok());
  for (const char* rel : {"ws/.githooks", "ws/.githooks/pre-commit", "ws/.githooks/pre-push"}) {
    struct stat st {};
    ASSERT_EQ(lstat(P(rel).c_str(), &st), 0) << rel;
    EXPECT_EQ(st.st_uid, 12345u) << rel;
    EXPECT_EQ(st.st_gid, 23456u) << rel;
  }
}

TEST_F(StoreTest, ApplyReplacesTheHostFileAndDeletionRemovesIt) {
  Store s = OpenStore();
  Write("ws/.envrc", "old\n");
  Write("view/.envrc", "new\n");
  Write("ws/.nvmrc", "18\n");
  ASSERT_TRUE(s.Hold(View(), ".envrc", Change::kChanged, "aaaaaaaaaaaa").ok());
  ASSERT_TRUE(s.HoldDeletion(".nvmrc", "aaaaaaaaaaaa").ok());
  std::optional<HeldEntry> del = *s.Find(".nvmrc");
  ASSERT_TRUE(del.has_value());
  EXPECT_EQ(del->change, Change::kDeleted);
  EXPECT_EQ(del->kind, "deleted");
  EXPECT_EQ(Slurp("ws/.envrc"), "old\n");
  EXPECT_TRUE(Exists("ws/.nvmrc"));
  ASSERT_TRUE(s.Apply(".envrc").ok());
  ASSERT_TRUE(s.Apply(".nvmrc").ok());
  EXPECT_EQ(Slurp("ws/.envrc"), "new\n");
  EXPECT_FALSE(Exists("ws/.nvmrc"));
  EXPECT_TRUE(Entries(s).empty());
}

TEST_F(StoreTest, CreatedThenDeletedLeavesNothingHeld) {
  Store s = OpenStore();
  Write("view/.envrc", "x\n");
  ASSERT_TRUE(s.Hold(View(), ".envrc", Change::kCreated, "aaaaaaaaaaaa").ok());
  ASSERT_TRUE(s.HoldDeletion(".envrc", "bbbbbbbbbbbb").ok());
  EXPECT_TRUE(Entries(s).empty());
}

TEST_F(StoreTest, SymlinkIsHeldAndAppliedAsASymlinkNeverFollowed) {
  Store s = OpenStore();
  Write("secret", "do not copy");
  ASSERT_EQ(symlink(P("secret").c_str(), P("view/.envrc").c_str()), 0);
  ASSERT_TRUE(s.Hold(View(), ".envrc", Change::kCreated, "aaaaaaaaaaaa").ok());
  EXPECT_EQ(s.Find(".envrc")->value().kind, "symlink");
  EXPECT_EQ(Link(absl::StrCat("profile/held/", StoreKey(Workspace()), "/files/.envrc")),
            P("secret"));
  ASSERT_TRUE(s.Apply(".envrc").ok());
  struct stat st {};
  ASSERT_EQ(lstat(P("ws/.envrc").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Link("ws/.envrc"), P("secret"));
  EXPECT_EQ(Slurp("secret"), "do not copy");
}

TEST_F(StoreTest, SymlinkedParentInTheSourceIsRefused) {
  Store s = OpenStore();
  ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
  Write("outside/settings.json", "from outside");
  ASSERT_EQ(symlink(P("outside").c_str(), P("view/.claude").c_str()), 0);
  EXPECT_FALSE(s.Hold(View(), ".claude/settings.json", Change::kChanged, "aaaaaaaaaaaa").ok());
  EXPECT_TRUE(Entries(s).empty());
}

TEST_F(StoreTest, BadRelsAreRefused) {
  Store s = OpenStore();
  Write("view/x", "x");
  for (const std::string& rel :
       {std::string("/etc/passwd"), std::string("../x"), std::string("a/../x"), std::string("./x"),
        std::string("a//x"), std::string("x/"), std::string(""), std::string(NAME_MAX + 1, 'a'),
        std::string("a\0b", 3)}) {
    EXPECT_FALSE(s.Hold(View(), rel, Change::kCreated, "aaaaaaaaaaaa").ok()) << rel;
    EXPECT_FALSE(s.HoldDeletion(rel, "aaaaaaaaaaaa").ok()) << rel;
    EXPECT_FALSE(s.Apply(rel).ok()) << rel;
    EXPECT_FALSE(CheckHeldRel(rel).ok()) << rel;
  }
  EXPECT_TRUE(Entries(s).empty());
  EXPECT_TRUE(CheckHeldRel(".github/copilot-instructions.md").ok());
}

TEST_F(StoreTest, ParentSwappedForASymlinkBeforeApplyIsRefused) {
  Store s = OpenStore();
  ASSERT_EQ(mkdir(P("ws/.claude").c_str(), 0755), 0);
  Write("ws/.claude/settings.json", "host");
  ASSERT_EQ(mkdir(P("view/.claude").c_str(), 0755), 0);
  Write("view/.claude/settings.json", "agent");
  ASSERT_TRUE(s.Hold(View(), ".claude/settings.json", Change::kChanged, "aaaaaaaaaaaa").ok());
  // Between hold and apply the directory becomes a symlink out of the tree.
  ASSERT_EQ(mkdir(P("target").c_str(), 0755), 0);
  Write("target/settings.json", "outside");
  ASSERT_EQ(rename(P("ws/.claude").c_str(), P("moved").c_str()), 0);
  ASSERT_EQ(symlink(P("target").c_str(), P("ws/.claude").c_str()), 0);
  absl::Status st = s.Apply(".claude/settings.json");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(".claude"), std::string::npos) << st;
  EXPECT_EQ(Slurp("target/settings.json"), "outside");
  EXPECT_EQ(Link("ws/.claude"), P("target"));
  // Still held: nothing was applied.
  EXPECT_EQ(Rels(s), std::vector<std::string>{".claude/settings.json"});

  // A relative symlink that stays inside the tree is refused the same way.
  ASSERT_EQ(unlink(P("ws/.claude").c_str()), 0);
  ASSERT_EQ(mkdir(P("ws/real").c_str(), 0755), 0);
  ASSERT_EQ(symlink("real", P("ws/.claude").c_str()), 0);
  EXPECT_FALSE(s.Apply(".claude/settings.json").ok());
  EXPECT_FALSE(Exists("ws/real/settings.json"));
}

TEST_F(StoreTest, ApplyOntoADirectoryOrThroughAFileIsRefused) {
  Store s = OpenStore();
  Write("view/.envrc", "x");
  ASSERT_TRUE(s.Hold(View(), ".envrc", Change::kChanged, "aaaaaaaaaaaa").ok());
  ASSERT_EQ(mkdir(P("ws/.envrc").c_str(), 0755), 0);
  EXPECT_FALSE(s.Apply(".envrc").ok());
  struct stat st {};
  ASSERT_EQ(lstat(P("ws/.envrc").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));

  ASSERT_EQ(mkdir(P("view/.vscode").c_str(), 0755), 0);
  Write("view/.vscode/tasks.json", "t");
  ASSERT_TRUE(s.Hold(View(), ".vscode/tasks.json", Change::kChanged, "aaaaaaaaaaaa").ok());
  Write("ws/.vscode", "a file where the directory was");
  EXPECT_FALSE(s.Apply(".vscode/tasks.json").ok());
  EXPECT_EQ(Slurp("ws/.vscode"), "a file where the directory was");
}

TEST_F(StoreTest, SpecialFilesAreRefused) {
  Store s = OpenStore();
  ASSERT_EQ(mkfifo(P("view/.envrc").c_str(), 0644), 0);
  absl::Status st = s.Hold(View(), ".envrc", Change::kCreated, "aaaaaaaaaaaa");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("FIFO"), std::string::npos) << st;
  ASSERT_EQ(mkdir(P("view/.vscode").c_str(), 0755), 0);
  EXPECT_FALSE(s.Hold(View(), ".vscode", Change::kCreated, "aaaaaaaaaaaa").ok());
  if (geteuid() == 0) {
    ASSERT_EQ(mknod(P("view/.nvmrc").c_str(), S_IFCHR | 0644, makedev(1, 3)), 0);
    st = s.Hold(View(), ".nvmrc", Change::kCreated, "aaaaaaaaaaaa");
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("device"), std::string::npos) << st;
  }
  EXPECT_TRUE(Entries(s).empty());
}

TEST_F(StoreTest, FilesOverTheCapsAreRefused) {
  Store s = OpenStore();
  {
    const int fd = open(P("view/big").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMaxHeldFileBytes + 1)), 0);
    close(fd);
  }
  absl::Status st = s.Hold(View(), "big", Change::kCreated, "aaaaaaaaaaaa");
  EXPECT_TRUE(absl::IsResourceExhausted(st)) << st;
  EXPECT_NE(st.message().find("'big'"), std::string::npos) << st;

  // The store as a whole: eight files at the per-file cap fill it.
  const uint64_t files = kMaxHeldStoreBytes / kMaxHeldFileBytes;
  for (uint64_t i = 0; i <= files; ++i) {
    const std::string name = absl::StrCat("f", i);
    const int fd = open(P(absl::StrCat("view/", name)).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMaxHeldFileBytes)), 0);
    close(fd);
    st = s.Hold(View(), name, Change::kCreated, "aaaaaaaaaaaa");
    if (i < files) {
      EXPECT_TRUE(st.ok()) << st;
    } else {
      EXPECT_TRUE(absl::IsResourceExhausted(st)) << st;
    }
  }
  EXPECT_EQ(Entries(s).size(), files);
}

TEST_F(StoreTest, NestedHeldPathsAreRefused) {
  Store s = OpenStore();
  Write("view/a", "file");
  ASSERT_TRUE(s.Hold(View(), "a", Change::kCreated, "aaaaaaaaaaaa").ok());
  ASSERT_EQ(mkdir(P("view/b").c_str(), 0755), 0);
  Write("view/b/c", "c");
  ASSERT_TRUE(s.Hold(View(), "b/c", Change::kCreated, "aaaaaaaaaaaa").ok());
  EXPECT_FALSE(s.HoldDeletion("a/x", "aaaaaaaaaaaa").ok());
  EXPECT_FALSE(s.HoldDeletion("b", "aaaaaaaaaaaa").ok());
  EXPECT_EQ(Rels(s), (std::vector<std::string>{"a", "b/c"}));
}

TEST_F(StoreTest, TwoStoresHoldingAtOnceLoseNothing) {
  Store first = OpenStore();
  constexpr int kPerThread = 40;
  for (int i = 0; i < kPerThread; ++i) {
    Write(absl::StrCat("view/a", i), "a");
    Write(absl::StrCat("view/b", i), "b");
  }
  auto worker = [this](const std::string& prefix) {
    absl::StatusOr<Store> s = Store::Open(Profile(), Workspace(), true);
    ASSERT_TRUE(s.ok()) << s.status();
    fs::DirFd view = View();
    for (int i = 0; i < kPerThread; ++i) {
      ASSERT_TRUE(s->Hold(view, absl::StrCat(prefix, i), Change::kCreated, "aaaaaaaaaaaa").ok());
    }
  };
  std::thread a(worker, "a");
  std::thread b(worker, "b");
  a.join();
  b.join();
  EXPECT_EQ(Entries(first).size(), 2u * kPerThread);
}

}  // namespace
}  // namespace lazaret::cli::held
