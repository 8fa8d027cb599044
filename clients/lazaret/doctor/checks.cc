#include "clients/lazaret/doctor/checks.h"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/doctor/host_facts.h"
#include "clients/lazaret/images/tags.h"
#include "services/podman/host.h"
#include "services/spawn/subprocess.h"
#include "services/common/constants.h"
#include "services/common/fs/file.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::doctor {
namespace {

using Report = std::function<void(const Finding&)>;

void Say(const Report& report, Verdict v, const std::string& what, const std::string& detail,
         const std::string& fix = "") {
  report(Finding{v, what, detail, fix});
}

// Output of `argv` (first line), or an error.
absl::StatusOr<std::string> VersionOf(const std::vector<std::string>& argv) {
  absl::StatusOr<Captured> r = RunCaptured(argv, std::chrono::seconds(30));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("exit ", r->exit_code, ": ", FirstLine(r->err.empty() ? r->out : r->err)));
  }
  return FirstLine(r->out.empty() ? r->err : r->out);
}

// The containers.conf files podman itself would read for this user; a
// session reads none of them (Lazaret's own, via CONTAINERS_CONF).
std::vector<std::string> IgnoredContainersConfs(bool rootless) {
  std::vector<std::string> found;
  std::vector<std::string> files = {"/usr/share/containers/containers.conf",
                                    "/etc/containers/containers.conf"};
  if (const char* c = std::getenv("CONTAINERS_CONF"); c != nullptr && *c != '\0') {
    files.push_back(c);
  }
  if (const char* home = std::getenv("HOME"); rootless && home != nullptr) {
    files.push_back(absl::StrCat(home, "/.config/containers/containers.conf"));
  }
  for (const auto& f : files) {
    if (access(f.c_str(), F_OK) == 0) found.push_back(f);
  }
  return found;
}

// The program answers `argv` (its version); true when it does.
bool CheckProgram(const Report& report, const std::string& what,
                  const std::vector<std::string>& argv, const std::string& fix) {
  absl::StatusOr<std::string> v = VersionOf(argv);
  if (!v.ok()) {
    Say(report, Verdict::kFail, what, std::string(v.status().message()), fix);
    return false;
  }
  Say(report, Verdict::kOk, what, *v);
  return true;
}

// runsc runs, and is a release agents work under (kRunscMinReleaseDate).
// A version that names no release date (a local build) passes with a
// warning.
void CheckRunsc(const Report& report, const std::string& runsc) {
  const std::string what = "runsc (gVisor)";
  absl::StatusOr<std::string> v = VersionOf({runsc, "--version"});
  if (!v.ok()) {
    Say(report, Verdict::kFail, what, std::string(v.status().message()),
        absl::StrCat(runsc, " does not run; reinstall runsc or fix ", kRunscEnv));
    return;
  }
  const int date = RunscReleaseDate(*v);
  if (date == 0) {
    Say(report, Verdict::kWarn, what, absl::StrCat(*v, " (no release date in its version)"),
        absl::StrCat("use a gVisor release of ", kRunscMinReleaseDate, " or newer"));
  } else if (date < kRunscMinReleaseDate) {
    Say(report, Verdict::kFail, what,
        absl::StrCat(*v, " is older than ", kRunscMinReleaseDate,
                     ": `ls -l` and other statx callers fail inside its sandboxes"),
        "apt-get install -t bookworm-backports runsc (deploy/setup-host.sh does), or gVisor's "
        "own apt repository");
  } else {
    Say(report, Verdict::kOk, what, *v);
  }
}

// The session registry identifies each `lazaret run` by a pidfd the
// kernel takes from the socket (SO_PEERPIDFD, Linux 6.5): asked of a real
// socket pair, not guessed from the version.
void CheckPeerPidfd(const Report& report) {
  int sv[2];
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    Say(report, Verdict::kFail, "kernel", absl::StrCat("socketpair: ", strerror(errno)), "");
    return;
  }
  if (getsockopt(sv[0], SOL_SOCKET, kSoPeerPidfd, &pidfd, &len) == 0 && pidfd >= 0) {
    Say(report, Verdict::kOk, "kernel", "SO_PEERPIDFD (session registry)");
    close(pidfd);
  } else {
    Say(report, Verdict::kFail, "kernel",
        absl::StrCat("no SO_PEERPIDFD (", strerror(errno),
                     "): the session registry needs Linux 6.5 or newer"),
        "boot a newer kernel (Debian 12: the bookworm-backports linux-image)");
  }
  close(sv[0]);
  close(sv[1]);
}

