#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "escalate/sandbox-init/sandbox_init.h"

int main(int argc, char** argv) {
  using lazaret::sandbox_init::kSetupFailedExitCode;
  lazaret::sandbox_init::Options options;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (auto r = lazaret::sandbox_init::ParseArgs(args, &options); !r.ok()) {
    std::fprintf(stderr, "lazaret-sandbox-init: %s\n", std::string(r.message()).c_str());
    return kSetupFailedExitCode;
  }
  if (!options.git_dir.empty()) {
    if (auto r = lazaret::sandbox_init::BuildGitDir(options); !r.ok()) {
      std::fprintf(stderr, "lazaret-sandbox-init: setting up git failed: %s\n",
                   std::string(r.message()).c_str());
      return kSetupFailedExitCode;
    }
  }
  if (!options.ca_bundle.empty()) {
    const std::vector<std::string> bundles(std::begin(lazaret::sandbox_init::kImageCaBundles),
                                           std::end(lazaret::sandbox_init::kImageCaBundles));
    if (auto r = lazaret::sandbox_init::BuildCaBundle(options, bundles); !r.ok()) {
      std::fprintf(stderr, "lazaret-sandbox-init: building the CA bundle failed: %s\n",
                   std::string(r.message()).c_str());
      return kSetupFailedExitCode;
    }
  }
  std::string error;
  const int code = lazaret::sandbox_init::ExecCommand(options, &error);
  std::fprintf(stderr, "lazaret-sandbox-init: %s\n", error.c_str());
  return code;
}
