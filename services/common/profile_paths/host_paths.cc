#include "services/common/profile_paths/host_paths.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/vocab/host_path.h"

namespace lazaret::config {
namespace {

struct TokenInfo {
  absl::string_view name;
  Token token;
};
constexpr TokenInfo kTokens[] = {
    {"profile_name", kTokenProfileName},
    {"profile_dir", kTokenProfileDir},
    {"workspace_dir", kTokenWorkspaceDir},
    {"runtime_dir", kTokenRuntimeDir},
};

std::string AllowedTokenList(unsigned allowed) {
  std::vector<std::string> names;
  for (const TokenInfo& t : kTokens) {
    if ((allowed & t.token) != 0) names.push_back(absl::StrCat("{", t.name, "}"));
  }
  return names.empty() ? std::string("none") : absl::StrJoin(names, ", ");
}

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Walks `tmpl` once; with `values` null only checks syntax.
absl::StatusOr<std::string> Walk(absl::string_view tmpl, unsigned allowed,
                                 const ExpansionValues* values) {
  std::string out;
  size_t i = 0;
  if (!tmpl.empty() && tmpl[0] == '~') {
    if (tmpl.size() > 1 && tmpl[1] != '/') {
      return absl::InvalidArgumentError(
          "'~user' is not supported; only a leading \"~\" or \"~/\" means your home directory");
    }
    if (values != nullptr) {
      if (values->home.empty()) return absl::FailedPreconditionError("home directory unknown");
      out = values->home;
    }
    i = 1;
  }
  while (i < tmpl.size()) {
    const char c = tmpl[i];
    if (c == '}') {
      return absl::InvalidArgumentError("has a '}' without a matching '{' (there is no escape)");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    const size_t close = tmpl.find('}', i);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError("has a '{' without a closing '}'");
    }
    const absl::string_view name = tmpl.substr(i + 1, close - i - 1);
    const TokenInfo* info = nullptr;
    for (const TokenInfo& t : kTokens) {
      if (t.name == name) info = &t;
    }
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown token {", name, "}; tokens allowed here: ", AllowedTokenList(allowed)));
    }
    if ((allowed & info->token) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("{", name,
                                                     "} cannot be used in this key; tokens "
                                                     "allowed here: ",
                                                     AllowedTokenList(allowed)));
    }
    if (values != nullptr) {
      const std::string* v = nullptr;
      switch (info->token) {
        case kTokenProfileName:
          v = &values->profile_name;
          break;
        case kTokenProfileDir:
          v = &values->profile_dir;
          break;
        case kTokenWorkspaceDir:
          v = &values->workspace_dir;
          break;
        case kTokenRuntimeDir:
          v = &values->runtime_dir;
          break;
      }
      if (v == nullptr || v->empty()) {
        return absl::FailedPreconditionError(absl::StrCat("{", name, "} has no value here"));
      }
      out += *v;
    }
    i = close + 1;
  }
  return out;
}

bool LstatExists(const std::string& p, struct stat* st) { return lstat(p.c_str(), st) == 0; }

// vocab::IsCleanAbsolutePath, with the reason when it is not.
absl::Status CheckCleanAbsolute(const std::string& path, absl::string_view what) {
  if (vocab::IsCleanAbsolutePath(path)) return absl::OkStatus();
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", path, "\" is not an absolute path"));
  }
  if (std::any_of(path.begin(), path.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
      })) {
    return absl::InvalidArgumentError(absl::StrCat(what, " contains a control character"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, " \"", path, "\" is not a clean path (it has an empty, '.' or '..' segment)"));
}

// Walks `path` (clean, absolute) from / one component at a time with
// O_PATH|O_NOFOLLOW, so a symlink anywhere is seen as one. Sets `*existing`
// to how many components exist; with `must_exist` a missing one is an
// error.
absl::Status WalkWithoutSymlinks(const std::string& path, absl::string_view what, bool must_exist,
                                 size_t* existing) {
  *existing = 0;
  int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return absl::InternalError("cannot open /");
  std::string walked;
  absl::Status result = absl::OkStatus();
  for (absl::string_view seg : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&walked, "/", seg);
    const std::string name(seg);
    const int fd = openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == ENOENT && !must_exist) break;
      result = absl::FailedPreconditionError(
          absl::StrCat(what, " \"", path, "\": ", walked,
                       e == ENOENT ? " does not exist" : absl::StrCat(": ", std::strerror(e))));
      break;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
      close(fd);
      result = absl::PermissionDeniedError(absl::StrCat(
          what, " \"", path, "\": ", walked,
          " is a symlink; a mount source must have no symlink anywhere in its path (it "
          "could be retargeted at any host file)"));
      break;
    }
    close(dir);
    dir = fd;
    ++*existing;
  }
  close(dir);
  return result;
}

