#include "clients/lazaret/images/sandbox_inputs.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/fs/file.h"
#include "services/common/fs/sha256.h"

#ifndef LAZARET_SOURCE_IMAGES_DIR
#define LAZARET_SOURCE_IMAGES_DIR ""
#endif

namespace lazaret::cli::images {
namespace {

// Bumped when the build changes in a way the hashed inputs do not show.
constexpr char kSandboxRecipe[] = "lazaret-sandbox-recipe-1";

bool IsDebianPackageName(const std::string& n) {
  if (n.size() < 2 || !(absl::ascii_islower(n[0]) || absl::ascii_isdigit(n[0]))) return false;
  for (char c : n) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '+' || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string FindImagesDir(const std::string& self_dir) {
  if (const char* v = std::getenv(kImagesDirEnv); v != nullptr && *v == '/') return v;
  const std::string installed = absl::StrCat(self_dir, "/../share/lazaret/images");
  if (access(absl::StrCat(installed, "/sandbox/packages.txt").c_str(), R_OK) == 0) {
    return installed;
  }
  return LAZARET_SOURCE_IMAGES_DIR;
}

absl::StatusOr<std::vector<std::string>> ParsePackageList(const std::string& text) {
  std::vector<std::string> out;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::string line(absl::StripAsciiWhitespace(raw.substr(0, raw.find('#'))));
    if (line.empty()) continue;
    if (!IsDebianPackageName(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("packages.txt line ", line_no, ": '", line, "' is not a package name"));
    }
    out.push_back(line);
  }
  if (out.empty()) return absl::InvalidArgumentError("packages.txt lists no package");
  return out;
}

absl::StatusOr<std::vector<std::string>> SandboxPackages(const std::string& images_dir) {
  const std::string path = absl::StrCat(images_dir, "/sandbox/packages.txt");
  absl::StatusOr<std::string> text = fs::ReadHostFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(
        absl::StrCat("the sandbox image's package list ", path, " is missing (set ", kImagesDirEnv,
                     " to the deploy/images directory of a Lazaret checkout)"));
  }
  return ParsePackageList(*text);
}

std::vector<std::string> SandboxBuildArgv(const std::vector<std::string>& packages,
                                          const std::string& mirror, const std::string& out_tar) {
  return {
      "mmdebstrap",
      "--variant=minbase",
      absl::StrCat("--include=", absl::StrJoin(packages, ",")),
      "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/info/*",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      "--dpkgopt=path-include=/usr/share/locale/locale.alias",
      "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-include=/usr/share/doc/*/copyright",
      // podman bind-mounts its own over both at run time; the build host's
      // must not be in the image.
      "--customize-hook=rm -f \"$1/etc/hostname\" \"$1/etc/resolv.conf\"",
      kSandboxSuite,
      out_tar,
      mirror,
  };
}

std::string SandboxInputsHash(const std::vector<std::string>& packages, const std::string& mirror) {
  fs::Sha256 h;
  h.Update(absl::StrCat(kSandboxRecipe, "\n"));
  for (const auto& a : SandboxBuildArgv(packages, mirror, "OUT.tar")) {
    h.Update(a);
    h.Update("\n");
  }
  return h.HexDigest();
}

}  // namespace lazaret::cli::images
