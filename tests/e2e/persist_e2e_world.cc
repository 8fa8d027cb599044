#include "tests/e2e/persist_e2e_world.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::test::e2e::persist {
namespace {

constexpr char kMarker[] = "# written by persist_e2e (restored at its end)\n";

std::string Profile(const std::string& name, const std::string& image, const std::string& dirs) {
  return absl::StrCat("[profiles.", name, "]\nimage = \"", image, "\"\npersistent_dirs = ", dirs,
                      "\n\n");
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
      Profile(kApt, kBaseImage, "[\"/usr\", \"/var/lib/dpkg\", \"/var/lib/apt\"]"));
  user_config_ = std::make_unique<UserConfig>(kMarker, config);
  if (!user_config_->error().empty()) {
    error_ = user_config_->error();
    return;
  }
  error_ = BuildOwnImage("v1");
}

PersistWorld::~PersistWorld() {
  // Every profile's overlays go before their directories do.
  for (const char* p :
       {kPkg, kPkgFuse, kShared, kKilled, kEtc, kNoEtc, kReset, kLink, kBench, kBenchFuse, kModes,
        kModesFuse, kPoison, kPoisonFuse, kApt}) {
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