void CheckGit(const Report& report) {
  absl::StatusOr<std::string> git = VersionOf({"git", "--version"});
  if (!git.ok()) {
    Say(report, Verdict::kFail, "git", std::string(git.status().message()), "apt-get install git");
  } else if (!GitAtLeast(*git, 2, 35)) {
    Say(report, Verdict::kFail, "git", absl::StrCat(*git, " (2.35 or newer needed)"),
        "install a newer git (Debian 12 has 2.39)");
  } else {
    Say(report, Verdict::kOk, "git", *git);
  }
}

// Rootless prerequisites: subordinate ids and a runtime directory.
void CheckRootless(const Report& report, const HostUser& u) {
  if (!u.rootless) {
    Say(report, Verdict::kOk, "subuid/subgid", "not needed (rootful)");
    return;
  }
  for (const char* f : {"/etc/subuid", "/etc/subgid"}) {
    if (HasSubordinateRange(fs::ReadHostFile(f).value_or(""), u.name, u.uid)) {
      Say(report, Verdict::kOk, f, absl::StrCat("range for ", u.name));
    } else {
      Say(report, Verdict::kFail, f, absl::StrCat("no range of 65536 ids for ", u.name),
          absl::StrCat("as root: usermod --add-subuids 100000-165535 --add-subgids "
                       "100000-165535 ",
                       u.name, " (pick a free range)"));
    }
  }
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  if (xdg == nullptr || stat(xdg, &st) != 0 || st.st_uid != u.uid) {
    Say(report, Verdict::kFail, "XDG_RUNTIME_DIR",
        xdg == nullptr ? "not set" : absl::StrCat(xdg, " missing or not yours"),
        absl::StrCat("log in through PAM/systemd, or: mkdir -m 0700 /run/user/", u.uid, "; chown ",
                     u.name, " /run/user/", u.uid, "; export XDG_RUNTIME_DIR=/run/user/", u.uid));
  } else {
    Say(report, Verdict::kOk, "XDG_RUNTIME_DIR", xdg);
  }
}

void CheckDevice(const Report& report, const std::string& path, unsigned major_no,
                 unsigned minor_no, bool rootless, const std::string& why) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != major_no ||
      minor(st.st_rdev) != minor_no) {
    Say(report, Verdict::kFail, path, "missing or not the right character device",
        absl::StrCat("run deploy/setup-host.sh as root (mknod ", path, " c ", major_no, " ",
                     minor_no, "; chmod 0666 ", path, ")"));
    return;
  }
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
  const bool usable = access(path.c_str(), R_OK | W_OK) == 0;
  if (rootless && !usable) {
    Say(report, Verdict::kFail, path,
        absl::StrCat("mode ", mode, ", not usable by you (", why, ")"),
        absl::StrCat("as root: chmod 0666 ", path, " (deploy/setup-host.sh does this)"));
  } else {
    Say(report, Verdict::kOk, path, absl::StrCat("mode ", mode));
  }
}

// Sessions run podman with Lazaret's own containers.conf (podman.h):
// nothing in these files reaches a sandbox or sidecar, and its
// default_ulimits = [] gives containers podman's own limits, which a root
// without CAP_SYS_RESOURCE can set (PLATFORM.md).
void CheckContainersConf(const Report& report, bool rootless) {
  const std::vector<std::string> ignored = IgnoredContainersConfs(rootless);
  Say(report, Verdict::kOk, "containers.conf",
      ignored.empty()
          ? std::string("sessions use Lazaret's own (<runtime dir>/podman/containers.conf)")
          : absl::StrCat("sessions use Lazaret's own (<runtime dir>/podman/"
                         "containers.conf), not ",
                         absl::StrJoin(ignored, ", ")));
}

