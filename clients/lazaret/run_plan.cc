#include "clients/lazaret/run_plan.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "clients/lazaret/git_shadow.h"
#include "clients/lazaret/session.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::config::v1;

// Bounded by podman's env file reader (one bufio.Scanner line, 64 KiB).
constexpr size_t kMaxEnvValue = 32 * 1024;

bool IsEnvName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!(alpha || (i > 0 && c >= '0' && c <= '9'))) return false;
  }
  return true;
}

// A container path Lazaret accepts as a mount target: absolute, no "..",
// "." or empty segments beyond the leading slash.
bool IsCleanAbsolute(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  if (p == "/") return true;
  for (absl::string_view seg : absl::StrSplit(p.substr(1), '/')) {
    if (seg.empty() || seg == "." || seg == "..") return false;
  }
  return true;
}

bool IsAtOrUnder(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, absl::StrCat(dir, "/"));
}

void AddLabels(std::vector<std::string>* argv, const std::string& profile, const std::string& id,
               const char* role, const std::string& runtime_dir) {
  argv->push_back(absl::StrCat("--label=", kLabelProfile, "=", profile));
  argv->push_back(absl::StrCat("--label=", kLabelSession, "=", id));
  argv->push_back(absl::StrCat("--label=", kLabelRole, "=", role));
  argv->push_back(absl::StrCat("--label=", kLabelRuntimeDir, "=", runtime_dir));
}

// --cap-drop=all, then exactly `caps`: the set starts empty whatever
// podman's or containers.conf's default_capabilities say.
void AddCapabilities(std::vector<std::string>* argv, absl::Span<const char* const> caps) {
  argv->push_back("--cap-drop=all");
  argv->push_back(absl::StrCat("--cap-add=", absl::StrJoin(caps, ",")));
}

}  // namespace

std::vector<std::string> PinnedIsolationArgs(bool rootless) {
  std::vector<std::string> a = {
      "--pull=never",
      // containers.conf env_host / http_proxy: nothing of the host's
      // environment; the session's env comes only from its env file.
      "--env-host=false",
      "--http-proxy=false",
      // ipcns, pidns, utsns, cgroupns: each container its own.
      "--ipc=private",
      "--pid=private",
      "--uts=private",
      "--cgroupns=private",
      // init: no catatonit from the host as PID 1.
      "--init=false",
      absl::StrCat("--umask=", kSandboxUmask),
      absl::StrCat("--shm-size=", kShmSize),
      "--security-opt=no-new-privileges",
      "--userns=host",
  };
  // cgroups = "disabled" in a containers.conf would silently drop the pids
  // and memory limits. Rootless podman on this cgroup v1 host has no
  // cgroups to enable (docs/operations.md).
  if (!rootless) a.push_back("--cgroups=enabled");
  return a;
}

