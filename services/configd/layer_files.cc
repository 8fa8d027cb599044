#include "services/configd/layer_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/configd/trust_store.h"

namespace lazaret::config {
namespace {

Origin FileOrigin(Layer layer, const std::string& file) { return Origin{layer, file, "", 0, 0}; }

}  // namespace

absl::StatusOr<std::string> ReadConfigFile(const std::string& path, bool follow_symlinks) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_symlinks ? 0 : O_NOFOLLOW);
  const int fd = open(path.c_str(), flags);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP && !follow_symlinks) {
      return absl::PermissionDeniedError(
          "is a symlink; a workspace configuration must be a regular file (a symlink could "
          "point at any file on the host)");
    }
    return ErrnoStatus("cannot open it", e);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus("cannot inspect it", e);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError("is not a regular file");
  }
  if (static_cast<size_t>(st.st_size) > kMaxConfigBytes) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("is larger than ", kMaxConfigBytes, " bytes"));
  }
  // Read up to one byte past the limit, in case the file grows meanwhile.
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = read(fd, text.data() + got, text.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      close(fd);
      return ErrnoStatus("cannot read it", e);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  if (got > kMaxConfigBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("is larger than ", kMaxConfigBytes, " bytes"));
  }
  text.resize(got);
  return text;
}

absl::StatusOr<std::string> CanonicalWorkspaceFile(const std::string& file) {
  const size_t slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : file.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  char* real = realpath(dir.c_str(), nullptr);
  if (real == nullptr) return ErrnoStatus(absl::StrCat("resolving ", dir), errno);
  std::string canon = real;
  free(real);
  if (canon.back() != '/') canon.push_back('/');
  return canon + base;
}

std::vector<AgentWritableDir> AgentWritableDirs(const std::string& workspace_dir,
                                                const LoadedConfig& loaded) {
  std::vector<AgentWritableDir> out;
  if (!workspace_dir.empty()) out.push_back({workspace_dir, "the workspace"});
  for (const auto& [name, p] : loaded.profiles) {
    if (!p.data_root.empty() &&
        std::none_of(out.begin(), out.end(),
                     [&](const AgentWritableDir& w) { return w.canonical == p.data_root; })) {
      out.push_back({p.data_root, "data_root (profile directories are mounted read-write)"});
    }
    for (const ResolvedVolume& v : p.volumes) {
      if (v.access != Access::kReadWrite) continue;
      out.push_back({v.host, absl::StrCat("a read-write volume of profile ", name)});
    }
  }
  return out;
}

