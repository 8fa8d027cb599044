#include "services/configd/persist_coherence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Text(const std::vector<CoherenceWarning>& ws) {
  std::string out;
  for (const CoherenceWarning& w : ws) absl::StrAppend(&out, w.message, "\n  fix: ", w.hint, "\n");
  return out;
}

TEST(PersistCoherenceTest, CoherentSetsAndUnrelatedDirectoriesGetNoWarning) {
  const std::vector<std::vector<std::string>> coherent = {
      {},
      {"/usr", "/var/lib/dpkg", "/var/lib/apt"},
      {"/usr", "/etc", "/var/lib/dpkg", "/var/lib/apt"},
      {"/usr", "/var/lib"},
      {"/usr", "/var"},
      {"/usr/local"},
      {"/usr/local", "/root"},
      {"/root"},
      {"/root/.cache"},
      {"/home/agent", "/srv"},
      {"/var/cache/apt"},
      {"/var/lib/apt"},
      {"/var/lib/postgresql"},
  };
  for (const std::vector<std::string>& dirs : coherent) {
    EXPECT_THAT(CheckPersistCoherence(dirs), IsEmpty()) << absl::StrJoin(dirs, " ") << "\n"
                                                        << Text(CheckPersistCoherence(dirs));
  }
}

TEST(PersistCoherenceTest, DpkgFilesWithoutItsDatabaseNameTheFix) {
  for (const char* files : {"/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                            "/libx32", "/usr/share/doc", "/usr/lib/python3", "/etc/apt"}) {
    const std::vector<CoherenceWarning> ws = CheckPersistCoherence({files, "/root"});
    ASSERT_THAT(ws, SizeIs(1)) << files << "\n" << Text(ws);
    EXPECT_THAT(ws[0].message, HasSubstr(absl::StrCat("persists the files dpkg and apt install (\"",
                                                      files, "\") without dpkg's database")))
        << files;
    EXPECT_THAT(ws[0].message, HasSubstr("\"/var/lib/dpkg\"")) << files;
    EXPECT_THAT(ws[0].message, HasSubstr("no longer knows them"));
    EXPECT_THAT(ws[0].hint, HasSubstr("add \"/var/lib/dpkg\" and \"/var/lib/apt\""));
  }
  // Every persisted directory of dpkg's is named.
  const std::vector<CoherenceWarning> ws = CheckPersistCoherence({"/usr", "/etc", "/root"});
  ASSERT_THAT(ws, SizeIs(1)) << Text(ws);
  EXPECT_THAT(ws[0].message, HasSubstr("(\"/usr\", \"/etc\")"));
  // /usr/local is not dpkg's; /usr contains it and is.
  EXPECT_THAT(CheckPersistCoherence({"/usr/local/share"}), IsEmpty());
}

TEST(PersistCoherenceTest, PartOfTheDatabaseIsNotTheDatabase) {
  const std::vector<CoherenceWarning> ws =
      CheckPersistCoherence({"/usr", "/var/lib/dpkg/info", "/var/lib/apt"});
  ASSERT_THAT(ws, SizeIs(1)) << Text(ws);
  EXPECT_THAT(ws[0].message,
              HasSubstr("without all of dpkg's database of installed packages \"/var/lib/dpkg\" "
                        "(only "
                        "\"/var/lib/dpkg/info\")"));
}

TEST(PersistCoherenceTest, DpkgDatabaseWithoutItsFilesNamesTheFix) {
  for (const char* db : {"/var/lib/dpkg", "/var/lib", "/var", "/var/lib/dpkg/info"}) {
    const std::vector<CoherenceWarning> ws = CheckPersistCoherence({db, "/root"});
    ASSERT_THAT(ws, SizeIs(1)) << db << "\n" << Text(ws);
    EXPECT_THAT(ws[0].message,
                HasSubstr(absl::StrCat("persists dpkg's database of installed packages (\"", db,
                                       "\") without the files dpkg and apt install")))
        << db;
    EXPECT_THAT(ws[0].message, HasSubstr("whose files are gone"));
    EXPECT_THAT(ws[0].hint, HasSubstr("add \"/usr\""));
    EXPECT_THAT(ws[0].hint, HasSubstr("stop persisting \"/var/lib/dpkg\""));
  }
}

TEST(PersistCoherenceTest, DpkgWithoutAptStateRecommendsIt) {
  const std::vector<CoherenceWarning> ws = CheckPersistCoherence({"/usr", "/var/lib/dpkg"});
  ASSERT_THAT(ws, SizeIs(1)) << Text(ws);
  EXPECT_THAT(ws[0].message, HasSubstr("persists dpkg/apt's files and \"/var/lib/dpkg\" but not "
                                       "\"/var/lib/apt\": apt's package lists"));
  EXPECT_EQ(ws[0].hint, "add \"/var/lib/apt\" to persistent_dirs");
  // Part of apt's state is not all of it.
  EXPECT_THAT(Text(CheckPersistCoherence({"/usr", "/var/lib/dpkg", "/var/lib/apt/lists"})),
              HasSubstr("but not \"/var/lib/apt\""));
  // Without the database the missing database is the one warning.
  EXPECT_THAT(Text(CheckPersistCoherence({"/usr"})), Not(HasSubstr("but not \"/var/lib/apt\"")));
}

TEST(PersistCoherenceTest, NpmPackagesWithoutTheirCommandsAndTheReverse) {
  for (const char* packages :
       {"/usr/local/lib/node_modules", "/usr/local/lib", "/usr/local/lib/node_modules/x"}) {
    const std::vector<CoherenceWarning> ws = CheckPersistCoherence({packages});
    ASSERT_THAT(ws, SizeIs(1)) << packages << "\n" << Text(ws);
    EXPECT_THAT(ws[0].message, HasSubstr(absl::StrCat(
                                   "persists the packages `npm install -g` installs (\"", packages,
                                   "\") without the commands npm links to them "
                                   "\"/usr/local/bin\"")));
    EXPECT_EQ(ws[0].hint, "persist \"/usr/local\" instead: it holds both");
  }
  const std::vector<CoherenceWarning> ws = CheckPersistCoherence({"/usr/local/bin"});
  ASSERT_THAT(ws, SizeIs(1)) << Text(ws);
  EXPECT_THAT(ws[0].message, HasSubstr("persists the commands npm links to them "
                                       "(\"/usr/local/bin\") without the packages"));
  EXPECT_EQ(ws[0].hint, "persist \"/usr/local\" instead: it holds both");
  // A link directory persisted only in part.
  EXPECT_THAT(Text(CheckPersistCoherence({"/usr/local/bin/x", "/usr/local/lib/node_modules"})),
              HasSubstr("without all of the commands npm links to them \"/usr/local/bin\""));
}

TEST(PersistCoherenceTest, EachRuleIsCheckedOnItsOwn) {
  // dpkg's files without database and npm's packages without commands.
  const std::vector<CoherenceWarning> ws =
      CheckPersistCoherence({"/etc", "/usr/local/lib/node_modules"});
  ASSERT_THAT(ws, SizeIs(2)) << Text(ws);
  EXPECT_THAT(ws[0].message, HasSubstr("dpkg"));
  EXPECT_THAT(ws[1].message, HasSubstr("npm"));
}

}  // namespace
}  // namespace lazaret::config
