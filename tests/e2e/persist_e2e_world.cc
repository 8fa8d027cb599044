#include "tests/e2e/persist_e2e_world.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::test::e2e::persist {
namespace {

constexpr char kMarker[] = "# written by persist_e2e (restored at its end)\n";

constexpr char kDebugfs[] = "/usr/sbin/debugfs";

std::string Profile(const std::string& name, const std::string& image, const std::string& dirs,
                    const std::string& cap = kCapDefault) {
  return absl::StrCat("[profiles.", name, "]\nimage = \"", image, "\"\npersistent_dirs = ", dirs,
                      "\npersistent_cap = \"", cap, "\"\n\n");
}

std::string ImageOf(const std::string& profile_dir) { return profile_dir + "/persist.img"; }

// The mount point (field 5) of a mountinfo line.
std::string MountPoint(absl::string_view line) {
  std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
  return f.size() > 4 ? std::string(f[4]) : "";
}

}  // namespace

PersistWorld::PersistWorld() {
  dir_ = std::make_unique<UserDir>("persist");
  data_root_ = dir_->path() + "/data";
  if (RunAs("/", {"mkdir", "-p", data_root_}).exit_code != 0) {
    error_ = "cannot create " + data_root_;
    return;
  }
  const std::string all = "[\"/usr\", \"/etc\", \"/root\"]";
  const std::string config = absl::StrCat(
      "[storage]\ndata_root = \"", data_root_, "\"\n\n", Profile(kPkg, kOwnImage, all),
      Profile(kPkgFuse, kOwnImage, all),
      Profile(kShared, kBaseImage, all), Profile(kKilled, kBaseImage, all),
      Profile(kEtc, kBaseImage, all), Profile(kNoEtc, kBaseImage, "[\"/root\"]"),
      Profile(kReset, kBaseImage, "[\"/root\"]"),
      Profile(kLink, kBaseImage, "[\"/usr\"]"), Profile(kBench, kBaseImage, "[\"/root\"]"),
      Profile(kBenchFuse, kBaseImage, "[\"/root\"]"),
      Profile(kModes, kBaseImage, "[\"/usr/local\", \"/etc\"]"),
      Profile(kModesFuse, kBaseImage, "[\"/usr/local\", \"/etc\"]"),
      Profile(kPoison, kBaseImage, "[\"/usr/local\"]"),
      Profile(kPoisonFuse, kBaseImage, "[\"/usr/local\"]"),
      Profile(kApt, kBaseImage, "[\"/usr\", \"/var/lib/dpkg\", \"/var/lib/apt\"]", "1GiB"),
      Profile(kCap, kBaseImage, "[\"/root\"]", kCapSmall));
  user_config_ = std::make_unique<UserConfig>(kMarker, config);
  if (!user_config_->error().empty()) {
    error_ = user_config_->error();
    return;
  }
  error_ = BuildOwnImage("v1");
}

PersistWorld::~PersistWorld() {
  // Every profile's overlays go before their directories do.
  for (const char* p : {kPkg, kPkgFuse, kShared, kKilled, kEtc, kNoEtc, kReset, kLink, kBench,
                        kBenchFuse, kModes, kModesFuse, kPoison, kPoisonFuse, kApt, kCap}) {
    Lazaret("/", {"state", "reset", p, "--yes"});
  }
  user_config_.reset();
  Podman({"rmi", "--force", kOwnImage});
}

std::string PersistWorld::RecordLayers(const std::string& profile,
                                       const std::vector<std::string>& names,
                                       const std::string& driver) {
  std::string script = "mkdir -m 0700 -p \"$0\"";
  for (const std::string& n : names) {
    absl::StrAppend(&script, " && echo ", driver, " > \"$0/", n, "_layer\"");
  }
  CommandResult r = RunAs("/", {"sh", "-c", script, ProfileDir(profile)});
  return r.exit_code == 0 ? "" : absl::StrCat("recording the layers of ", profile, ": ", r.err);
}

std::string PersistWorld::ProfileDir(const std::string& profile) const {
  return data_root_ + "/" + profile;
}

std::string PersistWorld::BuildOwnImage(const std::string& version) {
  UserDir ctx("persist-image");
  ctx.Write("laz-version", version + "\n");
  ctx.Write("Containerfile",
            absl::StrCat("FROM ", kBaseImage, "\nCOPY laz-version /usr/share/laz-version\n"));
  CommandResult r = Podman({"build", "--pull=never", "--tag", kOwnImage, "--file",
                            ctx.path() + "/Containerfile", ctx.path()});
  if (!r.exit_code == 0) return absl::StrCat("podman build of ", kOwnImage, " failed: ", r.err);
  return "";
}

