// Helpers for the `lazaret run` end-to-end tests: running programs as the
// mode's user (root for rootful, the test user the fixture created for
// rootless) with the environment the fixtures used for `lazaret up`, and
// looking at podman and /proc from the host. The tests run as root.
#ifndef LAZARET_TESTS_E2E_RUN_E2E_SUPPORT_H_
#define LAZARET_TESTS_E2E_RUN_E2E_SUPPORT_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace lazaret::test::e2e {

enum class Mode { kRootful, kRootless };

// From $LAZARET_E2E_MODE ("rootless" or anything else).
Mode CurrentMode();
bool IsRootless();
const char* ModeName();

// Who runs lazaret/podman in this mode and with what environment.
struct ModeEnv {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;
  std::string home;
  std::string runtime_dir;  // Lazaret's runtime directory
  std::map<std::string, std::string> vars;
};
const ModeEnv& Env();

// argv wrapped to run as the mode's user with the mode's environment plus
// `extra` (an empty value leaves the variable out).
std::vector<std::string> AsMode(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& extra = {});

// Runs argv as the mode's user in `cwd`.
CommandResult RunAs(const std::string& cwd, const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& extra = {},
                    const std::string& input = "");

// `lazaret ARGS` as the mode's user in `cwd`.
CommandResult Lazaret(const std::string& cwd, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra = {});

// `podman ARGS` as the mode's user (its storage).
CommandResult Podman(const std::vector<std::string>& args);

// `lazaret ARGS` in the background, stdin on /dev/null, output appended to
// `log`. The returned pid is lazaret itself (no wrapper process in between).
pid_t SpawnLazaret(const std::string& cwd, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& extra, const std::string& log);

// Any argv in the background as the mode's user, like SpawnLazaret.
pid_t SpawnAs(const std::string& cwd, const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& extra, const std::string& log);

// Waits for a child started by SpawnLazaret or SpawnAs; returns its exit code
// (128+N when killed by N), or -1 on timeout (it is then killed).
int WaitChild(pid_t pid, int timeout_seconds);

// Whether `path` exists (lstat: a dangling symlink counts).
bool Exists(const std::string& path);
// Whether `v` holds `s`.
bool Contains(const std::vector<std::string>& v, const std::string& s);

// A directory owned by the mode's user (mode 0755), removed at the end.
class UserDir {
 public:
  explicit UserDir(const std::string& prefix);
  ~UserDir();
  UserDir(const UserDir&) = delete;
  UserDir& operator=(const UserDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes a file (mode 0644, owned by the user) and returns its path.
  std::string Write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// The mode's user's ~/.config/lazaret/config.toml replaced by `marker`
// followed by `text` for the object's lifetime; the user's own file is put
// back at the end (or the file removed when there was none). A file that
// starts with `marker` is one an earlier run left without its end, not the
// user's. error() says what failed.
class UserConfig {
 public:
  UserConfig(const std::string& marker, const std::string& text);
  ~UserConfig();
  UserConfig(const UserConfig&) = delete;
  UserConfig& operator=(const UserConfig&) = delete;
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string before_;
  bool had_one_ = false;
  std::string error_;
};

// A spare (docs/architecture.md "Spare sidecar") is not a session: after a
// session, lazaret-sessiond keeps one ready for the next `lazaret run` like
// it (a session directory marked by a file `spare`, holding the sidecar
// container lazaret-<id>-sidecar), and it may outlive the test that
// caused it (the next `lazaret run` of another workspace or profile ends
// it). The helpers below that look for what sessions left ignore it; once
// adopted (the marker removed) it is a session like any other.

// Ids of the session directories that hold the spare marker.
std::vector<std::string> SpareIds();
// Names of this runtime directory's Lazaret containers (any state), but a
// spare's sidecar.
std::vector<std::string> SessionContainers();
// Session directories left in the runtime directory, but a spare's.
std::vector<std::string> SessionDirs();
// The containers and session directories still there once all are gone or
// `timeout_seconds` have passed: a session's owner removes them right
// after it reports the exit (docs/architecture.md "Seams"). A spare's are
// not counted.
std::vector<std::string> LeftBehind(int timeout_seconds = 30);
// The session ids `lazaret ps` shows.
std::vector<std::string> PsSessions();

// What `lazaret ps --json` shows; `error` says why not when it failed or
// its output did not parse.
struct PsSpare {
  std::string id;
  std::string workspace;
  bool ready = false;
};
struct PsListing {
  std::vector<std::string> session_ids;
  std::vector<PsSpare> spares;
  std::string error;
};
PsListing PsJson();
// Waits until `lazaret ps --json` lists a ready spare for `workspace` (its
// canonical path) whose id is not `not_id`; returns its id, "" on timeout.
std::string WaitForReadySpare(const std::string& workspace, int timeout_seconds,
                              const std::string& not_id = "");

// The pid of session `id`'s worker (`lazaret-sessiond --session-worker`
// of this runtime directory holding the session's directory open: its
// owner, also when it was a spare the session adopted); -1 unless exactly
// one does within 10 s. Another session's worker, or a spare's being made
// or ended meanwhile, is never taken for it.
pid_t SessionWorkerPid(const std::string& id);
// Waits until a session's sandbox is running; returns its id ("" on timeout).
std::string WaitForRunningSession(int timeout_seconds);

// `podman inspect --format FORMAT NAME`, trimmed.
std::string Inspect(const std::string& name, const std::string& format);

// The argv of every process whose command line contains `needle`.
std::vector<std::vector<std::string>> ProcessesWith(const std::string& needle);
// True when any process's command line or environment... command line
// contains `needle` (for secrets).
bool AnyCommandLineContains(const std::string& needle);

std::string Trim(std::string s);

// The tests that install a real agent or SDK inside a sandbox from the
// real network: npm itself, a pinned release that runs on trixie's node
// (20); Debian's npm package would pull in hundreds of packages, minutes
// under gVisor.
inline constexpr char kNpmTarball[] = "https://registry.npmjs.org/npm/-/npm-10.9.2.tgz";

// "" when `url` answers from the host within a bounded time, else why not;
// straight, as the sandbox connects (no host proxy).
std::string UnreachableFromHost(const std::string& url);

// The shell lines (under `set -e`) that install Debian's nodejs with apt
// into the sandbox's /usr and npm from kNpmTarball below /usr/local, each
// only when missing; they exit 71/72 when apt update/install fails and 74
// when npm's tarball cannot be fetched, with the tool's last lines. apt
// runs its signature check as root: a persistent /usr's root shows the
// upper layer's mode 0700 inside, which _apt cannot enter (issue 22).
std::string InstallNodeAndNpmScript();

}  // namespace lazaret::test::e2e

#endif  // LAZARET_TESTS_E2E_RUN_E2E_SUPPORT_H_
