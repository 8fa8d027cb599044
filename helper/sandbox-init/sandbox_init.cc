#include "helper/sandbox-init/sandbox_init.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lazaret::sandbox_init {
namespace {

// The only names --git-link may create: the files git reads from the common
// dir that are not already mounted (config, packed-refs, info/, shallow).
constexpr const char* kAllowedLinks[] = {"config", "packed-refs", "info", "shallow"};

// Closes a descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

bool IsAbsoluteCleanPath(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  for (char c : p) {
    if (static_cast<unsigned char>(c) < 0x20) return false;
  }
  return p.find("/../") == std::string::npos && p.find("/./") == std::string::npos &&
         p.find("//") == std::string::npos;
}

Result WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Result::Fail(Errno("write"));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Result::Ok();
}

// Creates `name` in `dir` through a temporary name and rename, never
// following a symlink.
Result WriteFileAt(int dir, const std::string& name, const std::string& contents) {
  const std::string tmp = "." + name + ".lazaret-init";
  unlinkat(dir, tmp.c_str(), 0);
  const int fd =
      openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Result::Fail(Errno("creating " + name));
  Fd out(fd);
  if (Result r = WriteAll(fd, contents.data(), contents.size()); !r.ok()) return r;
  if (renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    return Result::Fail(Errno("renaming " + name + " into place"));
  }
  return Result::Ok();
}

Result CopyIndex(int dir, const std::string& source) {
  const int in_fd = open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (in_fd < 0) return Result::Fail(Errno("opening the host index " + source));
  Fd in(in_fd);
  struct stat st {};
  if (fstat(in_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Result::Fail("the host index " + source + " is not a regular file");
  }
  std::string data;
  data.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(in_fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Result::Fail(Errno("reading the host index"));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return WriteFileAt(dir, "index", data);
}

Result ExpectDirectory(int dir, const char* name, const std::string& git_dir) {
  struct stat st {};
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
    return Result::Fail(git_dir + "/" + name +
                        " is missing: the sandbox was started without the Git Shadow mounts");
  }
  return Result::Ok();
}

}  // namespace

Result ParseArgs(const std::vector<std::string>& args, Options* options) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    const size_t eq = a.find('=');
    if (!StartsWith(a, "--") || eq == std::string::npos) {
      return Result::Fail("unexpected argument '" + a + "' (options are --name=value, then --)");
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
    } else if (name == "git-link") {
      bool allowed = false;
      for (const char* l : kAllowedLinks) allowed = allowed || value == l;
      if (!allowed) return Result::Fail("--git-link=" + value + " is not a known git file");
      options->git_links.push_back(value);
    } else {
      return Result::Fail("unknown option --" + name);
    }
  }
  options->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options->git_dir.empty()) {
    if (!options->git_shadow.empty() || !options->git_head.empty() || !options->git_index.empty() ||
        !options->git_packed_refs.empty() || !options->git_links.empty()) {
      return Result::Fail("--git-* options need --git-dir");
    }
    return Result::Ok();
  }
  for (const std::string* p : {&options->git_dir, &options->git_shadow}) {
    if (!IsAbsoluteCleanPath(*p)) {
      return Result::Fail("--git-dir and --git-shadow must be clean absolute paths");
    }
  }
  for (const std::string* p : {&options->git_index, &options->git_packed_refs}) {
    if (!p->empty() && !IsAbsoluteCleanPath(*p)) {
      return Result::Fail("--git-index and --git-packed-refs must be clean absolute paths");
    }
  }
  for (const auto& link : options->git_links) {
    if (link == "packed-refs" && !options->git_packed_refs.empty()) {
      return Result::Fail("--git-link=packed-refs and --git-packed-refs exclude each other");
    }
  }
  const std::string& head = options->git_head;
  if (!StartsWith(head, "refs/heads/") || head.size() <= std::strlen("refs/heads/") ||
      head.find_first_of(" \t\r\n~^:?*[\\") != std::string::npos) {
    return Result::Fail("--git-head must be a branch ref (refs/heads/...)");
  }
  return Result::Ok();
}

Result BuildGitDir(const Options& options) {
  const std::string& g = options.git_dir;
  // Only ever write into a tmpfs: if the runner forgot to mount it, g is the
  // host's own .git seen through the read-write /workspace bind.
  struct statfs fs {};
  if (statfs(g.c_str(), &fs) != 0) return Result::Fail(Errno("inspecting " + g));
  if (fs.f_type != TMPFS_MAGIC) {
    return Result::Fail(g + " is not a tmpfs; refusing to write into what may be the host's .git");
  }
  const int dir_fd = open(g.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return Result::Fail(Errno("opening " + g));
  Fd dir(dir_fd);
  for (const char* mounted : {"refs", "objects"}) {
    if (Result r = ExpectDirectory(dir.get(), mounted, g); !r.ok()) return r;
  }
  if (Result r = WriteFileAt(dir.get(), "HEAD", "ref: " + options.git_head + "\n"); !r.ok()) {
    return r;
  }
  for (const auto& name : options.git_links) {
    const std::string target = options.git_shadow + "/" + name;
    if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return Result::Fail(Errno("replacing " + g + "/" + name));
    }
    if (symlinkat(target.c_str(), dir.get(), name.c_str()) != 0) {
      return Result::Fail(Errno("linking " + g + "/" + name + " to " + target));
    }
  }
  if (!options.git_packed_refs.empty()) {
    unlinkat(dir.get(), "packed-refs", 0);
    if (symlinkat(options.git_packed_refs.c_str(), dir.get(), "packed-refs") != 0) {
      return Result::Fail(Errno("linking " + g + "/packed-refs to " + options.git_packed_refs));
    }
  }
  if (mkdirat(dir.get(), "hooks", 0755) != 0 && errno != EEXIST) {
    return Result::Fail(Errno("creating " + g + "/hooks"));
  }
  if (!options.git_index.empty()) {
    if (Result r = CopyIndex(dir.get(), options.git_index); !r.ok()) return r;
  }
  return Result::Ok();
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