std::optional<mode_t> LayerMode(const std::string& profile_dir, const std::string& rel) {
  CommandResult r = test::Run({kDebugfs, "-R", "stat /" + rel, ImageOf(profile_dir)});
  // "Inode: 13   Type: regular    Mode:  0755   Flags: 0x80000"
  const size_t at = r.out.find("Mode:");
  if (r.exit_code != 0 || at == std::string::npos) return std::nullopt;
  const size_t type = r.out.find("Type: ");
  if (type == std::string::npos) return std::nullopt;
  const std::string t = r.out.substr(type + 6, r.out.find(' ', type + 6) - type - 6);
  mode_t mode = static_cast<mode_t>(std::stoul(r.out.substr(at + 5), nullptr, 8));
  if (t == "regular") mode |= S_IFREG;
  if (t == "directory") mode |= S_IFDIR;
  if (t == "symlink") mode |= S_IFLNK;
  if (t == "character") mode |= S_IFCHR;
  return mode;
}

std::vector<std::string> LayerNames(const std::string& profile_dir, const std::string& rel) {
  // "/13/100755/0/0/name/3/" per entry.
  CommandResult r = test::Run({kDebugfs, "-R", "ls -p /" + rel, ImageOf(profile_dir)});
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(l, '/');
    if (f.size() < 6 || f[5] == "." || f[5] == ".." || f[5].empty()) continue;
    out.emplace_back(f[5]);
  }
  return out;
}

std::string SetLayerMode(const std::string& profile_dir, const std::string& rel, mode_t mode) {
  std::optional<mode_t> now = LayerMode(profile_dir, rel);
  if (!now) return absl::StrCat(rel, " is not in ", ImageOf(profile_dir));
  const mode_t want = (*now & S_IFMT) | (mode & 07777);
  return HostCommand(
      {kDebugfs, "-w", "-R", absl::StrFormat("sif /%s mode 0%o", rel, want), ImageOf(profile_dir)});
}

uint64_t HostAvailableBytes(const std::string& path) {
  struct statvfs v {};
  if (statvfs(path.c_str(), &v) != 0) return 0;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

std::string HelperMountTable() {
  if (!IsRootless()) return test::ReadFile("/proc/self/mountinfo");
  return Podman({"unshare", "cat", "/proc/self/mountinfo"}).out;
}

std::vector<std::string> MountsUnder(const std::string& needle) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(HelperMountTable(), '\n')) {
    if (l.find(needle) != absl::string_view::npos) out.emplace_back(l);
  }
  return out;
}

std::vector<std::string> OverlayMountsOf(const std::string& profile_dir) {
  std::vector<std::string> out;
  for (const std::string& l : MountsUnder(profile_dir + "/")) {
    const std::string at = MountPoint(l);
    if (absl::StartsWith(at, profile_dir + "/") && absl::EndsWith(at, "_merged")) out.push_back(l);
  }
  return out;
}

std::vector<std::string> CappedMountsOf(const std::string& profile_dir) {
  std::vector<std::string> out;
  for (const std::string& l : MountsUnder(profile_dir + "/")) {
    if (MountPoint(l) == profile_dir + "/persist") out.push_back(l);
  }
  return out;
}

CommandResult RunIn(const std::string& ws, const std::string& profile, const std::string& script) {
  return Lazaret(ws, {"run", profile, "--", "sh", "-c", script});
}

pid_t MountHelperPid() {
  const std::string flag = "--runtime-dir=" + Env().runtime_dir;
  for (const auto& p : ProcessesWith("lazaret-mount-helper")) {
    if (p.empty()) continue;
    const std::string& argv0 = p[0];
    if (argv0.size() < 20 || argv0.substr(argv0.size() - 20) != "lazaret-mount-helper") continue;
    bool ours = false;
    for (const auto& a : p) ours = ours || a == flag;
    if (!ours) continue;
    // ProcessesWith gives argv only: find the pid again by its command line.
    const std::string want = absl::StrJoin(p, std::string(1, '\0'));
    CommandResult pids = test::Run({"pgrep", "-f", "lazaret-mount-helper"});
    for (absl::string_view s : absl::StrSplit(pids.out, '\n', absl::SkipEmpty())) {
      const std::string pid(s);
      std::string cmdline = test::ReadFile("/proc/" + pid + "/cmdline");
      while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
      if (cmdline == want) return std::stoi(pid);
    }
  }
  return 0;
}

std::string HostCommand(const std::vector<std::string>& argv) {
  CommandResult r = test::Run(argv);
  if (r.exit_code == 0) return "";
  return absl::StrCat(absl::StrJoin(argv, " "), ": exit ", r.exit_code, ": ", r.err);
}

}  // namespace lazaret::test::e2e::persist
