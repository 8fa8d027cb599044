// What the host offers Lazaret's containers: whether podman runs rootless,
// the OCI runtimes by absolute path (runsc for the sandbox, runc for the
// sidecar; never a fallback from one to another), and Lazaret's local image
// names. Runs in the `lazaret` CLI, as the user (session runtime, images,
// doctor); trusts the host's own files and podman's answers, nothing the
// sandbox wrote.
#ifndef LAZARET_SERVICES_PODMAN_HOST_H_
#define LAZARET_SERVICES_PODMAN_HOST_H_

#include <string>

#include "absl/status/statusor.h"

namespace lazaret::cli {

// The network sidecar image `lazaret image build sidecar` tags; `run` uses
// it. (The sandbox image comes from the profile; the embedded default
// profile names kDefaultSandboxImage.)
inline constexpr char kSidecarImage[] = "localhost/lazaret-sidecar:current";
inline constexpr char kSidecarRepository[] = "localhost/lazaret-sidecar";
inline constexpr char kSandboxRepository[] = "localhost/lazaret-sandbox";
// Label on images Lazaret builds: the content hash of their inputs.
inline constexpr char kImageInputsLabel[] = "io.lazaret.inputs";

// Overrides the gVisor runtime binary (absolute path), e.g. a newer runsc
// than the distribution's. Lazaret never falls back to another runtime.
inline constexpr char kRunscEnv[] = "LAZARET_RUNSC";

// True when podman runs rootless for this user (the CLI is not root).
bool Rootless();

// The runsc binary to pass to podman as --runtime: $LAZARET_RUNSC if set
// (must be an absolute path to an executable), else the first of podman's
// standard locations that exists. The error says why and how to fix it.
absl::StatusOr<std::string> FindRunsc();

// The runc binary for the sidecar, by absolute path (podman's standard
// locations), so no containers.conf runtimes table decides what "runc" is.
absl::StatusOr<std::string> FindRunc();

// True when `podman image exists IMAGE`.
bool ImageExists(const std::string& image);

// The message for a missing image: how to build it (Lazaret's own images)
// or pull it.
std::string MissingImageHint(const std::string& image);

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_PODMAN_HOST_H_
