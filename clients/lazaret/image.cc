#include "clients/lazaret/image.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/cli.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/podman.h"
#include "clients/lazaret/session.h"
#include "clients/lazaret/subprocess.h"
#include "services/common/sha256.h"
#include "services/common/status_util.h"
#include "services/common/constants.h"

#ifndef LAZARET_SOURCE_IMAGES_DIR
#define LAZARET_SOURCE_IMAGES_DIR ""
#endif

namespace lazaret::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Bumped when the build changes in a way the hashed inputs do not show.
constexpr char kSandboxRecipe[] = "lazaret-sandbox-recipe-1";
constexpr char kSidecarRecipe[] = "lazaret-sidecar-recipe-1";
constexpr char kSidecarBinary[] = "lazaret-netrouter";
// How many hex digits of the hash go into a tag.
constexpr size_t kTagHashLength = 16;

constexpr char kImageUsage[] =
    "usage: lazaret image build [sandbox|sidecar|all] [--mirror URL] [--force]\n"
    "       lazaret image tag sandbox|sidecar [--mirror URL]\n";

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsDebianPackageName(const std::string& n) {
  if (n.size() < 2 || !(absl::ascii_islower(n[0]) || absl::ascii_isdigit(n[0]))) return false;
  for (char c : n) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '+' || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

// A Debian archive URI the sandbox image can be built from.
bool UsableMirror(const std::string& uri, const std::vector<std::string>& suites) {
  if (!absl::StartsWith(uri, "http://") && !absl::StartsWith(uri, "https://")) return false;
  if (absl::StrContains(uri, "security") || absl::StrContains(uri, "ubuntu")) return false;
  for (const auto& s : suites) {
    if (!s.empty() && s.find('-') == std::string::npos && s.find('/') == std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string TrimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// "deb [opts] URI SUITE COMP..." lines.
std::string MirrorFromListFile(const std::string& text) {
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    std::string line(absl::StripAsciiWhitespace(raw.substr(0, raw.find('#'))));
    if (!absl::StartsWith(line, "deb ") && !absl::StartsWith(line, "deb\t")) continue;
    line = line.substr(4);
    if (auto lb = line.find('['); lb != std::string::npos && lb < 2) {
      const auto rb = line.find(']');
      if (rb == std::string::npos) continue;
      line = line.substr(rb + 1);
    }
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() < 2) continue;
    if (UsableMirror(f[0], {f[1]})) return TrimSlash(f[0]);
  }
  return "";
}

// deb822 paragraphs with Types/URIs/Suites.
std::string MirrorFromSourcesFile(const std::string& text) {
  for (absl::string_view para : absl::StrSplit(text, "\n\n")) {
    std::vector<std::string> types, uris, suites;
    bool enabled = true;
    for (absl::string_view raw : absl::StrSplit(para, '\n')) {
      if (absl::StartsWith(raw, "#")) continue;
      const auto colon = raw.find(':');
      if (colon == absl::string_view::npos) continue;
      const std::string key =
          absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw.substr(0, colon)));
      const std::string value(absl::StripAsciiWhitespace(raw.substr(colon + 1)));
      std::vector<std::string> words =
          absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (key == "types") types = words;
      if (key == "uris") uris = words;
      if (key == "suites") suites = words;
      if (key == "enabled" && absl::AsciiStrToLower(value) == "no") enabled = false;
    }
    if (!enabled || std::find(types.begin(), types.end(), "deb") == types.end()) continue;
    for (const auto& u : uris) {
      if (UsableMirror(u, suites)) return TrimSlash(u);
    }
  }
  return "";
}

std::string ShortHash(const std::string& hex) { return hex.substr(0, kTagHashLength); }

absl::Status CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  LAZ_ASSIGN_OR_RETURN(std::string bytes, ReadFile(from));
  const int fd = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(absl::StrCat("creating ", to), errno);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      const int e = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("writing ", to), e);
    }
    off += static_cast<size_t>(n);
  }
  fchmod(fd, mode);
  close(fd);
  return absl::OkStatus();
}

absl::Status MakeParentDirs(const std::string& root, const std::string& rel_file) {
  std::string path = root;
  std::vector<std::string> parts = absl::StrSplit(rel_file, '/', absl::SkipEmpty());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    absl::StrAppend(&path, "/", parts[i]);
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", path), errno);
    }
  }
  return absl::OkStatus();
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
    if (!path_.empty()) (void)RemoveSessionTree(path_);
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

std::string MirrorFor(const std::string& override_mirror) {
  if (!override_mirror.empty()) return TrimSlash(override_mirror);
  if (const char* m = std::getenv(kMirrorEnv); m != nullptr && *m != '\0') return TrimSlash(m);
  return DetectDebianMirror();
}