LoadedConfig LoadForSelector(const HostContext& host, const Selector& selector) {
  LoadedConfig failed;
  std::vector<LayerSource> sources;
  std::string workspace_dir;

  // Where the files the trusted layers read really are; read them there,
  // so a symlink retargeted after this point is not followed.
  absl::StatusOr<std::vector<TrustedPath>> trusted =
      TrustedPaths(host, selector.explicit_config.empty() || selector.explicit_config[0] != '/'
                             ? std::string()
                             : selector.explicit_config);
  auto canonical_of = [&](const std::string& configured) {
    if (trusted.ok()) {
      for (const TrustedPath& t : *trusted) {
        if (t.configured == configured) return t.canonical;
      }
    }
    return configured;
  };
  if (!trusted.ok()) {
    failed.diagnostics.Error(FileOrigin(Layer::kUser, host.UserConfigFile()),
                             std::string(trusted.status().message()),
                             "remove the dangling symlink or point it at an existing file "
                             "outside any workspace");
  }

  if (trusted.ok()) {
    if (absl::StatusOr<std::string> text =
            ReadConfigFile(canonical_of(host.UserConfigFile()), true);
        text.ok()) {
      sources.push_back({Layer::kUser, host.UserConfigFile(), *text, Sha256Hex(*text), true});
    } else if (!absl::IsNotFound(text.status())) {
      failed.diagnostics.Error(FileOrigin(Layer::kUser, host.UserConfigFile()),
                               std::string(text.status().message()),
                               "fix or remove your configuration file");
    }
  }

  if (!selector.workspace_dir.empty()) {
    char* real = selector.workspace_dir[0] == '/'
                     ? realpath(selector.workspace_dir.c_str(), nullptr)
                     : nullptr;
    struct stat st {};
    if (real == nullptr || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
      failed.diagnostics.Error(FileOrigin(Layer::kWorkspace, selector.workspace_dir),
                               "the workspace is not an existing absolute directory");
    } else {
      workspace_dir = real;
    }
    free(real);
  }

  if (!workspace_dir.empty() && trusted.ok()) {
    // Your own layers and the trust store must not be agent-writable.
    if (absl::Status st =
            CheckTrustedPathsNotAgentWritable(*trusted, {{workspace_dir, "the workspace"}});
        !st.ok()) {
      failed.diagnostics.Error(FileOrigin(Layer::kWorkspace, workspace_dir),
                               std::string(st.message()));
    }
  }

  if (!workspace_dir.empty() && !failed.diagnostics.has_errors()) {
    const std::string path =
        absl::StrCat(workspace_dir == "/" ? "" : workspace_dir, "/", kWorkspaceFileName);
    absl::StatusOr<std::string> text = selector.workspace_text.has_value()
                                           ? absl::StatusOr<std::string>(*selector.workspace_text)
                                           : ReadConfigFile(path, false);
    if (text.ok() && text->size() > kMaxConfigBytes) {
      text =
          absl::FailedPreconditionError(absl::StrCat("is larger than ", kMaxConfigBytes, " bytes"));
    }
    if (text.ok()) {
      LayerSource s{Layer::kWorkspace, path, *text, Sha256Hex(*text), false};
      if (!selector.workspace_text.has_value()) {
        TrustStore store(canonical_of(host.TrustStoreFile()));
        absl::StatusOr<bool> is_trusted = store.IsTrusted(path, s.sha256);
        if (is_trusted.ok()) {
          s.trusted = *is_trusted;
        } else {
          failed.diagnostics.Warning(FileOrigin(Layer::kWorkspace, path),
                                     std::string(is_trusted.status().message()));
        }
      }
      sources.push_back(std::move(s));
    } else if (!absl::IsNotFound(text.status())) {
      failed.diagnostics.Error(FileOrigin(Layer::kWorkspace, path),
                               std::string(text.status().message()),
                               "replace it with a regular file or remove it");
    }
  }

  if (!selector.explicit_config.empty()) {
    const std::string& path = selector.explicit_config;
    if (path[0] != '/') {
      failed.diagnostics.Error(FileOrigin(Layer::kExplicit, path),
                               "the --config path must be absolute");
    } else if (!trusted.ok()) {
      // Reported above.
    } else if (absl::StatusOr<std::string> text = ReadConfigFile(canonical_of(path), true);
               text.ok()) {
      sources.push_back({Layer::kExplicit, path, *text, Sha256Hex(*text), true});
    } else {
      failed.diagnostics.Error(FileOrigin(Layer::kExplicit, path),
                               std::string(text.status().message()),
                               "pass an existing configuration file to --config");
    }
  }

  if (failed.diagnostics.has_errors()) {
    for (const LayerSource& s : sources) {
      failed.layers.push_back({s.layer, s.path, s.sha256, s.trusted});
    }
    return failed;
  }
  LoadedConfig loaded = LoadLayers(host, workspace_dir, sources);
  for (const Diagnostic& w : failed.diagnostics.warnings()) {
    loaded.diagnostics.Warning(Origin{Layer::kWorkspace, w.file, w.key_path, w.line, w.column},
                               w.message, w.hint);
  }
  // Now that data_root and the volumes are known: none may hold a file the
  // trusted layers read.
  if (!loaded.diagnostics.has_errors()) {
    if (absl::Status st =
            CheckTrustedPathsNotAgentWritable(*trusted, AgentWritableDirs(workspace_dir, loaded));
        !st.ok()) {
      loaded.diagnostics.Error(FileOrigin(Layer::kUser, host.UserConfigFile()),
                               std::string(st.message()));
      loaded.profiles.clear();
    }
  }
  return loaded;
}

}  // namespace lazaret::config
