#include "services/configd/auto_approve_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "services/configd/auto_approve.h"

namespace lazaret::config {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Refusal(const std::string& entry, EntryForm form = EntryForm::kPrefix) {
  absl::StatusOr<CommandPrefix> p = CheckAutoApproveEntry(entry, form, nullptr);
  if (p.ok()) return "ACCEPTED";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << entry;
  return std::string(p.status().message());
}

// The classes each name is in.
std::map<std::string, std::set<EntryClass>> ClassesByName() {
  std::map<std::string, std::set<EntryClass>> out;
  for (const RefusedTable& t : RefusedTables()) {
    for (absl::string_view n : t.names) out[std::string(n)].insert(t.cls);
  }
  return out;
}

// Issue 10 item 5: each was accepted before and hands the host over.
TEST(AutoApproveClassesTest, RefusesTheIssuesExamplesNamingTheirClass) {
  const std::pair<const char*, const char*> cases[] = {
      {"capsh", "'capsh' is a runner of code or shells"},
      {"capsh --print", "runner of code or shells"},
      {"cp", "'cp' is a writer of arbitrary paths"},
      {"cp -r", "writer of arbitrary paths"},
      {"tee -a", "'tee' is a writer of arbitrary paths"},
      {"cat", "'cat' is a reader of arbitrary paths"},
      {"cat /etc/os-release", "reader of arbitrary paths"},
      {"curl", "of arbitrary paths"},
      {"curl https://api.example.com", "of arbitrary paths"},
      {"chezmoi apply", "'chezmoi' is a runner of code or shells"},
      {"source", "'source' is a shell builtin: the broker never runs a shell"},
      {".", "'.' is a shell builtin"},
      {"kill -HUP", "'kill' is a program that signals or controls other processes of the user"},
      {"pkill", "signals or controls other processes"},
      {"killall5", "signals or controls other processes"},
  };
  for (const auto& [entry, why] : cases) {
    EXPECT_THAT(Refusal(entry), HasSubstr(why)) << entry;
  }
  // Each refusal says why, not only which class.
  EXPECT_THAT(Refusal("cp"), HasSubstr("~/.bashrc"));
  EXPECT_THAT(Refusal("cat"), HasSubstr("~/.ssh"));
  EXPECT_THAT(Refusal("cat"), HasSubstr("{ exact = \"cat /etc/os-release\" }"));
  EXPECT_THAT(Refusal("capsh"), HasSubstr("run arbitrary code on the host"));
  EXPECT_THAT(Refusal("source"), HasSubstr("program of that name from PATH"));
}

// Every name of every table, as a prefix entry, is refused with its class.
TEST(AutoApproveClassesTest, RefusesEveryListedNameAsAPrefixEntry) {
  const auto by_name = ClassesByName();
  size_t checked = 0;
  for (const RefusedTable& t : RefusedTables()) {
    for (absl::string_view n : t.names) {
      const std::string name(n);
      for (const std::string& entry :
           {name, absl::StrCat(name, " --help"), absl::StrCat(name, " x")}) {
        const std::string why = Refusal(entry);
        bool names_a_class = false;
        for (EntryClass c : by_name.at(name)) {
          names_a_class |= why.find(std::string(ClassLabel(c))) != std::string::npos;
        }
        EXPECT_TRUE(names_a_class) << entry << ": " << why;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 3 * 600u);
}

// Exact entries lift the reader and writer classes only.
TEST(AutoApproveClassesTest, ExactEntriesLiftOnlyTheReaderAndWriterClasses) {
  for (const RefusedTable& t : RefusedTables()) {
    for (absl::string_view n : t.names) {
      const std::string entry = absl::StrCat(n, " /etc/os-release");
      const std::string why = Refusal(entry, EntryForm::kExact);
      if (ExactEntryLifts(t.cls)) {
        EXPECT_EQ(why, "ACCEPTED") << entry;
      } else {
        EXPECT_THAT(why, HasSubstr(std::string(ClassLabel(t.cls)))) << entry;
      }
    }
  }
}

// A name is in one class, except reader-and-writer; so the class named in
// a refusal does not depend on the order of the tables.
TEST(AutoApproveClassesTest, TablesAreDisjointExceptReadersAndWriters) {
  for (const auto& [name, classes] : ClassesByName()) {
    if (classes.size() == 1) continue;
    EXPECT_EQ(classes, (std::set<EntryClass>{EntryClass::kReader, EntryClass::kWriter})) << name;
  }
  for (const RefusedTable& t : RefusedTables()) {
    std::set<std::string> in_table;
    for (absl::string_view n : t.names) {
      EXPECT_TRUE(in_table.insert(std::string(n)).second) << "twice in one table: " << n;
      EXPECT_EQ(absl::AsciiStrToLower(n), std::string(n)) << "argv[0] is matched lowercased";
    }
  }
}

// Renamed and packaged variants are refused as the program they name.
TEST(AutoApproveClassesTest, RefusesVariantsOfARefusedName) {
  const std::pair<const char*, const char*> cases[] = {
      {"CAT", "'CAT' is a reader"},
      {"cat.sh", "'cat.sh' (taken as 'cat') is a reader"},
      {"x-cat", "'x-cat' (taken as 'cat') is a reader"},
      {"my_tee", "(taken as 'tee') is a writer"},
      {"vim.basic", "(taken as 'vim') is a runner"},
      {"vim.tiny", "(taken as 'vim') is a runner"},
      {"python3.11", "'python3.11' is a runner"},
      {"python3.sh", "(taken as 'python') is a runner"},
      {"aarch64-linux-gnu-gcc-12", "(taken as 'gcc') is a runner"},
      {"llvm-objdump-15", "(taken as 'objdump') is a reader"},
      {"kwriteconfig5 --file", "'kwriteconfig5' is a runner"},
      {"kwriteconfig6", "runner of code or shells"},
      {"gconftool-2", "runner of code or shells"},
      {"Source", "'Source' is a shell builtin"},
      {"x-sh", "(taken as 'sh') is a runner"},
  };
  for (const auto& [entry, why] : cases) {
    EXPECT_THAT(Refusal(entry), HasSubstr(why)) << entry;
  }
  // Builtins are judged on the name as written: a program that merely ends
  // in a builtin's name is not taken for the builtin.
  EXPECT_EQ(Refusal("x-source --list"), "ACCEPTED");
}

TEST(AutoApproveClassesTest, RefusesTheIndirectRunnersNamedInTheThreatModel) {
  for (const char* entry : {"yadm",
                            "home-manager switch",
                            "rcup",
                            "mr update",
                            "vcsh",
                            "sshpass -p x",
                            "xdotool type",
                            "ydotool",
                            "wtype",
                            "xte",
                            "gsettings set",
                            "dconf write",
                            "xdg-mime default",
                            "xdg-settings set",
                            "kwriteconfig5",
                            "update-alternatives --set",
                            "exec",
                            "eval",
                            "env",
                            "ack",
                            "pandoc",
                            "exiftool -config"}) {
    const std::string why = Refusal(entry);
    EXPECT_THAT(why, AnyOf(HasSubstr("runner of code or shells"), HasSubstr("shell builtin"),
                           HasSubstr("reader of arbitrary paths")))
        << entry;
  }
}

TEST(AutoApproveClassesTest, AcceptsExactReadersAndWritersWithAbsolutePaths) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"cat /etc/os-release", {"cat", "/etc/os-release"}},
      {"head -n5 /var/log/syslog", {"head", "-n5", "/var/log/syslog"}},
      {"tail --lines=20 /var/log/syslog", {"tail", "--lines=20", "/var/log/syslog"}},
      {"cp /etc/hosts /tmp/hosts.copy", {"cp", "/etc/hosts", "/tmp/hosts.copy"}},
      {"curl -fsS https://status.example.com/api",
       {"curl", "-fsS", "https://status.example.com/api"}},
      {"touch /tmp/build-done", {"touch", "/tmp/build-done"}},
      {"sha256sum -", {"sha256sum", "-"}},
      {"cat", {"cat"}},  // reads its stdin, /dev/null
  };
  for (const auto& [entry, argv] : cases) {
    absl::StatusOr<CommandPrefix> p = CheckAutoApproveEntry(entry, EntryForm::kExact, nullptr);
    ASSERT_TRUE(p.ok()) << entry << ": " << p.status();
    EXPECT_TRUE(p->exact);
    EXPECT_EQ(p->text, entry);
    EXPECT_EQ(p->argv, argv) << entry;
  }
}

