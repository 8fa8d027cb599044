// The sandbox image's inputs: the package list in deploy/images, the
// mmdebstrap command line built from it, and their content hash. Runs in
// the `lazaret` CLI, as the user. packages.txt is part of Lazaret (or of
// the directory $LAZARET_IMAGES_DIR names), but every line is still checked
// to be a Debian package name before it reaches mmdebstrap's argv.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_SANDBOX_INPUTS_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_SANDBOX_INPUTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::images {

inline constexpr char kSandboxSuite[] = "trixie";
// Overrides where deploy/images is found.
inline constexpr char kImagesDirEnv[] = "LAZARET_IMAGES_DIR";

// The directory holding sandbox/packages.txt: $LAZARET_IMAGES_DIR, the
// installed share/lazaret/images next to the binary in `self_dir`, or the
// source tree.
std::string FindImagesDir(const std::string& self_dir);

// Package names from packages.txt: one per line, '#' starts a comment.
// Refuses anything that is not a Debian package name.
absl::StatusOr<std::vector<std::string>> ParsePackageList(const std::string& text);

// The parsed <images_dir>/sandbox/packages.txt; NotFound saying how to
// point Lazaret at it when it is missing.
absl::StatusOr<std::vector<std::string>> SandboxPackages(const std::string& images_dir);

// The mmdebstrap command line of the sandbox image, writing `out_tar`.
std::vector<std::string> SandboxBuildArgv(const std::vector<std::string>& packages,
                                          const std::string& mirror, const std::string& out_tar);

// Content hash (hex) of the sandbox image's inputs: the build command with
// a placeholder output path, which holds the package list, suite, mirror and
// every option.
std::string SandboxInputsHash(const std::vector<std::string>& packages, const std::string& mirror);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_SANDBOX_INPUTS_H_