// Podman's storage driver and Lazaret's images.
void CheckPodmanStore(const Report& report, const std::string& libexec_dir) {
  absl::StatusOr<std::string> driver =
      VersionOf({"podman", "info", "--format", "{{.Store.GraphDriverName}}"});
  if (!driver.ok()) {
    Say(report, Verdict::kFail, "podman storage", std::string(driver.status().message()),
        "run `podman info` to see why podman cannot start");
  } else if (*driver == "vfs") {
    Say(report, Verdict::kWarn, "podman storage",
        "vfs driver: every container start copies the image (~6 s)",
        "apt-get install containers-storage, then `podman system reset` as this user "
        "(deletes this user's containers and images)");
  } else {
    Say(report, Verdict::kOk, "podman storage", *driver);
  }
  // Images.
  if (ImageExists(kDefaultSandboxImage)) {
    Say(report, Verdict::kOk, "sandbox image", kDefaultSandboxImage);
  } else {
    Say(report, Verdict::kFail, "sandbox image", absl::StrCat(kDefaultSandboxImage, " missing"),
        "lazaret image build sandbox");
  }
  if (!ImageExists(kSidecarImage)) {
    Say(report, Verdict::kFail, "sidecar image", absl::StrCat(kSidecarImage, " missing"),
        "lazaret image build sidecar");
    return;
  }
  absl::StatusOr<std::string> want = images::SidecarImageTag(libexec_dir);
  absl::StatusOr<std::string> have =
      VersionOf({"podman", "image", "inspect", "--format",
                 absl::StrCat("{{index .Labels \"", kImageInputsLabel, "\"}}"), kSidecarImage});
  if (want.ok() && have.ok() && !absl::EndsWith(*want, have->substr(0, 16))) {
    Say(report, Verdict::kWarn, "sidecar image",
        absl::StrCat(kSidecarImage, " was built from another lazaret-netrouter"),
        "lazaret image build sidecar");
  } else {
    Say(report, Verdict::kOk, "sidecar image", kSidecarImage);
  }
}

// A host behind a TLS-intercepting proxy (many corporate networks) trusts
// a CA of its own; inside a sandbox, tools then fail their TLS checks
// unless the profile passes the host's CAs in (trust_host_ca).
void CheckHostCas(const Report& report) {
  const std::vector<std::string> extra = HostExtraCas(CaStoreLayout());
  if (extra.empty()) {
    Say(report, Verdict::kOk, "host CAs", "only the public ones");
    return;
  }
  constexpr size_t kShown = 5;
  std::vector<std::string> shown(
      extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(std::min(extra.size(), kShown)));
  std::string names = absl::StrJoin(shown, ", ");
  if (extra.size() > kShown) absl::StrAppend(&names, ", ...");
  Say(report, Verdict::kWarn, "host CAs",
      absl::StrCat("the host trusts ", extra.size(), " CA", extra.size() == 1 ? "" : "s",
                   " beyond the public ones (", names, ")"),
      "if TLS fails inside a sandbox, set trust_host_ca = true in its profile "
      "(docs/configuration.md)");
}

}  // namespace

HostUser CurrentUser() {
  HostUser u;
  u.rootless = Rootless();
  u.uid = geteuid();
  const passwd* pw = getpwuid(u.uid);
  u.name = pw != nullptr ? pw->pw_name : absl::StrCat(u.uid);
  return u;
}

void RunChecks(const HostUser& user, const CheckOptions& options, const Report& report) {
  // Programs.
  const bool have_podman =
      CheckProgram(report, "podman", {"podman", "--version"}, "apt-get install podman");
  absl::StatusOr<std::string> runsc = FindRunsc();
  if (!runsc.ok()) {
    Say(report, Verdict::kFail, "runsc (gVisor)", std::string(runsc.status().message()),
        "apt-get install runsc");
  } else {
    CheckRunsc(report, *runsc);
  }
  CheckProgram(report, "runc", {"runc", "--version"}, "apt-get install runc");
  CheckProgram(report, "fuse-overlayfs", {"fuse-overlayfs", "--version"},
               "apt-get install fuse-overlayfs");
  CheckProgram(report, "slirp4netns", {"slirp4netns", "--version"}, "apt-get install slirp4netns");
  CheckProgram(report, "mmdebstrap", {"mmdebstrap", "--version"}, "apt-get install mmdebstrap");
  CheckPeerPidfd(report);
  CheckGit(report);

  CheckRootless(report, user);
  CheckDevice(report, "/dev/fuse", 10, 229, user.rootless, "fuse-overlayfs needs it");
  CheckDevice(report, "/dev/net/tun", 10, 200, user.rootless, "slirp4netns needs it");
  CheckContainersConf(report, user.rootless);
  CheckHostCas(report);
  if (have_podman) CheckPodmanStore(report, options.libexec_dir);

  // The service set (not a host problem; `lazaret run` needs it up).
  if (CheckHealth(ServiceSocketPath(options.runtime_dir, kConfigdService), 1000).ok()) {
    Say(report, Verdict::kOk, "services", absl::StrCat("up (", options.runtime_dir, ")"));
  } else {
    Say(report, Verdict::kWarn, "services", "not running", "lazaret up");
  }
}

}  // namespace lazaret::cli::doctor