TEST(AutoApproveClassesTest, RefusesExactReadersAndWritersWithRelativePaths) {
  const std::pair<const char*, const char*> cases[] = {
      {"cat notes.txt", "'notes.txt' is not an absolute path: in an exact entry of a reader"},
      {"cat ./notes.txt", "'./notes.txt' is not an absolute path"},
      {"cat ../../.ssh/id_ed25519", "is not an absolute path"},
      {"cp /etc/hosts hosts", "'hosts' is not an absolute path: in an exact entry of a writer"},
      {"head -n 5 /var/log/syslog", "'5' is not an absolute path"},
      {"curl -o out.html https://example.com", "'out.html' is not an absolute path"},
      {"curl --output=out/x.html https://example.com", "'--output=out/x.html' is not an absolute"},
      {"tee --output-file=log.txt", "'--output-file=log.txt' is not an absolute"},
      {"cat file:notes", "'file:notes' is not an absolute path"},
  };
  for (const auto& [entry, why] : cases) {
    const std::string refusal = Refusal(entry, EntryForm::kExact);
    EXPECT_THAT(refusal, HasSubstr(why)) << entry;
    EXPECT_THAT(refusal, HasSubstr("the workspace the agent can write")) << entry;
  }
}

TEST(AutoApproveClassesTest, ExactEntriesKeepEveryOtherRefusal) {
  const std::pair<const char*, const char*> cases[] = {
      {"bash -c x", "'bash' is a runner of code or shells"},
      {"capsh --print", "runner of code or shells"},
      {"git status", "runner of code or shells"},
      {"git-upload-pack /srv/repo", "git helper"},
      {"source /etc/profile", "shell builtin"},
      {"kill 1", "signals or controls other processes"},
      {"./cat /etc/os-release", "not a bare command name"},
      {"/bin/cat /etc/os-release", "not a bare command name"},
      {"cat /etc/os-release; id", "contains ';'"},
      {"cat '/etc/os release'\t", "contains '\\x09'"},
      {"aws configure list", "can install or configure code"},
      {"gh", "too broad"},
      {"", "empty"},
  };
  for (const auto& [entry, why] : cases) {
    EXPECT_THAT(Refusal(entry, EntryForm::kExact), HasSubstr(why)) << entry;
  }
}

