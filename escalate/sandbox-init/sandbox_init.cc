#include "escalate/sandbox-init/sandbox_init.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "services/common/fs/file.h"
#include "services/vocab/host_path.h"

namespace lazaret::sandbox_init {
namespace {

// The only names --git-link may create: the files git reads from the common
// dir that are not already mounted (config, packed-refs, info/, shallow).
constexpr const char* kAllowedLinks[] = {"config", "packed-refs", "info", "shallow"};

// A git index of a large repository is tens of MiB; more is not an index.
constexpr uint64_t kMaxIndexBytes = 1ull << 30;

// Setup failures are reported as one line; the code does not matter (the
// exit code is kSetupFailedExitCode whatever failed).
absl::Status Fail(absl::string_view message) { return absl::FailedPreconditionError(message); }

absl::Status Errno(const std::string& what) { return Fail(what + ": " + std::strerror(errno)); }

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

// The host index is bound read-only by the runner; it is read through
// descriptors all the same (never a FIFO or device node, never through a
// symlink as its last component).
absl::Status CopyIndex(const fs::DirFd& dir, const std::string& source) {
  absl::StatusOr<std::string> data = fs::ReadRegularFile(source, kMaxIndexBytes);
  if (!data.ok()) return Fail(absl::StrCat("reading the host index: ", data.status().message()));
  return fs::WriteFileAtomicAt(dir, "index", *data);
}

absl::Status ExpectDirectory(int dir, const char* name, const std::string& git_dir) {
  struct stat st {};
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
    return Fail(git_dir + "/" + name +
                " is missing: the sandbox was started without the Git Shadow mounts");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseArgs(const std::vector<std::string>& args, Options* options) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    const size_t eq = a.find('=');
    if (!StartsWith(a, "--") || eq == std::string::npos) {
      return Fail("unexpected argument '" + a + "' (options are --name=value, then --)");
    }
    const std::string name = a.substr(2, eq - 2);
    const std::string value = a.substr(eq + 1);
    if (name == "git-dir") {
      options->git_dir = value;
    } else if (name == "git-shadow") {
      options->git_shadow = value;
    } else if (name == "git-head") {
      options->git_head = value;
    } else if (name == "git-index") {
      options->git_index = value;
    } else if (name == "git-packed-refs") {
      options->git_packed_refs = value;
    } else if (name == "ca-host") {
      options->ca_host = value;
    } else if (name == "ca-bundle") {
      options->ca_bundle = value;
    } else if (name == "git-link") {
      bool allowed = false;
      for (const char* l : kAllowedLinks) allowed = allowed || value == l;
      if (!allowed) return Fail("--git-link=" + value + " is not a known git file");
      options->git_links.push_back(value);
    } else {
      return Fail("unknown option --" + name);
    }
  }
  options->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options->ca_host.empty() != options->ca_bundle.empty()) {
    return Fail("--ca-host and --ca-bundle go together");
  }
  if (!options->ca_bundle.empty()) {
    for (const std::string* p : {&options->ca_host, &options->ca_bundle}) {
      if (!vocab::IsCleanAbsolutePath(*p) || *p == "/") {
        return Fail("--ca-host and --ca-bundle must be clean absolute file paths");
      }
    }
    if (options->ca_bundle.rfind('/') == 0) {
      return Fail("--ca-bundle must be a file in a directory of its own (a tmpfs), not in /");
    }
  }
  if (options->git_dir.empty()) {
    if (!options->git_shadow.empty() || !options->git_head.empty() || !options->git_index.empty() ||
        !options->git_packed_refs.empty() || !options->git_links.empty()) {
      return Fail("--git-* options need --git-dir");
    }
    return absl::OkStatus();
  }
  for (const std::string* p : {&options->git_dir, &options->git_shadow}) {
    if (!vocab::IsCleanAbsolutePath(*p)) {
      return Fail("--git-dir and --git-shadow must be clean absolute paths");
    }
  }
  for (const std::string* p : {&options->git_index, &options->git_packed_refs}) {
    if (!p->empty() && !vocab::IsCleanAbsolutePath(*p)) {
      return Fail("--git-index and --git-packed-refs must be clean absolute paths");
    }
  }
  for (const auto& link : options->git_links) {
    if (link == "packed-refs" && !options->git_packed_refs.empty()) {
      return Fail("--git-link=packed-refs and --git-packed-refs exclude each other");
    }
  }
  const std::string& head = options->git_head;
  if (!StartsWith(head, "refs/heads/") || head.size() <= std::strlen("refs/heads/") ||
      head.find_first_of(" \t\r\n~^:?*[\\") != std::string::npos) {
    return Fail("--git-head must be a branch ref (refs/heads/...)");
  }
  return absl::OkStatus();
}

