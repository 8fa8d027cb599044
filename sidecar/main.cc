#include <cstdio>
#include <vector>

#include "sidecar/netrouter.h"

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  absl::StatusOr<lazaret::netrouter::RouterOptions> options =
      lazaret::netrouter::TakeRouterFlags(&args);
  if (!options.ok()) {
    std::fprintf(stderr, "lazaret-netrouter: %s\n",
                 std::string(options.status().message()).c_str());
    return 1;
  }
  args.push_back(nullptr);
  return lazaret::ServiceMain(lazaret::netrouter::Spec(*options), static_cast<int>(args.size() - 1),
                              args.data());
}
