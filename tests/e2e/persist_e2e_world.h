// What the persistence end-to-end tests and benchmark share: the user's
// configuration with their profiles (on a data_root of their own), an image
// of their own built FROM the e2e sandbox image, and ways to look from the
// host at the overlays the mount helper mounted (the host's mount table
// rootful, `podman unshare`'s rootless). Runs in the test process (root);
// trusts the fixtures' `lazaret up` and what podman prints.
#ifndef LAZARET_TESTS_E2E_PERSIST_E2E_WORLD_H_
#define LAZARET_TESTS_E2E_PERSIST_E2E_WORLD_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::persist {

inline constexpr char kBaseImage[] = "localhost/lazaret-sandbox:trixie";
// The profiles' own image, rebuilt by the image-update test.
inline constexpr char kOwnImage[] = "localhost/lazaret-persist-e2e:current";

// The profiles written into the user's config.toml (so that `lazaret state`
// finds them too), each with persistent_dirs /usr, /etc and /root except
// kNoEtc, kReset, kBench and kBenchFuse (/root only) and those whose
// comment says otherwise.
inline constexpr char kPkg[] = "p3pkg";          // on kOwnImage
inline constexpr char kPkgFuse[] = "p3pkgfuse";  // on kOwnImage, its layers fuse-overlayfs's
inline constexpr char kShared[] = "p3shared";
inline constexpr char kKilled[] = "p3killed";
inline constexpr char kEtc[] = "p3etc";
inline constexpr char kNoEtc[] = "p3noetc";
inline constexpr char kLink[] = "p3link";  // for the symlink attacks
inline constexpr char kReset[] = "p3reset";  // for the reset's question on a terminal
inline constexpr char kBench[] = "p3bench";
inline constexpr char kBenchFuse[] = "p3benchfuse";  // its layer recorded as fuse-overlayfs's
// /usr/local and /etc, for the image's own modes at the roots (kModesFuse:
// its layers recorded as fuse-overlayfs's).
inline constexpr char kModes[] = "p3modes";
inline constexpr char kModesFuse[] = "p3modesfuse";
// /usr/local, for what the agent hides from `state show` and `state reset`.
inline constexpr char kPoison[] = "p3poison";
inline constexpr char kPoisonFuse[] = "p3poisonfuse";
// /usr with dpkg's and apt's databases (/var/lib/dpkg, /var/lib/apt): the
// coherent set for apt; persistent_cap 1GiB.
inline constexpr char kApt[] = "p3apt";
// /root with persistent_cap kCapSmall, for writing past the cap.
inline constexpr char kCap[] = "p3cap";
inline constexpr char kCapSmall[] = "64MiB";
inline constexpr uint64_t kCapSmallBytes = uint64_t{64} << 20;
// Every other profile's persistent_cap: the cap is preallocated on disk.
inline constexpr char kCapDefault[] = "256MiB";

class PersistWorld {
 public:
  // Writes the configuration (restored at the end) and builds kOwnImage
  // with /usr/share/laz-version = "v1". error() says what failed.
  PersistWorld();
  ~PersistWorld();
  PersistWorld(const PersistWorld&) = delete;
  PersistWorld& operator=(const PersistWorld&) = delete;

  const std::string& error() const { return error_; }
  std::string ProfileDir(const std::string& profile) const;
  const std::string& data_root() const { return data_root_; }

  // Rebuilds kOwnImage under the same name with /usr/share/laz-version.
  std::string BuildOwnImage(const std::string& version);

  // Makes `profile`'s directory and records each of `names` (PersistName)
  // as a layer of `driver` ("fuse-overlayfs", "kernel") before its first
  // mount, as the mount helper's user; "" on success.
  std::string RecordLayers(const std::string& profile, const std::vector<std::string>& names,
                           const std::string& driver);

 private:
  std::unique_ptr<UserDir> dir_;
  std::string data_root_;
  std::unique_ptr<UserConfig> user_config_;
  std::string error_;
};

// What the profile's capped file system image (<profile_dir>/persist.img)
// holds at `rel` (e.g. "usr_changes/bin/git"), read from the image with
// debugfs (e2fsprogs) as it is on disk: only meaningful while no session
// holds the profile. The entry's mode (file type bits included), nullopt
// when there is none (or no image).
std::optional<mode_t> LayerMode(const std::string& profile_dir, const std::string& rel);
// The names in the image's directory `rel` ("." and ".." left out).
std::vector<std::string> LayerNames(const std::string& profile_dir, const std::string& rel);
// Sets the mode (permission bits) of the image's entry `rel`; "" on
// success. Only while no session holds the profile.
std::string SetLayerMode(const std::string& profile_dir, const std::string& rel, mode_t mode);

// Bytes of `path`'s file system available to non-root users (f_bavail).
uint64_t HostAvailableBytes(const std::string& path);

// The mount table where the helper's overlays live: /proc/self/mountinfo
// rootful, `podman unshare cat /proc/self/mountinfo` as the user rootless.
std::string HelperMountTable();
// Lines of HelperMountTable() naming `needle` (a profile directory).
std::vector<std::string> MountsUnder(const std::string& needle);
// Of those, the overlays (mounted at <profile_dir>/<name>_merged) and the
// capped file system (at <profile_dir>/persist).
std::vector<std::string> OverlayMountsOf(const std::string& profile_dir);
std::vector<std::string> CappedMountsOf(const std::string& profile_dir);

// `lazaret run PROFILE -- sh -c SCRIPT` in `ws`.
CommandResult RunIn(const std::string& ws, const std::string& profile, const std::string& script);

// The pid of this runtime directory's lazaret-mount-helper (0: none).
pid_t MountHelperPid();

// Runs argv as root on the host; "" on success, else what went wrong.
std::string HostCommand(const std::vector<std::string>& argv);

}  // namespace lazaret::test::e2e::persist

#endif  // LAZARET_TESTS_E2E_PERSIST_E2E_WORLD_H_
