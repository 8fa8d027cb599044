#include "services/sessiond/session/podman.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/podman/host.h"
#include "services/spawn/subprocess.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/plan.h"
#include "services/common/fs/file.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

// podman's default search list for the runsc runtime (containers.conf).
// A TOML basic string.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

std::string ContainersConfText(const std::string& hooks_dir) {
  std::vector<std::string> caps;
  for (const char* c : kSandboxCapabilities) caps.push_back(TomlString(c));
  return absl::StrCat(
      "# Lazaret's containers.conf: podman reads only this file for a session\n"
      "# (CONTAINERS_CONF replaces /usr/share, /etc and ~/.config/containers).\n"
      "# Written by lazaret run; changes are overwritten. docs/operations.md.\n"
      "# Unset keys are podman's compiled-in defaults; the command line pins the\n"
      "# rest again (capabilities, namespaces, ulimits, umask, runtime paths).\n"
      "[containers]\n"
      "annotations = []\n"
      "base_hosts_file = \"\"\n"
      "cgroupns = \"private\"\n"
      "cgroups = \"enabled\"\n"
      "default_capabilities = [",
      absl::StrJoin(caps, ", "),
      "]\n"
      "default_sysctls = []\n"
      "default_ulimits = []\n"
      "devices = []\n"
      "dns_options = []\n"
      "dns_searches = []\n"
      "dns_servers = []\n"
      "env = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"]\n"
      "env_host = false\n"
      "http_proxy = false\n"
      "init = false\n"
      "ipcns = \"private\"\n"
      "label = true\n"
      "netns = \"private\"\n"
      "no_hosts = false\n"
      "pidns = \"private\"\n"
      "shm_size = \"",
      kShmSize,
      "\"\n"
      "tz = \"\"\n"
      "umask = \"",
      kSandboxUmask,
      "\"\n"
      "userns = \"host\"\n"
      "utsns = \"private\"\n"
      "volumes = []\n"
      "\n"
      "[engine]\n"
      "conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"]\n"
      "env = []\n"
      "hooks_dir = [",
      TomlString(hooks_dir),
      "]\n"
      "network_cmd_options = []\n"
      "no_pivot_root = false\n"
      "pull_policy = \"never\"\n");
}

std::string ContainersConfPath(const std::string& runtime_dir) {
  return absl::StrCat(runtime_dir, "/podman/containers.conf");
}

absl::StatusOr<std::string> InstallContainersConf(const std::string& runtime_dir) {
  const std::string dir = absl::StrCat(runtime_dir, "/podman");
  const std::string hooks = absl::StrCat(dir, "/hooks.d");
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(dir).status());
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(hooks).status());
  const std::string path = ContainersConfPath(runtime_dir);
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomic(path, ContainersConfText(hooks), 0600));
  if (setenv("CONTAINERS_CONF", path.c_str(), 1) != 0) {
    return ErrnoStatus("setting CONTAINERS_CONF", errno);
  }
  return path;
}

std::vector<ContainerInfo> ParseContainerLines(const std::string& text) {
  std::vector<ContainerInfo> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() != 8) continue;
    ContainerInfo c;
    c.id = f[0];
    c.name = f[1];
    c.state = f[2];
    if (!absl::SimpleAtoi(f[3], &c.created_unix)) c.created_unix = 0;
    c.session = f[4];
    c.profile = f[5];
    c.role = f[6];
    c.runtime_dir = f[7];
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::vector<ContainerInfo>> ListLazaretContainers() {
  const std::string format = absl::StrCat(
      "{{.ID}}\t{{.Names}}\t{{.ListContainer.State}}\t{{.Created.Unix}}\t{{index .Labels \"",
      kLabelSession, "\"}}\t{{index .Labels \"", kLabelProfile, "\"}}\t{{index .Labels \"",
      kLabelRole, "\"}}\t{{index .Labels \"", kLabelRuntimeDir, "\"}}");
  auto r = RunCaptured({"podman", "ps", "--all", "--no-trunc", "--filter",
                        absl::StrCat("label=", kLabelSession), "--format", format},
                       std::chrono::seconds(60));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat("podman ps failed: ", absl::StripTrailingAsciiWhitespace(r->err)));
  }
  return ParseContainerLines(r->out);
}

std::vector<std::string> RemoveArgv(const std::string& name, int grace_seconds,
                                    bool with_dependents) {
  std::vector<std::string> a = {"podman", "rm", "--force", "--ignore"};
  if (with_dependents) a.push_back("--depend");
  a.push_back(absl::StrCat("--time=", grace_seconds));
  a.push_back(name);
  return a;
}

absl::Status RemoveContainer(const std::string& name, int grace_seconds) {
  auto r = RunCaptured(RemoveArgv(name, grace_seconds, false), std::chrono::seconds(120));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("podman rm ", name, " failed: ", absl::StripTrailingAsciiWhitespace(r->err)));
  }
  return absl::OkStatus();
}

absl::Status RemoveWithDependents(const std::string& name, int grace_seconds) {
  auto r = RunCaptured(RemoveArgv(name, grace_seconds, true), std::chrono::seconds(120));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(absl::StrCat(
        "podman rm --depend ", name, " failed: ", absl::StripTrailingAsciiWhitespace(r->err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ContainerStatus(const std::string& name) {
  LAZ_ASSIGN_OR_RETURN(Captured state,
                       RunCaptured({"podman", "inspect", "--format", "{{.State.Status}}", name},
                                   std::chrono::seconds(30)));
  if (state.exit_code != 0) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(state.out));
}

absl::StatusOr<std::string> ImageId(const std::string& image) {
  LAZ_ASSIGN_OR_RETURN(Captured r,
                       RunCaptured({"podman", "image", "inspect", "--format", "{{.Id}}", image},
                                   std::chrono::seconds(60)));
  if (r.exit_code != 0) {
    const std::string err(absl::StripAsciiWhitespace(r.err));
    if (absl::StrContains(err, "image not known") || absl::StrContains(err, "no such image") ||
        absl::StrContains(err, "failed to find image")) {
      return absl::FailedPreconditionError(MissingImageHint(image));
    }
    return absl::InternalError(
        absl::StrCat("podman image inspect ", image, " failed (exit ", r.exit_code, "): ", err));
  }
  return std::string(absl::StripAsciiWhitespace(r.out));
}

std::string ContainerLogTail(const std::string& name, int lines) {
  auto r = RunCaptured({"podman", "logs", absl::StrCat("--tail=", lines), name},
                       std::chrono::seconds(20));
  if (!r.ok()) return "";
  return absl::StrCat(r->out, r->err);
}

}  // namespace lazaret::cli::session
