// Files editors and shells act on (services/common/workspace/
// host_tool_files.h), as the end scan lists them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/workspace/scan.h"
#include "clients/lazaret/workspace/snapshot.h"
#include "clients/lazaret/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

TEST_F(WorkspaceScanTest, EditorFilesTheSessionWroteAreListed) {
  Do(absl::StrCat("mkdir -p ", Q(P(".idea")), " && touch ", Q(P(".editorconfig"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("mkdir -p ", Q(P(".vscode")), " ", Q(P("sub/.devcontainer")), " && echo '{}' > ",
                  Q(P(".vscode/tasks.json")), " && echo 'export X=1' > ", Q(P(".envrc")),
                  " && touch ", Q(P(".env.local")), " ",
                  Q(P("sub/.devcontainer/devcontainer.json")), " ", Q(P("plain.txt"))));
  ScanReport r = End(snap);
  std::vector<std::string> want = {P(".vscode/"), P(".envrc"), P(".env.local"),
                                   P("sub/.devcontainer/")};
  for (const auto& w : want) {
    EXPECT_NE(std::find(r.editor_files.begin(), r.editor_files.end(), w), r.editor_files.end())
        << w << " missing from:\n"
        << absl::StrJoin(r.editor_files, "\n");
  }
  EXPECT_EQ(r.editor_files.size(), want.size()) << absl::StrJoin(r.editor_files, "\n");
}

}  // namespace
}  // namespace lazaret::cli::workspace
