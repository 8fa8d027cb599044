#include "clients/lazaret/images/build.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/images/debian_mirror.h"
#include "clients/lazaret/images/sandbox_inputs.h"
#include "clients/lazaret/images/sidecar_inputs.h"
#include "clients/lazaret/images/tags.h"
#include "services/common/constants.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/podman/host.h"
#include "services/spawn/subprocess.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::images {
namespace {

using Clock = std::chrono::steady_clock;

// Copies a host file (read as ReadHostFile does) into the image root,
// creating the directories it lands in.
absl::Status CopyIntoRoot(const fs::DirFd& root, const std::string& from, const std::string& dest,
                          mode_t mode) {
  LAZ_ASSIGN_OR_RETURN(std::string bytes, fs::ReadHostFile(from));
  const std::string rel = dest.substr(1);
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::MakeDirsAt(root, vocab::Dirname(rel), 0755));
  return fs::WriteFileAtomicAt(dir, vocab::Basename(rel), bytes, mode);
}

// A private scratch directory for one build; removed with everything in it.
class Scratch {
 public:
  static absl::StatusOr<Scratch> Create() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        absl::StrCat(base != nullptr && *base == '/' ? base : "/var/tmp", "/lazaret-image-XXXXXX");
    if (mkdtemp(tmpl.data()) == nullptr) return ErrnoStatus("mkdtemp", errno);
    return Scratch(tmpl);
  }
  Scratch(Scratch&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  Scratch& operator=(Scratch&&) = delete;
  ~Scratch() {
    if (!path_.empty()) (void)fs::RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  explicit Scratch(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

void Step(const char* image, int n, int of, const std::string& what) {
  std::printf("lazaret image build: %s [%d/%d] %s\n", image, n, of, what.c_str());
  std::fflush(stdout);
}

std::string Seconds(Clock::time_point since) {
  const double s =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count() / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

absl::Status Tag(const std::string& from, const std::string& to) {
  LAZ_ASSIGN_OR_RETURN(Captured r,
                       RunCaptured({"podman", "tag", from, to}, std::chrono::seconds(60)));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("podman tag ", from, " ", to, ": ", r.err));
  }
  return absl::OkStatus();
}

absl::Status Import(const std::string& tar, const std::string& tag,
                    const std::vector<std::string>& changes) {
  std::vector<std::string> argv = {"podman", "import", "--quiet"};
  for (const auto& c : changes) argv.push_back(absl::StrCat("--change=", c));
  argv.push_back(tar);
  argv.push_back(tag);
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured(argv, std::chrono::minutes(10)));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("podman import failed: ", r.err));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BuildSandbox(const std::string& images_dir, const std::string& mirror_override,
                          bool force) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> packages, SandboxPackages(images_dir));
  const std::string mirror = MirrorFor(mirror_override);
  const std::string hash = SandboxInputsHash(packages, mirror);
  const std::string tag = SandboxTag(hash);
  if (!force && ImageExists(tag)) {
    std::printf(
        "lazaret image build: sandbox %s is up to date (inputs unchanged); not rebuilding\n",
        tag.c_str());
    LAZ_RETURN_IF_ERROR(Tag(tag, kDefaultSandboxImage));
    std::printf("lazaret image build: sandbox tagged %s\n", kDefaultSandboxImage);
    return absl::OkStatus();
  }
  if (!FindProgram("mmdebstrap").ok()) {
    return absl::FailedPreconditionError(
        "mmdebstrap is not installed; run: apt-get install mmdebstrap (deploy/setup-host.sh "
        "installs it)");
  }
  LAZ_ASSIGN_OR_RETURN(Scratch scratch, Scratch::Create());
  const std::string tar = absl::StrCat(scratch.path(), "/rootfs.tar");
  const auto t0 = Clock::now();
  Step("sandbox", 1, 3,
       absl::StrCat("mmdebstrap: Debian ", kSandboxSuite, " minbase + ", packages.size(),
                    " packages from ", mirror, (Rootless() ? " (unshare mode)" : "")));
  LAZ_ASSIGN_OR_RETURN(int rc, RunInherited(SandboxBuildArgv(packages, mirror, tar)));
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("mmdebstrap failed (exit ", rc, "). Check the mirror (", mirror,
                     "; override with --mirror "
                     "URL or ",
                     kMirrorEnv, ")", Rootless() ? " and this user's /etc/subuid entry" : ""));
  }
  struct stat st {};
  stat(tar.c_str(), &st);
  Step("sandbox", 2, 3,
       absl::StrCat("podman import (", st.st_size / (1024 * 1024), " MB, built in ", Seconds(t0),
                    ")"));
  LAZ_RETURN_IF_ERROR(
      Import(tar, tag,
             {"CMD [\"/bin/bash\"]", absl::StrCat("LABEL ", kImageInputsLabel, "=", hash),
              "LABEL io.lazaret.image=sandbox"}));
  Step("sandbox", 3, 3, absl::StrCat("tag ", kDefaultSandboxImage));
  LAZ_RETURN_IF_ERROR(Tag(tag, kDefaultSandboxImage));
  std::printf("lazaret image build: sandbox %s built in %s\n", tag.c_str(), Seconds(t0).c_str());
  return absl::OkStatus();
}

