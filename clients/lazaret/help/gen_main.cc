// lazaret-help-gen VERSION OUTDIR: writes the man pages (OUTDIR/man/*.1)
// and the completion scripts (OUTDIR/completions/{lazaret,_lazaret,
// lazaret.fish}) from the CLI's help table. Runs at build time only (CMake
// custom command); nothing of it is installed.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/help/help.h"
#include "clients/lazaret/help/render.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::cli::help {
namespace {

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("mkdir ", path), errno);
  }
  return absl::OkStatus();
}

absl::Status Write(const std::string& path, const std::string& text) {
  return fs::WriteFileAtomic(path, text, 0644);
}

absl::Status Generate(const std::string& version, const std::string& out) {
  LAZ_RETURN_IF_ERROR(MakeDir(out));
  LAZ_RETURN_IF_ERROR(MakeDir(absl::StrCat(out, "/man")));
  LAZ_RETURN_IF_ERROR(MakeDir(absl::StrCat(out, "/completions")));
  LAZ_RETURN_IF_ERROR(Write(absl::StrCat(out, "/man/lazaret.1"), RenderMainPage(version)));
  for (const CommandHelp& c : Commands()) {
    LAZ_RETURN_IF_ERROR(
        Write(absl::StrCat(out, "/man/", PageFileName(c)), RenderCommandPage(c, version)));
  }
  LAZ_ASSIGN_OR_RETURN(std::string bash, RenderBashCompletion());
  LAZ_ASSIGN_OR_RETURN(std::string zsh, RenderZshCompletion());
  LAZ_ASSIGN_OR_RETURN(std::string fish, RenderFishCompletion());
  LAZ_RETURN_IF_ERROR(Write(absl::StrCat(out, "/completions/lazaret"), bash));
  LAZ_RETURN_IF_ERROR(Write(absl::StrCat(out, "/completions/_lazaret"), zsh));
  return Write(absl::StrCat(out, "/completions/lazaret.fish"), fish);
}

}  // namespace
}  // namespace lazaret::cli::help

int main(int argc, char** argv) {
  if (argc != 3 || argv[1][0] == '\0' || argv[2][0] != '/') {
    std::fprintf(stderr, "usage: lazaret-help-gen VERSION /ABSOLUTE/OUTDIR\n");
    return 2;
  }
  if (absl::Status s = lazaret::cli::help::Generate(argv[1], argv[2]); !s.ok()) {
    std::fprintf(stderr, "lazaret-help-gen: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