absl::StatusOr<std::vector<std::string>> SandboxPackages() {
  const std::string path = absl::StrCat(FindImagesDir(), "/sandbox/packages.txt");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(
        absl::StrCat("the sandbox image's package list ", path, " is missing (set ", kImagesDirEnv,
                     " to the deploy/images directory of a Lazaret checkout)"));
  }
  return ParsePackageList(*text);
}

absl::Status BuildSandbox(const std::string& mirror_override, bool force) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> packages, SandboxPackages());
  const std::string mirror = MirrorFor(mirror_override);
  const std::string hash = SandboxInputsHash(packages, mirror);
  const std::string tag =
      absl::StrCat(kSandboxRepository, ":", kSandboxSuite, "-", ShortHash(hash));
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
  const std::string tag = absl::StrCat(kSidecarRepository, ":", ShortHash(hash));
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
  if (mkdir(root.c_str(), 0755) != 0) return ErrnoStatus("mkdir", errno);
  Step("sidecar", 1, 3,
       absl::StrCat("collect /", kSidecarBinary, " and ", files.size() - 1,
                    " shared objects (ldd)"));
  for (const ImageFile& f : files) {
    LAZ_RETURN_IF_ERROR(MakeParentDirs(root, f.dest));
    LAZ_RETURN_IF_ERROR(CopyFile(f.source, absl::StrCat(root, f.dest), 0755));
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

}  // namespace

std::string FindImagesDir() {
  if (const char* v = std::getenv(kImagesDirEnv); v != nullptr && *v == '/') return v;
  const std::string installed = absl::StrCat(SelfDir(), "/../share/lazaret/images");
  if (access(absl::StrCat(installed, "/sandbox/packages.txt").c_str(), R_OK) == 0) {
    return installed;
  }
  return LAZARET_SOURCE_IMAGES_DIR;
}

absl::StatusOr<std::vector<std::string>> ParsePackageList(const std::string& text) {
  std::vector<std::string> out;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::string line(absl::StripAsciiWhitespace(raw.substr(0, raw.find('#'))));
    if (line.empty()) continue;
    if (!IsDebianPackageName(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("packages.txt line ", line_no, ": '", line, "' is not a package name"));
    }
    out.push_back(line);
  }
  if (out.empty()) return absl::InvalidArgumentError("packages.txt lists no package");
  return out;
}

std::string DetectDebianMirror(const std::string& apt_etc_dir) {
  if (auto t = ReadFile(absl::StrCat(apt_etc_dir, "/sources.list")); t.ok()) {
    if (std::string m = MirrorFromListFile(*t); !m.empty()) return m;
  }
  const std::string d = absl::StrCat(apt_etc_dir, "/sources.list.d");
  std::vector<std::string> names;
  if (DIR* dir = opendir(d.c_str()); dir != nullptr) {
    while (dirent* e = readdir(dir)) names.emplace_back(e->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    auto t = ReadFile(absl::StrCat(d, "/", n));
    if (!t.ok()) continue;
    std::string m;
    if (absl::EndsWith(n, ".list")) m = MirrorFromListFile(*t);
    if (absl::EndsWith(n, ".sources")) m = MirrorFromSourcesFile(*t);
    if (!m.empty()) return m;
  }
  return kDefaultDebianMirror;
}

std::vector<std::string> SandboxBuildArgv(const std::vector<std::string>& packages,
                                          const std::string& mirror, const std::string& out_tar) {
  return {
      "mmdebstrap",
      "--variant=minbase",
      absl::StrCat("--include=", absl::StrJoin(packages, ",")),
      "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/info/*",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      "--dpkgopt=path-include=/usr/share/locale/locale.alias",
      "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-include=/usr/share/doc/*/copyright",
      // podman bind-mounts its own over both at run time; the build host's
      // must not be in the image.
      "--customize-hook=rm -f \"$1/etc/hostname\" \"$1/etc/resolv.conf\"",
      kSandboxSuite,
      out_tar,
      mirror,
  };
}

std::string SandboxInputsHash(const std::vector<std::string>& packages, const std::string& mirror) {
  Sha256 h;
  h.Update(absl::StrCat(kSandboxRecipe, "\n"));
  for (const auto& a : SandboxBuildArgv(packages, mirror, "OUT.tar")) {
    h.Update(a);
    h.Update("\n");
  }
  return h.HexDigest();
}

absl::StatusOr<std::vector<ImageFile>> ParseLddOutput(const std::string& text) {
  std::vector<ImageFile> out;
  for (absl::string_view raw : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::string line(absl::StripAsciiWhitespace(raw));
    std::string path;
    if (const auto arrow = line.find("=>"); arrow != std::string::npos) {
      std::string rest(absl::StripAsciiWhitespace(line.substr(arrow + 2)));
      if (absl::StartsWith(rest, "not found")) {
        return absl::FailedPreconditionError(
            absl::StrCat("ldd: ", line.substr(0, arrow), " not found"));
      }
      path = rest.substr(0, rest.find(" ("));
    } else if (absl::StartsWith(line, "/")) {
      path = line.substr(0, line.find(" ("));  // the loader
    } else {
      continue;  // linux-vdso.so.1 and the like: not files
    }
    if (path.empty() || path[0] != '/') continue;
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) {
      return ErrnoStatus(absl::StrCat("resolving ", path), errno);
    }
    out.push_back(ImageFile{resolved, path});
  }
  return out;
}

absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter) {
  char resolved[PATH_MAX];
  if (realpath(netrouter.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        netrouter, " not found: build it (ninja lazaret-netrouter) or set LAZARET_LIBEXEC_DIR"));
  }
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured({"ldd", resolved}, std::chrono::seconds(60)));
  std::vector<ImageFile> files = {{resolved, absl::StrCat("/", kSidecarBinary)}};
  if (r.exit_code != 0) {
    if (absl::StrContains(r.out, "not a dynamic executable") ||
        absl::StrContains(r.err, "not a dynamic executable")) {
      return files;  // a static build needs nothing else
    }
    return absl::InternalError(absl::StrCat("ldd ", resolved, " failed: ", r.err));
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> libs, ParseLddOutput(r.out));
  for (auto& l : libs) {
    const bool dup = std::any_of(files.begin(), files.end(),
                                 [&](const ImageFile& f) { return f.dest == l.dest; });
    if (!dup) files.push_back(std::move(l));
  }
  std::sort(files.begin() + 1, files.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  return files;
}

absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files) {
  Sha256 h;
  h.Update(absl::StrCat(kSidecarRecipe, "\n"));
  std::vector<ImageFile> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  for (const ImageFile& f : sorted) {
    LAZ_ASSIGN_OR_RETURN(std::string bytes, ReadFile(f.source));
    h.Update(absl::StrCat("file ", f.dest, " ", bytes.size(), "\n"));
    h.Update(bytes);
  }
  return h.HexDigest();
}

absl::StatusOr<std::string> SandboxImageTag(const std::string& mirror_override) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> packages, SandboxPackages());
  return absl::StrCat(kSandboxRepository, ":", kSandboxSuite, "-",
                      ShortHash(SandboxInputsHash(packages, MirrorFor(mirror_override))));
}

absl::StatusOr<std::string> SidecarImageTag(const std::string& libexec_dir) {
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> files,
                       SidecarFiles(absl::StrCat(libexec_dir, "/", kSidecarBinary)));
  LAZ_ASSIGN_OR_RETURN(std::string hash, SidecarInputsHash(files));
  return absl::StrCat(kSidecarRepository, ":", ShortHash(hash));
}

int CmdImage(const Context& ctx, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "build" && args[0] != "tag")) {
    std::fprintf(stderr, "%s", kImageUsage);
    return 2;
  }
  const bool build = args[0] == "build";
  std::string which = build ? "all" : "";
  std::string mirror;
  bool force = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "sandbox" || a == "sidecar" || (build && a == "all")) {
      which = a;
    } else if (a == "--force" && build) {
      force = true;
    } else if (a == "--mirror" && i + 1 < args.size()) {
      mirror = args[++i];
    } else if (absl::StartsWith(a, "--mirror=")) {
      mirror = a.substr(9);
    } else {
      std::fprintf(stderr, "lazaret image: unknown argument '%s'\n%s", a.c_str(), kImageUsage);
      return 2;
    }
  }
  if (!mirror.empty() && !absl::StartsWith(mirror, "http://") &&
      !absl::StartsWith(mirror, "https://")) {
    std::fprintf(stderr, "lazaret image: --mirror must be an http:// or https:// URL\n");
    return 2;
  }
  if (!build) {
    if (which.empty()) {
      std::fprintf(stderr, "%s", kImageUsage);
      return 2;
    }
    absl::StatusOr<std::string> tag =
        which == "sandbox" ? SandboxImageTag(mirror) : SidecarImageTag(ctx.libexec_dir);
    if (!tag.ok()) {
      std::fprintf(stderr, "lazaret image tag: %s\n", std::string(tag.status().message()).c_str());
      return 1;
    }
    std::printf("%s\n", tag->c_str());
    return 0;
  }
  if (!FindProgram("podman").ok()) {
    std::fprintf(stderr, "lazaret image build: podman is not installed (apt-get install podman)\n");
    return 1;
  }
  if (which == "sidecar" || which == "all") {
    if (absl::Status s = BuildSidecar(ctx.libexec_dir, force); !s.ok()) {
      std::fprintf(stderr, "lazaret image build: sidecar: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (which == "sandbox" || which == "all") {
    if (absl::Status s = BuildSandbox(mirror, force); !s.ok()) {
      std::fprintf(stderr, "lazaret image build: sandbox: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace lazaret::cli
