// `lazaret image build|tag`: Lazaret's two local images, built without any
// registry. Runs in the user's terminal, as the user, so the images land in
// that user's own podman storage (rootless users build their own; mmdebstrap
// then runs in --mode=unshare). Inputs live in deploy/images/.
//
//   sandbox  Debian trixie, mmdebstrap --variant=minbase with
//            deploy/images/sandbox/packages.txt, `podman import`ed;
//            tagged localhost/lazaret-sandbox:trixie-<inputs hash> and
//            kDefaultSandboxImage (what the embedded default profile runs).
//   sidecar  FROM scratch: /lazaret-netrouter plus exactly the shared
//            libraries `ldd` lists and the loader; no shell, nothing else;
//            tagged localhost/lazaret-sidecar:<inputs hash> and kSidecarImage.
//
// The tag is a content hash of the inputs (package list, suite, mirror and
// the exact build command for the sandbox; every file's bytes for the
// sidecar), so a changed input gives a new tag and an unchanged one is
// reused without building.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGE_H_
#define LAZARET_CLIENTS_LAZARET_IMAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli {

inline constexpr char kSandboxSuite[] = "trixie";
inline constexpr char kDefaultDebianMirror[] = "http://deb.debian.org/debian";
// Overrides the mirror (else the host's apt sources are used).
inline constexpr char kMirrorEnv[] = "LAZARET_DEBIAN_MIRROR";
// Overrides where deploy/images is found.
inline constexpr char kImagesDirEnv[] = "LAZARET_IMAGES_DIR";

// The directory holding sandbox/packages.txt: $LAZARET_IMAGES_DIR, the
// installed share/lazaret/images next to the binary, or the source tree.
std::string FindImagesDir();

// Package names from packages.txt: one per line, '#' starts a comment.
// Refuses anything that is not a Debian package name.
absl::StatusOr<std::vector<std::string>> ParsePackageList(const std::string& text);

// The first Debian archive URI of the host's apt sources (one-line .list
// files and deb822 .sources), skipping security, backports/updates-only and
// non-Debian entries; kDefaultDebianMirror when there is none.
std::string DetectDebianMirror(const std::string& apt_etc_dir = "/etc/apt");

// The mmdebstrap command line of the sandbox image, writing `out_tar`.
std::vector<std::string> SandboxBuildArgv(const std::vector<std::string>& packages,
                                          const std::string& mirror, const std::string& out_tar);

// Content hash (hex) of the sandbox image's inputs: the build command with
// a placeholder output path, which holds the package list, suite, mirror and
// every option.
std::string SandboxInputsHash(const std::vector<std::string>& packages, const std::string& mirror);

// One file of the sidecar image: host source and path inside the image.
struct ImageFile {
  std::string source;  // canonical host path
  std::string dest;    // absolute path in the image
};

// Parses `ldd` output into the libraries and loader it names. Refuses
// "not found" entries.
absl::StatusOr<std::vector<ImageFile>> ParseLddOutput(const std::string& text);

// /lazaret-netrouter plus its ldd closure.
absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter);

// Content hash (hex) over every file's destination and bytes.
absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files);

// The tags a build of the current inputs gives.
absl::StatusOr<std::string> SandboxImageTag(const std::string& mirror_override);
absl::StatusOr<std::string> SidecarImageTag(const std::string& libexec_dir);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_IMAGE_H_