absl::StatusOr<RunArgs> ParseRunArgs(const std::vector<std::string>& args, const std::string& cwd) {
  RunArgs out;
  size_t i = 0;
  auto value = [&](const std::string& a, const char* flag,
                   std::string* into) -> absl::StatusOr<bool> {
    const std::string eq = absl::StrCat(flag, "=");
    if (a == flag) {
      if (i + 1 >= args.size() || args[i + 1].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      *into = args[++i];
      return true;
    }
    if (absl::StartsWith(a, eq)) {
      *into = a.substr(eq.size());
      if (into->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      return true;
    }
    return false;
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.command.assign(args.begin() + i + 1, args.end());
      return out;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a == "--worktree") {
      out.worktree = true;
      continue;
    }
    if (a == "--dry-run") {
      out.dry_run = true;
      continue;
    }
    auto c = value(a, "--config", &out.explicit_config);
    if (!c.ok()) return c.status();
    if (*c) {
      if (out.explicit_config[0] != '/')
        out.explicit_config = absl::StrCat(cwd, "/", out.explicit_config);
      continue;
    }
    auto b = value(a, "--branch", &out.branch);
    if (!b.ok()) return b.status();
    if (*b) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown option '", a, "' (options go before the profile; a command goes after --)"));
  }
  if (i < args.size()) {
    out.profile = args[i++];
    if (i < args.size() && args[i] == "--") ++i;
    out.command.assign(args.begin() + i, args.end());
  }
  return out;
}

absl::Status CheckEnvSetting(const EnvSetting& e) {
  if (!IsEnvName(e.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable name '", absl::CHexEscape(e.name),
                     "' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"));
  }
  if (e.value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value of ", e.name,
                     " contains a newline, carriage return or NUL, which an env file "
                     "cannot carry"));
  }
  if (e.value.size() > kMaxEnvValue) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value of ", e.name, " is longer than ", kMaxEnvValue, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EnvSetting>> ResolveProfileEnv(const pb::ResolvedProfile& profile,
                                                          const HostEnvLookup& lookup) {
  std::vector<EnvSetting> out;
  for (const pb::EnvVar& v : profile.env()) {
    const std::string key = absl::StrCat("profiles.", profile.name(), ".env.", v.name());
    EnvSetting e{v.name(), "", /*secret=*/true};
    switch (v.value_case()) {
      case pb::EnvVar::kLiteral:
        e.value = v.literal();
        break;
      case pb::EnvVar::kHostVar: {
        std::optional<std::string> got = lookup(v.host_var());
        if (!got.has_value()) {
          return absl::FailedPreconditionError(absl::StrCat(
              key, " = \"env:", v.host_var(), "\" pulls ", v.host_var(),
              " from lazaret's environment, but ", v.host_var(), " is not set. Set it (export ",
              v.host_var(), "=...) or remove the entry; Lazaret never passes an empty secret."));
        }
        if (got->empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              key, " = \"env:", v.host_var(), "\" pulls ", v.host_var(),
              " from lazaret's environment, but ", v.host_var(),
              " is empty. Set it to a value or remove the entry; Lazaret never passes an empty "
              "secret."));
        }
        e.value = *std::move(got);
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat(key, " has no value"));
    }
    if (absl::Status s = CheckEnvSetting(e); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(key, ": ", s.message()));
    }
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::string> EnvFileText(const std::vector<EnvSetting>& env) {
  std::string out;
  for (const EnvSetting& e : env) {
    if (absl::Status s = CheckEnvSetting(e); !s.ok()) return s;
    absl::StrAppend(&out, e.name, "=", e.value, "\n");
  }
  return out;
}

std::string EscapePersistentPath(const std::string& container_path) {
  std::string p = container_path;
  while (!p.empty() && p[0] == '/') p.erase(0, 1);
  std::string out;
  for (unsigned char c : p) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  // "." and ".." as a whole name are never produced: a clean path has no
  // such segment, and a single segment "." would have been refused.
  if (out.empty() || out == "." || out == "..") out = absl::StrCat("%2E", out);
  return out;
}

absl::StatusOr<std::vector<BindMount>> PlanPersistentDirs(
    const std::string& profile_dir, const google::protobuf::RepeatedPtrField<std::string>& dirs) {
  static const char* const kHidesImage[] = {"/",    "/usr",   "/etc",   "/var",    "/bin", "/sbin",
                                            "/lib", "/lib32", "/lib64", "/libx32", "/boot"};
  static const char* const kReservedTrees[] = {"/workspace", "/run/lazaret", "/proc", "/sys",
                                               "/dev"};
  std::vector<BindMount> out;
  for (const std::string& d : dirs) {
    const std::string key = absl::StrCat("persistent_dirs entry '", d, "'");
    if (!IsCleanAbsolute(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, " must be a clean absolute path inside the container"));
    }
    for (const char* h : kHidesImage) {
      if (d == h) {
        return absl::FailedPreconditionError(absl::StrCat(
            key,
            ": for now a persistent directory is an empty host directory bound over the "
            "path, which would hide the image's ",
            d,
            " and break the sandbox. Keeping image content (fuse-overlayfs persistence) comes "
            "later; persist a directory the image leaves empty instead (e.g. /root/.cache)."));
      }
    }
    for (const char* r : kReservedTrees) {
      if (IsAtOrUnder(d, r)) {
        return absl::FailedPreconditionError(absl::StrCat(
            key, ": ", r, " belongs to Lazaret or the kernel and cannot be persisted"));
      }
    }
    out.push_back(BindMount{
        absl::StrCat(profile_dir, "/", kSandboxPersistDirName, "/", EscapePersistentPath(d)), d,
        /*read_only=*/false, /*selinux_shared=*/true});
  }
  return out;
}