absl::Status BuildSidecar(const std::string& libexec_dir, bool force) {
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> files,
                       SidecarFiles(absl::StrCat(libexec_dir, "/", kSidecarBinary)));
  LAZ_ASSIGN_OR_RETURN(std::string hash, SidecarInputsHash(files));
  const std::string tag = SidecarTag(hash);
  if (!force && ImageExists(tag)) {
    std::printf(
        "lazaret image build: sidecar %s is up to date (inputs unchanged); not rebuilding\n",
        tag.c_str());
    LAZ_RETURN_IF_ERROR(Tag(tag, kSidecarImage));
    std::printf("lazaret image build: sidecar tagged %s\n", kSidecarImage);
    return absl::OkStatus();
  }
  // Exactly the router and shared objects: no shell, no other program.
  for (const ImageFile& f : files) {
    const std::string base = f.dest.substr(f.dest.rfind('/') + 1);
    if (f.dest != absl::StrCat("/", kSidecarBinary) && !absl::StrContains(base, ".so")) {
      return absl::InternalError(absl::StrCat("refusing to put ", f.dest, " into the sidecar"));
    }
  }
  const auto t0 = Clock::now();
  LAZ_ASSIGN_OR_RETURN(Scratch scratch, Scratch::Create());
  const std::string root = absl::StrCat(scratch.path(), "/root");
  LAZ_ASSIGN_OR_RETURN(fs::DirFd root_dir, fs::MakeDirs(root, 0755));
  Step("sidecar", 1, 3,
       absl::StrCat("collect /", kSidecarBinary, " and ", files.size() - 1,
                    " shared objects (ldd)"));
  for (const ImageFile& f : files) {
    LAZ_RETURN_IF_ERROR(CopyIntoRoot(root_dir, f.source, f.dest, 0755));
  }
  const std::string tar = absl::StrCat(scratch.path(), "/sidecar.tar");
  LAZ_ASSIGN_OR_RETURN(Captured t,
                       RunCaptured({"tar", "--create", absl::StrCat("--file=", tar),
                                    absl::StrCat("--directory=", root), "--owner=0", "--group=0",
                                    "--numeric-owner", "--mtime=@0", "--sort=name", "."},
                                   std::chrono::minutes(5)));
  if (t.exit_code != 0) return absl::InternalError(absl::StrCat("tar failed: ", t.err));
  Step("sidecar", 2, 3, "podman import (FROM scratch)");
  LAZ_RETURN_IF_ERROR(Import(
      tar, tag,
      {absl::StrCat("ENTRYPOINT [\"/", kSidecarBinary, "\"]"),
       absl::StrCat("LABEL ", kImageInputsLabel, "=", hash), "LABEL io.lazaret.image=sidecar"}));
  Step("sidecar", 3, 3, absl::StrCat("tag ", kSidecarImage));
  LAZ_RETURN_IF_ERROR(Tag(tag, kSidecarImage));
  std::printf("lazaret image build: sidecar %s built in %s\n", tag.c_str(), Seconds(t0).c_str());
  return absl::OkStatus();
}

}  // namespace lazaret::cli::images
