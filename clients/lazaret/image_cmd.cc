// `lazaret image build|tag`: the front-end of clients/lazaret/images/.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "clients/lazaret/cli.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/help/help.h"
#include "clients/lazaret/images/build.h"
#include "clients/lazaret/images/sandbox_inputs.h"
#include "clients/lazaret/images/tags.h"
#include "services/spawn/subprocess.h"

namespace lazaret::cli {
int CmdImage(const Context& ctx, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "build" && args[0] != "tag")) {
    std::fprintf(stderr, "%s", help::kImageUsage);
    return 2;
  }
  const bool build = args[0] == "build";
  std::string which = build ? "all" : "";
  std::string mirror;
  bool force = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "sandbox" || a == "sidecar" || (build && a == "all")) {
      which = a;
    } else if (a == "--force" && build) {
      force = true;
    } else if (a == "--mirror" && i + 1 < args.size()) {
      mirror = args[++i];
    } else if (absl::StartsWith(a, "--mirror=")) {
      mirror = a.substr(9);
    } else {
      std::fprintf(stderr, "lazaret image: unknown argument '%s'\n%s", a.c_str(),
                   help::kImageUsage);
      return 2;
    }
  }
  if (!mirror.empty() && !absl::StartsWith(mirror, "http://") &&
      !absl::StartsWith(mirror, "https://")) {
    std::fprintf(stderr, "lazaret image: --mirror must be an http:// or https:// URL\n");
    return 2;
  }
  if (!build) {
    if (which.empty()) {
      std::fprintf(stderr, "%s", help::kImageUsage);
      return 2;
    }
    absl::StatusOr<std::string> tag =
        which == "sandbox" ? images::SandboxImageTag(images::FindImagesDir(SelfDir()), mirror)
                           : images::SidecarImageTag(ctx.libexec_dir);
    if (!tag.ok()) {
      std::fprintf(stderr, "lazaret image tag: %s\n", std::string(tag.status().message()).c_str());
      return 1;
    }
    std::printf("%s\n", tag->c_str());
    return 0;
  }
  if (!FindProgram("podman").ok()) {
    std::fprintf(stderr, "lazaret image build: podman is not installed (apt-get install podman)\n");
    return 1;
  }
  if (which == "sidecar" || which == "all") {
    if (absl::Status s = images::BuildSidecar(ctx.libexec_dir, force); !s.ok()) {
      std::fprintf(stderr, "lazaret image build: sidecar: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (which == "sandbox" || which == "all") {
    if (absl::Status s = images::BuildSandbox(images::FindImagesDir(SelfDir()), mirror, force);
        !s.ok()) {
      std::fprintf(stderr, "lazaret image build: sandbox: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace lazaret::cli