absl::Status CheckSourceCommon(const std::string& path, absl::string_view what,
                               const std::vector<SensitivePath>& sensitive, bool must_exist) {
  if (absl::Status st = CheckCleanAbsolute(path, what); !st.ok()) return st;
  size_t existing = 0;
  if (absl::Status st = WalkWithoutSymlinks(path, what, must_exist, &existing); !st.ok()) {
    return st;
  }
  absl::StatusOr<std::string> canon = CanonicalizeHostPath(path);
  if (!canon.ok()) return canon.status();
  if (*canon != path) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " \"", path, "\" is not canonical (it resolves to \"", *canon, "\")"));
  }
  if (absl::Status st = CheckNotSensitive(path, sensitive, /*refuse_ancestors=*/true); !st.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(what, " ", st.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HostContext> HostContextFromEnvironment(const std::string& runtime_dir) {
  HostContext h;
  h.home = EnvOr("HOME");
  if (h.home.empty() || h.home[0] != '/') {
    struct passwd pw {};
    struct passwd* result = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &result) != 0 || result == nullptr ||
        pw.pw_dir == nullptr || pw.pw_dir[0] != '/') {
      return absl::FailedPreconditionError(
          "cannot find your home directory: $HOME is unset or relative and the passwd entry "
          "has none");
    }
    h.home = pw.pw_dir;
  }
  h.home = StripTrailingSlashes(h.home);
  const std::string xdg_config = EnvOr("XDG_CONFIG_HOME");
  h.config_home = StripTrailingSlashes(
      !xdg_config.empty() && xdg_config[0] == '/' ? xdg_config : h.home + "/.config");
  const std::string xdg_state = EnvOr("XDG_STATE_HOME");
  h.state_home = StripTrailingSlashes(
      !xdg_state.empty() && xdg_state[0] == '/' ? xdg_state : h.home + "/.local/state");
  const std::string xdg_runtime = EnvOr("XDG_RUNTIME_DIR");
  h.xdg_runtime_dir =
      !xdg_runtime.empty() && xdg_runtime[0] == '/' ? StripTrailingSlashes(xdg_runtime) : "";
  if (runtime_dir.empty() || runtime_dir[0] != '/') {
    return absl::InvalidArgumentError("the Lazaret runtime directory must be absolute");
  }
  h.runtime_dir = StripTrailingSlashes(runtime_dir);
  return h;
}

absl::Status CheckPathTemplate(absl::string_view tmpl, unsigned allowed_tokens) {
  return Walk(tmpl, allowed_tokens, nullptr).status();
}

absl::StatusOr<std::string> ExpandHostPath(absl::string_view tmpl, unsigned allowed_tokens,
                                           const ExpansionValues& values) {
  absl::StatusOr<std::string> expanded = Walk(tmpl, allowed_tokens, &values);
  if (!expanded.ok()) return expanded.status();
  std::vector<absl::string_view> kept;
  for (absl::string_view seg : absl::StrSplit(*expanded, '/')) {
    if (seg == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("expands to \"", *expanded,
                       "\", which has a '..' segment; paths may not climb out "
                       "of the directory they name"));
    }
    if (seg.empty() || seg == ".") continue;
    kept.push_back(seg);
  }
  if (expanded->empty() || (*expanded)[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("expands to \"", *expanded,
                     "\", which is not absolute; start it with /, ~/ or a token "
                     "such as {workspace_dir}"));
  }
  return absl::StrCat("/", absl::StrJoin(kept, "/"));
}

