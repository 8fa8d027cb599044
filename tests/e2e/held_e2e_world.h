// What the held-changes end-to-end tests (held_e2e_test.cc,
// held_e2e_agent_test.cc) share: the user's configuration with a data_root
// of their own (so every held store they make lives in a directory removed
// at the end), the profiles they run, and ways to look at a host folder and
// at `lazaret held` from the host. Runs in the test process (root); trusts
// the fixtures' `lazaret up`, and reads `lazaret held --json` as the
// command's documented output.
#ifndef LAZARET_TESTS_E2E_HELD_E2E_WORLD_H_
#define LAZARET_TESTS_E2E_HELD_E2E_WORLD_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::held {

inline constexpr char kImage[] = "localhost/lazaret-sandbox:trixie";
// The profile of every test but the agent CLI's: the default one (so that
// `lazaret run` and `lazaret held` name none), on the world's data_root.
inline constexpr char kProfile[] = "default";
// The agent CLI's: /usr persists (the node and npm packages and the npm
// install below /usr/local survive from one session to the next), the host's
// CA bundle is bound read-only and NODE_EXTRA_CA_CERTS names it (this
// machine reaches the npm registry through a TLS-intercepting gateway).
inline constexpr char kAgentProfile[] = "h21agent";
inline constexpr char kHostCaBundle[] = "/etc/ssl/certs/ca-certificates.crt";
inline constexpr char kCaInside[] = "/etc/ssl/certs/lazaret-host-ca.crt";

class HeldWorld {
 public:
  // Writes the configuration (the user's own is restored at the end).
  // error() says what failed.
  HeldWorld();
  ~HeldWorld();
  HeldWorld(const HeldWorld&) = delete;
  HeldWorld& operator=(const HeldWorld&) = delete;

  const std::string& error() const { return error_; }
  const std::string& data_root() const { return data_root_; }
  std::string ProfileDir(const std::string& profile) const { return data_root_ + "/" + profile; }

 private:
  std::unique_ptr<UserDir> dir_;
  std::string data_root_;
  std::unique_ptr<UserConfig> user_config_;
  std::string error_;
};

// `sh -c SCRIPT` as the mode's user in `cwd` (the developer at work on the
// host: creating files, running git).
CommandResult UserSh(const std::string& cwd, const std::string& script);

// `lazaret run [PROFILE] -- sh -c SCRIPT` in `ws` (profile "" = default).
CommandResult RunSession(const std::string& ws, const std::string& script,
                         const std::string& profile = "");

// `lazaret held ARGS` in `ws`.
CommandResult Held(const std::string& ws, const std::vector<std::string>& args);

// What `lazaret held list [PROFILE] --json` says is held for the folder
// `ws`: each path (its exact bytes) with its change ("created", "changed", "deleted") and its
// kind ("file", "symlink", "deleted"). error says why the output could not
// be read.
struct HeldPath {
  std::string change;
  std::string kind;
};
struct HeldListing {
  std::map<std::string, HeldPath> paths;
  std::string error;
  std::string raw;
};
HeldListing ListHeld(const std::string& ws, const std::string& profile = "");
// The same for another folder: `lazaret held list --workspace FOLDER --json`
// run in `cwd`.
HeldListing ListHeldIn(const std::string& cwd, const std::string& folder);
// Adds a test failure for each path of `want` (path -> change) that
// `held` does not hold with that change; `when` ends the message.
void ExpectHeld(const HeldListing& held, const std::map<std::string, std::string>& want,
                const std::string& when = "");

// Every entry below `root` (not following symlinks; `skip` names entries at
// the top to leave out, such as ".git"), each as one comparable text: its
// type, permission bits, owner, and a regular file's bytes or a symlink's
// target. Keys are relative paths.
std::map<std::string, std::string> TreeState(const std::string& root,
                                             const std::vector<std::string>& skip = {});
// The differences between two TreeStates, one line each ("" when equal).
std::string TreeDiff(const std::map<std::string, std::string>& before,
                     const std::map<std::string, std::string>& after);

// `rel` for a message: a very deep one shortened to its ends.
std::string Short(const std::string& rel);

// A shell function `w PATH BASE64` for the sandbox scripts: writes the
// decoded bytes to PATH (making its parent), reads them back, and prints
// "WROTE PATH" or "FAILED PATH". It tries three times: a new entry at the
// workspace root may be taken into the held store (and vanish) between the
// write and the read-back.
std::string WriteFunction();
// `w REL BASE64(content)` for WriteFunction.
std::string WriteCommand(const std::string& rel, const std::string& content);

}  // namespace lazaret::test::e2e::held

#endif  // LAZARET_TESTS_E2E_HELD_E2E_WORLD_H_
