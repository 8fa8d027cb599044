// Helpers for the lazaret_config unit tests: a scratch directory holding a
// fake home, XDG directories, a runtime directory and a workspace.
#ifndef LAZARET_SERVICES_CONFIGD_TEST_UTIL_H_
#define LAZARET_SERVICES_CONFIGD_TEST_UTIL_H_

#include <string>

#include "services/common/profile_paths/host_paths.h"
#include "services/configd/loader.h"
#include "services/configd/schema.h"

namespace lazaret::config::testing {

// A fresh directory under $TEST_TMPDIR or /tmp, removed (recursively) at
// destruction. Paths passed to the helpers are relative to it.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // Canonical absolute path of the scratch directory.
  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  // mkdir -p, mode 0700.
  std::string Dir(const std::string& rel) const;
  // Writes a file (creating parents), mode 0600; returns its path.
  std::string File(const std::string& rel, const std::string& content) const;
  // Creates a symlink at `rel` pointing to `target` (used verbatim).
  std::string Symlink(const std::string& target, const std::string& rel) const;

  // A HostContext whose home is <root>/home, XDG dirs inside it, runtime
  // dir <root>/run. Creates home, ~/.ssh and the workspace <root>/ws.
  HostContext Host() const;
  std::string workspace() const { return root_ + "/ws"; }

 private:
  std::string root_;
};

// LoadLayers with the given texts; empty text means "layer absent".
LoadedConfig Load(const Scratch& s, const std::string& user, const std::string& workspace = "",
                  const std::string& explicit_config = "", bool workspace_trusted = false);

// All error messages joined, for EXPECT_THAT(..., HasSubstr(...)).
std::string Errors(const LoadedConfig& c);
std::string Warnings(const LoadedConfig& c);

// The user's config.toml as the parse-only tests name it.
inline constexpr char kUserConfigFile[] = "/home/u/.config/lazaret/config.toml";

// One user layer parsed from text (as kUserConfigFile), with what parsing
// reported.
struct Parsed {
  LayerConfig layer;
  Diagnostics diags;
};
Parsed ParseText(const std::string& text);

// Every error of `d`, formatted, one per line.
std::string AllErrors(const Diagnostics& d);

// Where a resolved profile's key came from; nullptr when it has no source.
const KeySource* SourceOf(const ResolvedProfile& p, const std::string& key);

}  // namespace lazaret::config::testing

#endif  // LAZARET_SERVICES_CONFIGD_TEST_UTIL_H_