absl::StatusOr<std::string> CanonicalizeHostPath(const std::string& absolute_path) {
  if (absolute_path.empty() || absolute_path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("\"", absolute_path, "\" is not absolute"));
  }
  std::vector<std::string> parts = absl::StrSplit(absolute_path, '/', absl::SkipEmpty());
  // Find the longest existing prefix, from the full path down.
  size_t n = parts.size();
  std::string resolved;
  for (;; --n) {
    const std::string prefix =
        absl::StrCat("/", absl::StrJoin(parts.begin(), parts.begin() + n, "/"));
    char* real = realpath(prefix.c_str(), nullptr);
    if (real != nullptr) {
      resolved = real;
      free(real);
      break;
    }
    const int err = errno;
    if (err != ENOENT && err != ENOTDIR) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot resolve \"", prefix, "\": ", std::strerror(err)));
    }
    struct stat st {};
    if (LstatExists(prefix, &st)) {
      // It exists but does not resolve: a dangling symlink (or a symlink
      // through a non-directory). Its target could appear later.
      return absl::FailedPreconditionError(
          absl::StrCat("\"", prefix,
                       "\" is a symlink whose target does not exist; remove it or point "
                       "the path at a real directory"));
    }
    if (n == 0) return absl::InternalError("realpath(\"/\") failed");
  }
  for (size_t i = n; i < parts.size(); ++i) {
    if (resolved.back() != '/') resolved.push_back('/');
    resolved += parts[i];
  }
  return resolved;
}