absl::Status BuildGitDir(const Options& options) {
  const std::string& g = options.git_dir;
  // Only ever write into a tmpfs: if the runner forgot to mount it, g is the
  // host's own .git seen through the read-write /workspace bind.
  struct statfs fs_info {};
  if (statfs(g.c_str(), &fs_info) != 0) return Errno("inspecting " + g);
  if (fs_info.f_type != TMPFS_MAGIC) {
    return Fail(g + " is not a tmpfs; refusing to write into what may be the host's .git");
  }
  absl::StatusOr<fs::DirFd> opened = fs::DirFd::Open(g);
  if (!opened.ok()) return Fail(opened.status().message());
  const fs::DirFd& dir = *opened;
  for (const char* mounted : {"refs", "objects"}) {
    if (absl::Status r = ExpectDirectory(dir.get(), mounted, g); !r.ok()) return r;
  }
  if (absl::Status r = fs::WriteFileAtomicAt(dir, "HEAD", "ref: " + options.git_head + "\n");
      !r.ok()) {
    return r;
  }
  for (const auto& name : options.git_links) {
    const std::string target = options.git_shadow + "/" + name;
    if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return Errno("replacing " + g + "/" + name);
    }
    if (symlinkat(target.c_str(), dir.get(), name.c_str()) != 0) {
      return Errno("linking " + g + "/" + name + " to " + target);
    }
  }
  if (!options.git_packed_refs.empty()) {
    unlinkat(dir.get(), "packed-refs", 0);
    if (symlinkat(options.git_packed_refs.c_str(), dir.get(), "packed-refs") != 0) {
      return Errno("linking " + g + "/packed-refs to " + options.git_packed_refs);
    }
  }
  if (mkdirat(dir.get(), "hooks", 0755) != 0 && errno != EEXIST) {
    return Errno("creating " + g + "/hooks");
  }
  if (!options.git_index.empty()) {
    if (absl::Status r = CopyIndex(dir, options.git_index); !r.ok()) return r;
  }
  return absl::OkStatus();
}

absl::Status BuildCaBundle(const Options& options, const std::vector<std::string>& image_bundles) {
  const std::string& target = options.ca_bundle;
  const size_t slash = target.rfind('/');
  const std::string dir_path = target.substr(0, slash);
  const std::string name = target.substr(slash + 1);
  // Only ever write into a tmpfs: without the runner's mount the directory
  // is the image's (or a persistent directory's), and the bundle must not
  // outlive the session there. Checked on the descriptor that is written
  // through.
  absl::StatusOr<fs::DirFd> dir = fs::DirFd::Open(dir_path);
  if (!dir.ok()) return Fail(dir.status().message());
  struct statfs fs_info {};
  if (fstatfs(dir->get(), &fs_info) != 0) return Errno("inspecting " + dir_path);
  if (fs_info.f_type != TMPFS_MAGIC) {
    return Fail(dir_path + " is not a tmpfs; refusing to write the CA bundle there");
  }
  absl::StatusOr<std::string> host = fs::ReadRegularFile(options.ca_host, kMaxCaBundleBytes);
  if (!host.ok()) {
    return Fail(absl::StrCat("reading the host's certificates ", options.ca_host, ": ",
                             host.status().message()));
  }
  // The image's bundle may be a symlink (Alpine's /etc/ssl/cert.pem): it is
  // the image's own file, read as the image's tools would read it; only a
  // regular file, never a FIFO or device.
  std::string bundle;
  for (const std::string& candidate : image_bundles) {
    const int fd = open(candidate.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    absl::StatusOr<std::string> data = absl::FailedPreconditionError("not a regular file");
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      data = fs::ReadAll(fd, kMaxCaBundleBytes, candidate);
    }
    close(fd);
    if (!data.ok()) continue;
    bundle = *std::move(data);
    break;
  }
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
  bundle += *host;
  return fs::WriteFileAtomicAt(*dir, name, bundle, 0644);
}

std::string DefaultShell() {
  if (const char* shell = std::getenv("SHELL");
      shell != nullptr && shell[0] == '/' && access(shell, X_OK) == 0) {
    return shell;
  }
  if (access("/bin/bash", X_OK) == 0) return "/bin/bash";
  return "/bin/sh";
}

int ExecCommand(const Options& options, std::string* error) {
  std::vector<std::string> command = options.command;
  if (command.empty()) command.push_back(DefaultShell());
  std::vector<char*> argv;
  for (auto& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  *error = command[0] + ": " + std::strerror(err);
  return err == ENOENT ? 127 : 126;
}

}  // namespace lazaret::sandbox_init