TEST(AutoApproveClassesTest, PrefixEntriesThatRunNoLocalCodeStayAccepted) {
  EXPECT_EQ(Refusal("aws sts get-caller-identity"), "ACCEPTED");
  EXPECT_EQ(Refusal("gh pr view"), "ACCEPTED");
  EXPECT_EQ(Refusal("notify-send --urgency=low"), "ACCEPTED");
  EXPECT_THAT(Refusal("x-source"), Not(HasSubstr("builtin")));
}

TEST(AutoApproveClassesTest, AnExactEntryAdmitsOnlyItselfAndCoversOnlyItself) {
  const CommandPrefix exact{"cat /etc/os-release", {"cat", "/etc/os-release"}, true};
  const CommandPrefix prefix{"gh pr view", {"gh", "pr", "view"}, false};
  EXPECT_TRUE(EntryAdmits(exact, {"cat", "/etc/os-release"}));
  EXPECT_FALSE(EntryAdmits(exact, {"cat", "/etc/os-release", "/etc/shadow"}));
  EXPECT_FALSE(EntryAdmits(exact, {"cat"}));
  EXPECT_TRUE(EntryAdmits(prefix, {"gh", "pr", "view", "12"}));
  EXPECT_TRUE(EntryAdmits(prefix, {"gh", "pr", "view"}));
  EXPECT_FALSE(EntryAdmits(prefix, {"gh", "pr"}));

  EXPECT_TRUE(EntryCovers(exact, exact));
  EXPECT_FALSE(EntryCovers(exact, {"cat /etc/os-release", {"cat", "/etc/os-release"}, false}));
  EXPECT_FALSE(EntryCovers(exact, {"cat", {"cat"}, true}));
  EXPECT_TRUE(EntryCovers(prefix, {"gh pr view 12", {"gh", "pr", "view", "12"}, true}));
  EXPECT_TRUE(EntryCovers(prefix, {"gh pr view --web", {"gh", "pr", "view", "--web"}, false}));
  EXPECT_FALSE(EntryCovers(prefix, {"gh pr", {"gh", "pr"}, true}));
  EXPECT_THAT(exact.argv, ElementsAre("cat", "/etc/os-release"));
}

}  // namespace
}  // namespace lazaret::config