std::vector<SensitivePath> SensitivePaths(const HostContext& host,
                                          const std::string& workspace_dir) {
  std::vector<SensitivePath> lexical;
  const std::pair<const char*, const char*> kHomeSecrets[] = {
      {".ssh", "ssh keys"},
      {".gnupg", "GnuPG keys"},
      {".aws", "AWS credentials"},
      {".azure", "Azure credentials"},
      {".kube", "Kubernetes credentials"},
      {".docker", "container registry credentials"},
      {".config/gcloud", "Google Cloud credentials"},
      {".config/gh", "GitHub CLI credentials"},
      {".config/containers", "podman configuration"},
      {".local/share/containers", "podman storage"},
      {".local/share/keyrings", "desktop keyrings"},
      {".password-store", "pass password store"},
      {".pki", "certificate stores"},
      {".netrc", "netrc credentials"},
      {".git-credentials", "git credentials"},
  };
  for (const auto& [rel, what] : kHomeSecrets) {
    lexical.push_back(
        {absl::StrCat(host.home, "/", rel), absl::StrCat("~/", rel, " (", what, ")")});
  }
  lexical.push_back({host.LazaretConfigDir(), "Lazaret's configuration directory"});
  lexical.push_back({host.StateDir(), "Lazaret's state directory (trusted workspace files)"});
  lexical.push_back({host.runtime_dir, "Lazaret's runtime directory (service sockets)"});
  if (!host.xdg_runtime_dir.empty()) {
    lexical.push_back({host.xdg_runtime_dir, "$XDG_RUNTIME_DIR (session sockets)"});
  }
  for (const char* p : {"/proc", "/sys", "/dev", "/run/podman", "/run/docker.sock",
                        "/var/run/docker.sock", "/run/dbus", "/etc/shadow", "/etc/sudoers"}) {
    lexical.push_back({p, absl::StrCat(p, " (host system interface)")});
  }
  if (!workspace_dir.empty()) {
    const std::string git = workspace_dir + "/.git";
    lexical.push_back({git, "the workspace's .git (guarded by the Git Shadow)"});
    // A linked worktree or submodule: .git is a file naming the real git dir.
    struct stat st {};
    if (lstat(git.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size < 4096) {
      const int fd = open(git.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      if (fd >= 0) {
        char buf[4096];
        const ssize_t r = read(fd, buf, sizeof(buf));
        close(fd);
        absl::string_view text(buf, r > 0 ? static_cast<size_t>(r) : 0);
        text = text.substr(0, text.find('\n'));
        if (absl::ConsumePrefix(&text, "gitdir:")) {
          std::string dir(absl::StripAsciiWhitespace(text));
          if (!dir.empty() && dir[0] != '/') dir = absl::StrCat(workspace_dir, "/", dir);
          lexical.push_back({dir, "the workspace's git directory (guarded by the Git Shadow)"});
          const size_t wt = dir.find("/.git/worktrees/");
          if (wt != std::string::npos) {
            lexical.push_back({dir.substr(0, wt + 5), "the main repository's .git"});
          }
        }
      }
    }
  }
  std::vector<SensitivePath> out;
  for (SensitivePath& s : lexical) {
    absl::StatusOr<std::string> canon = CanonicalizeHostPath(s.path);
    if (canon.ok() && *canon != s.path) out.push_back({*canon, s.what});
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status CheckNotSensitive(const std::string& canonical,
                               const std::vector<SensitivePath>& sensitive, bool refuse_ancestors) {
  for (const SensitivePath& s : sensitive) {
    if (vocab::IsAtOrUnder(canonical, s.path)) {
      return absl::PermissionDeniedError(absl::StrCat("resolves to \"", canonical, "\", which is ",
                                                      canonical == s.path ? "" : "inside ", s.what,
                                                      " (", s.path, ")"));
    }
    if (refuse_ancestors && vocab::IsAtOrUnder(s.path, canonical)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "resolves to \"", canonical, "\", which contains ", s.what, " (", s.path, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckVolumePlacement(const std::string& canonical, const std::string& data_root,
                                  const std::string& profile_dir) {
  if (data_root.empty()) return absl::OkStatus();
  if (vocab::IsAtOrUnder(data_root, canonical)) {
    return absl::PermissionDeniedError(
        absl::StrCat("\"", canonical, "\" contains data_root \"", data_root,
                     "\" (every profile's persistent data); mount {profile_dir} or a directory "
                     "below it instead"));
  }
  if (vocab::IsAtOrUnder(canonical, data_root) &&
      (profile_dir.empty() || !vocab::IsAtOrUnder(canonical, profile_dir))) {
    return absl::PermissionDeniedError(
        absl::StrCat("\"", canonical, "\" is inside another profile's data under \"", data_root,
                     "\"; a profile may mount only its own {profile_dir}"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TrustedPath>> TrustedPaths(const HostContext& host,
                                                      const std::string& explicit_config) {
  std::vector<std::pair<std::string, std::string>> wanted = {
      {host.LazaretConfigDir(), "your Lazaret configuration directory"},
      {host.UserConfigFile(), "your configuration file"},
      {host.StateDir(), "Lazaret's state directory (your trust store)"},
      {host.TrustStoreFile(), "your trust store"},
  };
  if (!explicit_config.empty()) wanted.push_back({explicit_config, "the --config file"});
  std::vector<TrustedPath> out;
  for (auto& [path, what] : wanted) {
    absl::StatusOr<std::string> canon = CanonicalizeHostPath(path);
    if (!canon.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", path, ": ", canon.status().message()));
    }
    out.push_back({absl::StrCat(what, " ", path), path, *std::move(canon)});
  }
  return out;
}

absl::Status CheckTrustedPathsNotAgentWritable(const std::vector<TrustedPath>& trusted,
                                               const std::vector<AgentWritableDir>& writable) {
  for (const TrustedPath& t : trusted) {
    for (const AgentWritableDir& w : writable) {
      if (!vocab::IsAtOrUnder(t.canonical, w.canonical)) continue;
      const std::string where = t.canonical == t.configured
                                    ? "is"
                                    : absl::StrCat("resolves to ", t.canonical, ", which is");
      return absl::PermissionDeniedError(absl::StrCat(
          t.what, " ", where, t.canonical == w.canonical ? " " : " inside ", w.what, " (",
          w.canonical,
          "), which the agent can write: it could rewrite what Lazaret trusts. Keep your "
          "configuration, --config files and state outside every workspace, data_root and "
          "read-write volume (replace a symlink into such a directory with the file itself, "
          "or run Lazaret from another directory)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMountSource(const std::string& path, absl::string_view what,
                              const std::vector<SensitivePath>& sensitive) {
  return CheckSourceCommon(path, what, sensitive, /*must_exist=*/true);
}

absl::Status CheckFutureMountSource(const std::string& path, absl::string_view what,
                                    const std::vector<SensitivePath>& sensitive) {
  return CheckSourceCommon(path, what, sensitive, /*must_exist=*/false);
}

absl::StatusOr<std::string> CheckContainerPath(absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError("must be an absolute path inside the container");
  }
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == ':' || c == ',') {
      return absl::InvalidArgumentError(
          "contains a control character, ':' or ',' (which podman would read as mount options)");
    }
  }
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p == "/") return absl::InvalidArgumentError("cannot be the container's root directory");
  if (!vocab::IsCleanAbsolutePath(p)) {
    return absl::InvalidArgumentError("must be a clean path (no empty, '.' or '..' segments)");
  }
  for (absl::string_view reserved : {"/workspace", "/run/lazaret", "/proc", "/sys", "/dev"}) {
    if (vocab::IsAtOrUnder(p, reserved)) {
      return absl::InvalidArgumentError(
          absl::StrCat("is inside ", reserved, ", which Lazaret or the kernel manages"));
    }
  }
  return p;
}

}  // namespace lazaret::config
