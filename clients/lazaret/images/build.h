// Building Lazaret's two local images (`lazaret image build`) without any
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
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_BUILD_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_BUILD_H_

#include <string>

#include "absl/status/status.h"

namespace lazaret::cli::images {

// Builds the sandbox image from <images_dir>/sandbox/packages.txt and tags
// it kDefaultSandboxImage; an image of unchanged inputs is only re-tagged
// unless `force`. Progress goes to stdout, mmdebstrap's output straight to
// the terminal.
absl::Status BuildSandbox(const std::string& images_dir, const std::string& mirror_override,
                          bool force);

// Builds the sidecar image from <libexec_dir>/lazaret-netrouter and tags it
// kSidecarImage; an image of unchanged inputs is only re-tagged unless
// `force`.
absl::Status BuildSidecar(const std::string& libexec_dir, bool force);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_BUILD_H_