std::vector<BindMount> ProfileVolumes(const pb::ResolvedProfile& profile) {
  std::vector<BindMount> out;
  for (const pb::Volume& v : profile.volumes()) {
    BindMount b;
    b.host = v.host();
    b.container = v.container();
    b.read_only = v.access() != pb::MOUNT_ACCESS_READ_WRITE;
    b.selinux_shared = v.selinux() == pb::SELINUX_LABEL_SHARED;
    b.selinux_private = v.selinux() == pb::SELINUX_LABEL_PRIVATE;
    out.push_back(std::move(b));
  }
  return out;
}

absl::Status CheckNoSymlinkComponents(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not an absolute path"));
  }
  std::string prefix;
  for (absl::string_view seg : absl::StrSplit(path.substr(1), '/', absl::SkipEmpty())) {
    absl::StrAppend(&prefix, "/", seg);
    struct stat st {};
    if (lstat(prefix.c_str(), &st) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, ": ", std::strerror(errno), " (mount source ", path, ")"));
    }
    if (S_ISLNK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "mount source ", path, " changed since the configuration was resolved: ", prefix,
          " is now a symlink. Refusing to mount it."));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> MountArgs(const Mount& mount) {
  if (const auto* b = std::get_if<BindMount>(&mount)) {
    if (b->host.empty() || b->host[0] != '/' || !IsCleanAbsolute(b->container)) {
      return absl::InvalidArgumentError(absl::StrCat("mount ", b->host, " -> ", b->container,
                                                     ": both paths must be absolute and clean"));
    }
    if (b->host.find(':') != std::string::npos || b->container.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("mount ", b->host, " -> ", b->container,
                       ": a path with ':' cannot be passed to podman -v; rename it"));
    }
    std::string opts = b->read_only ? "ro" : "rw";
    if (b->selinux_private) {
      opts += ",Z";
    } else if (b->selinux_shared) {
      opts += ",z";
    }
    return std::vector<std::string>{
        absl::StrCat("--volume=", b->host, ":", b->container, ":", opts)};
  }
  const auto& t = std::get<TmpfsMount>(mount);
  if (!IsCleanAbsolute(t.container) || t.container.find(',') != std::string::npos ||
      t.container.find('=') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("tmpfs mount at '", t.container, "': not a path podman --mount accepts"));
  }
  for (char c : t.mode) {
    if (c < '0' || c > '7') return absl::InvalidArgumentError("tmpfs mode must be octal");
  }
  return std::vector<std::string>{
      absl::StrCat("--mount=type=tmpfs,destination=", t.container, ",tmpfs-mode=", t.mode)};
}

