// `lazaret doctor`: checks that this host can run Lazaret sessions for the
// calling user and says how to fix each problem. Runs in the user's
// terminal; reads host files and runs version queries, changes nothing.
// Exits 1 when any check fails (warnings do not fail).
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/image.h"
#include "clients/lazaret/podman.h"
#include "clients/lazaret/subprocess.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "services/common/constants.h"

namespace lazaret::cli {
namespace {

enum class Verdict { kOk, kWarn, kFail };

struct Doctor {
  int failures = 0;
  int warnings = 0;
  void Report(Verdict v, const std::string& what, const std::string& detail,
              const std::string& fix = "") {
    const char* tag = v == Verdict::kOk ? "ok  " : v == Verdict::kWarn ? "warn" : "FAIL";
    std::printf("%s  %-22s %s\n", tag, what.c_str(), detail.c_str());
    if (v != Verdict::kOk && !fix.empty()) std::printf("      fix: %s\n", fix.c_str());
    if (v == Verdict::kFail) ++failures;
    if (v == Verdict::kWarn) ++warnings;
  }
};

std::string FirstLine(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s.substr(0, s.find('\n'))));
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

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `name` has a range in /etc/subuid or /etc/subgid (by name or uid).
bool HasSubordinateRange(const std::string& file, const std::string& name, uid_t uid) {
  std::istringstream in(ReadAll(file));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ':');
    if (f.size() != 3) continue;
    uint64_t count = 0;
    if ((f[0] == name || f[0] == absl::StrCat(uid)) && absl::SimpleAtoi(f[2], &count) &&
        count >= 65536) {
      return true;
    }
  }
  return false;
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

void CheckDevice(Doctor* d, const std::string& path, unsigned major_no, unsigned minor_no,
                 bool rootless, const std::string& why) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != major_no ||
      minor(st.st_rdev) != minor_no) {
    d->Report(Verdict::kFail, path, "missing or not the right character device",
              absl::StrCat("run deploy/setup-host.sh as root (mknod ", path, " c ", major_no, " ",
                           minor_no, "; chmod 0666 ", path, ")"));
    return;
  }
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
  const bool usable = access(path.c_str(), R_OK | W_OK) == 0;
  if (rootless && !usable) {
    d->Report(Verdict::kFail, path, absl::StrCat("mode ", mode, ", not usable by you (", why, ")"),
              absl::StrCat("as root: chmod 0666 ", path, " (deploy/setup-host.sh does this)"));
  } else {
    d->Report(Verdict::kOk, path, absl::StrCat("mode ", mode));
  }
}

// "git version 2.39.5" -> {2, 39}.
bool GitAtLeast(const std::string& version_line, int want_major, int want_minor) {
  std::vector<std::string> words = absl::StrSplit(version_line, ' ');
  if (words.size() < 3) return false;
  std::vector<std::string> parts = absl::StrSplit(words[2], '.');
  int ma = 0, mi = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &ma) || !absl::SimpleAtoi(parts[1], &mi)) {
    return false;
  }
  return ma > want_major || (ma == want_major && mi >= want_minor);
}

}  // namespace

