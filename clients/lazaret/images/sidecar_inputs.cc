#include "clients/lazaret/images/sidecar_inputs.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/spawn/subprocess.h"
#include "services/common/fs/file.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"

namespace lazaret::cli::images {
namespace {

// Bumped when the build changes in a way the hashed inputs do not show.
constexpr char kSidecarRecipe[] = "lazaret-sidecar-recipe-1";

}  // namespace

absl::StatusOr<std::vector<ImageFile>> ParseLddOutput(const std::string& text) {
  std::vector<ImageFile> out;
  for (absl::string_view raw : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::string line(absl::StripAsciiWhitespace(raw));
    std::string path;
    if (const auto arrow = line.find("=>"); arrow != std::string::npos) {
      std::string rest(absl::StripAsciiWhitespace(line.substr(arrow + 2)));
      if (absl::StartsWith(rest, "not found")) {
        return absl::FailedPreconditionError(
            absl::StrCat("ldd: ", line.substr(0, arrow), " not found"));
      }
      path = rest.substr(0, rest.find(" ("));
    } else if (absl::StartsWith(line, "/")) {
      path = line.substr(0, line.find(" ("));  // the loader
    } else {
      continue;  // linux-vdso.so.1 and the like: not files
    }
    if (path.empty() || path[0] != '/') continue;
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) {
      return ErrnoStatus(absl::StrCat("resolving ", path), errno);
    }
    out.push_back(ImageFile{resolved, path});
  }
  return out;
}

absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter) {
  char resolved[PATH_MAX];
  if (realpath(netrouter.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        netrouter, " not found: build it (ninja lazaret-netrouter) or set LAZARET_LIBEXEC_DIR"));
  }
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured({"ldd", resolved}, std::chrono::seconds(60)));
  std::vector<ImageFile> files = {{resolved, absl::StrCat("/", kSidecarBinary)}};
  if (r.exit_code != 0) {
    if (absl::StrContains(r.out, "not a dynamic executable") ||
        absl::StrContains(r.err, "not a dynamic executable")) {
      return files;  // a static build needs nothing else
    }
    return absl::InternalError(absl::StrCat("ldd ", resolved, " failed: ", r.err));
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> libs, ParseLddOutput(r.out));
  for (auto& l : libs) {
    const bool dup = std::any_of(files.begin(), files.end(),
                                 [&](const ImageFile& f) { return f.dest == l.dest; });
    if (!dup) files.push_back(std::move(l));
  }
  std::sort(files.begin() + 1, files.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  return files;
}

absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files) {
  fs::Sha256 h;
  h.Update(absl::StrCat(kSidecarRecipe, "\n"));
  std::vector<ImageFile> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  for (const ImageFile& f : sorted) {
    LAZ_ASSIGN_OR_RETURN(std::string bytes, fs::ReadHostFile(f.source));
    h.Update(absl::StrCat("file ", f.dest, " ", bytes.size(), "\n"));
    h.Update(bytes);
  }
  return h.HexDigest();
}

}  // namespace lazaret::cli::images