std::vector<std::string> SidecarArgv(const SidecarSpec& s) {
  std::vector<std::string> a = {"podman", "run", "--detach",
                                absl::StrCat("--name=", SidecarName(s.session_id))};
  AddLabels(&a, s.profile, s.session_id, kRoleSidecar, s.runtime_dir);
  a.insert(a.end(), {
                        // By path: a containers.conf runtimes table cannot
                        // swap the binary behind the name "runc".
                        absl::StrCat("--runtime=", s.runc_path),
                        // One topology rootful and rootless; the host's
                        // loopback is not reachable through it, whatever
                        // containers.conf network_cmd_options say.
                        "--network=slirp4netns:allow_host_loopback=false",
                        "--read-only",
                        "--read-only-tmpfs=false",
                    });
  AddCapabilities(&a, kSidecarCapabilities);
  for (auto& f : PinnedIsolationArgs(s.rootless)) a.push_back(std::move(f));
  if (!s.rootless) {
    a.push_back(absl::StrCat("--pids-limit=", kSidecarPidsLimit));
    a.push_back(absl::StrCat("--memory=", kSidecarMemory));
  }
  a.push_back(absl::StrCat("--volume=", s.router_host_dir, ":", kSidecarRouterDir, ":rw,z"));
  a.push_back(s.image);
  a.push_back(absl::StrCat("--runtime-dir=", kSidecarRouterDir));
  a.push_back(absl::StrCat("--socket=", kSidecarRouterSocket));
  return a;
}

std::vector<std::string> RunscGlobalFlags(bool rootless) {
  std::vector<std::string> f = {"--runtime-flag=network=host"};
  if (rootless) f.push_back("--runtime-flag=ignore-cgroups");
  return f;
}

absl::StatusOr<std::vector<std::string>> SandboxArgv(const SandboxSpec& s) {
  // podman takes --runtime-flag only as a global option, and does not store
  // it in the container: it must be on every run/start of a runsc container.
  std::vector<std::string> a = {"podman"};
  for (auto& f : RunscGlobalFlags(s.rootless)) a.push_back(std::move(f));
  // No --rm: the teardown removes the sandbox together with its sidecar in
  // one call, and until then `podman inspect` can tell whether it ever
  // started (a runtime that fails leaves it "created").
  a.insert(a.end(), {"run", absl::StrCat("--name=", SandboxName(s.session_id))});
  AddLabels(&a, s.profile, s.session_id, kRoleSandbox, s.runtime_dir);
  a.insert(a.end(), {
                        absl::StrCat("--runtime=", s.runsc_path),
                        absl::StrCat("--network=container:", SidecarName(s.session_id)),
                    });
  AddCapabilities(&a, kSandboxCapabilities);
  for (auto& f : PinnedIsolationArgs(s.rootless)) a.push_back(std::move(f));
  a.push_back(absl::StrCat("--ulimit=nproc=", kSandboxTaskLimit, ":", kSandboxTaskLimit));
  if (!s.rootless) {
    a.push_back(absl::StrCat("--pids-limit=", kSandboxPidsLimit));
    a.push_back(absl::StrCat("--memory=", kSandboxMemory));
    a.push_back(absl::StrCat("--memory-swap=", kSandboxMemory));
  }
  // The agent's terminal transcript is never written to podman's storage.
  a.push_back("--log-driver=none");
  a.push_back("--interactive");
  if (s.tty) a.push_back("--tty");
  // No detach keys: Ctrl-P is a shell key, and a detached sandbox would
  // outlive the session that owns it.
  a.push_back("--detach-keys=");
  a.push_back(absl::StrCat("--env-file=", s.env_file));
  a.push_back(absl::StrCat("--workdir=", kSandboxWorkspace));
  for (const Mount& m : s.mounts) {
    auto args = MountArgs(m);
    if (!args.ok()) return args.status();
    a.insert(a.end(), args->begin(), args->end());
  }
  auto init = MountArgs(BindMount{s.sandbox_init_host, kSandboxInitPath, true, false});
  if (!init.ok()) return init.status();
  a.insert(a.end(), init->begin(), init->end());
  a.push_back(absl::StrCat("--entrypoint=", kSandboxInitPath));
  a.push_back(s.image);
  a.insert(a.end(), s.init_args.begin(), s.init_args.end());
  a.push_back("--");
  a.insert(a.end(), s.command.begin(), s.command.end());
  return a;
}

}  // namespace lazaret::cli