int CmdDoctor(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret doctor: unexpected argument '%s'\nusage: lazaret doctor\n",
                 args[0].c_str());
    return 2;
  }
  Doctor d;
  const bool rootless = Rootless();
  const uid_t uid = geteuid();
  const passwd* pw = getpwuid(uid);
  const std::string user = pw != nullptr ? pw->pw_name : absl::StrCat(uid);
  std::printf("Checking this host for Lazaret (%s, %s):\n", user.c_str(),
              rootless ? "rootless podman" : "rootful podman");

  // Programs.
  auto program = [&](const std::string& what, const std::vector<std::string>& argv,
                     const std::string& fix) -> bool {
    absl::StatusOr<std::string> v = VersionOf(argv);
    if (!v.ok()) {
      d.Report(Verdict::kFail, what, std::string(v.status().message()), fix);
      return false;
    }
    d.Report(Verdict::kOk, what, *v);
    return true;
  };
  const bool have_podman = program("podman", {"podman", "--version"}, "apt-get install podman");
  absl::StatusOr<std::string> runsc = FindRunsc();
  if (!runsc.ok()) {
    d.Report(Verdict::kFail, "runsc (gVisor)", std::string(runsc.status().message()),
             "apt-get install runsc");
  } else {
    program("runsc (gVisor)", {*runsc, "--version"},
            absl::StrCat(*runsc, " does not run; reinstall runsc or fix ", kRunscEnv));
  }
  program("runc", {"runc", "--version"}, "apt-get install runc");
  program("fuse-overlayfs", {"fuse-overlayfs", "--version"}, "apt-get install fuse-overlayfs");
  program("slirp4netns", {"slirp4netns", "--version"}, "apt-get install slirp4netns");
  program("mmdebstrap", {"mmdebstrap", "--version"}, "apt-get install mmdebstrap");
  // The session registry identifies each `lazaret run` by a pidfd the
  // kernel takes from the socket (SO_PEERPIDFD, Linux 6.5): asked of a real
  // socket pair, not guessed from the version.
  {
    int sv[2];
    int pidfd = -1;
    socklen_t len = sizeof(pidfd);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      d.Report(Verdict::kFail, "kernel", absl::StrCat("socketpair: ", strerror(errno)), "");
    } else {
      if (getsockopt(sv[0], SOL_SOCKET, kSoPeerPidfd, &pidfd, &len) == 0 && pidfd >= 0) {
        d.Report(Verdict::kOk, "kernel", "SO_PEERPIDFD (session registry)");
        close(pidfd);
      } else {
        d.Report(Verdict::kFail, "kernel",
                 absl::StrCat("no SO_PEERPIDFD (", strerror(errno),
                              "): the session registry needs Linux 6.5 or newer"),
                 "boot a newer kernel (Debian 12: the bookworm-backports linux-image)");
      }
      close(sv[0]);
      close(sv[1]);
    }
  }
  absl::StatusOr<std::string> git = VersionOf({"git", "--version"});
  if (!git.ok()) {
    d.Report(Verdict::kFail, "git", std::string(git.status().message()), "apt-get install git");
  } else if (!GitAtLeast(*git, 2, 35)) {
    d.Report(Verdict::kFail, "git", absl::StrCat(*git, " (2.35 or newer needed)"),
             "install a newer git (Debian 12 has 2.39)");
  } else {
    d.Report(Verdict::kOk, "git", *git);
  }

  // Rootless prerequisites.
  if (rootless) {
    for (const char* f : {"/etc/subuid", "/etc/subgid"}) {
      if (HasSubordinateRange(f, user, uid)) {
        d.Report(Verdict::kOk, f, absl::StrCat("range for ", user));
      } else {
        d.Report(Verdict::kFail, f, absl::StrCat("no range of 65536 ids for ", user),
                 absl::StrCat("as root: usermod --add-subuids 100000-165535 --add-subgids "
                              "100000-165535 ",
                              user, " (pick a free range)"));
      }
    }
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    struct stat st {};
    if (xdg == nullptr || stat(xdg, &st) != 0 || st.st_uid != uid) {
      d.Report(
          Verdict::kFail, "XDG_RUNTIME_DIR",
          xdg == nullptr ? "not set" : absl::StrCat(xdg, " missing or not yours"),
          absl::StrCat("log in through PAM/systemd, or: mkdir -m 0700 /run/user/", uid, "; chown ",
                       user, " /run/user/", uid, "; export XDG_RUNTIME_DIR=/run/user/", uid));
    } else {
      d.Report(Verdict::kOk, "XDG_RUNTIME_DIR", xdg);
    }
  } else {
    d.Report(Verdict::kOk, "subuid/subgid", "not needed (rootful)");
  }
  CheckDevice(&d, "/dev/fuse", 10, 229, rootless, "fuse-overlayfs needs it");
  CheckDevice(&d, "/dev/net/tun", 10, 200, rootless, "slirp4netns needs it");

  // Sessions run podman with Lazaret's own containers.conf (podman.h):
  // nothing in these files reaches a sandbox or sidecar, and its
  // default_ulimits = [] gives containers podman's own limits, which a root
  // without CAP_SYS_RESOURCE can set (PLATFORM.md).
  {
    const std::vector<std::string> ignored = IgnoredContainersConfs(rootless);
    d.Report(Verdict::kOk, "containers.conf",
             ignored.empty()
                 ? std::string("sessions use Lazaret's own (<runtime dir>/podman/containers.conf)")
                 : absl::StrCat("sessions use Lazaret's own (<runtime dir>/podman/"
                                "containers.conf), not ",
                                absl::StrJoin(ignored, ", ")));
  }

  if (have_podman) {
    absl::StatusOr<std::string> driver =
        VersionOf({"podman", "info", "--format", "{{.Store.GraphDriverName}}"});
    if (!driver.ok()) {
      d.Report(Verdict::kFail, "podman storage", std::string(driver.status().message()),
               "run `podman info` to see why podman cannot start");
    } else if (*driver == "vfs") {
      d.Report(Verdict::kWarn, "podman storage",
               "vfs driver: every container start copies the image (~6 s)",
               "apt-get install containers-storage, then `podman system reset` as this user "
               "(deletes this user's containers and images)");
    } else {
      d.Report(Verdict::kOk, "podman storage", *driver);
    }
    // Images.
    if (ImageExists(kDefaultSandboxImage)) {
      d.Report(Verdict::kOk, "sandbox image", kDefaultSandboxImage);
    } else {
      d.Report(Verdict::kFail, "sandbox image", absl::StrCat(kDefaultSandboxImage, " missing"),
               "lazaret image build sandbox");
    }
    if (!ImageExists(kSidecarImage)) {
      d.Report(Verdict::kFail, "sidecar image", absl::StrCat(kSidecarImage, " missing"),
               "lazaret image build sidecar");
    } else {
      absl::StatusOr<std::string> want = SidecarImageTag(ctx.libexec_dir);
      absl::StatusOr<std::string> have =
          VersionOf({"podman", "image", "inspect", "--format",
                     absl::StrCat("{{index .Labels \"", kImageInputsLabel, "\"}}"), kSidecarImage});
      if (want.ok() && have.ok() && !absl::EndsWith(*want, have->substr(0, 16))) {
        d.Report(Verdict::kWarn, "sidecar image",
                 absl::StrCat(kSidecarImage, " was built from another lazaret-netrouter"),
                 "lazaret image build sidecar");
      } else {
        d.Report(Verdict::kOk, "sidecar image", kSidecarImage);
      }
    }
  }

  // The service set (not a host problem; `lazaret run` needs it up).
  if (CheckHealth(SocketPath(ctx.runtime_dir, "configd"), 1000).ok()) {
    d.Report(Verdict::kOk, "services", absl::StrCat("up (", ctx.runtime_dir, ")"));
  } else {
    d.Report(Verdict::kWarn, "services", "not running", "lazaret up");
  }

  if (d.failures > 0) {
    std::printf("%d problem%s found.\n", d.failures, d.failures == 1 ? "" : "s");
    return 1;
  }
  std::printf("This host can run Lazaret%s.\n", d.warnings > 0 ? " (see the warnings above)" : "");
  return 0;
}

}  // namespace lazaret::cli
