#include "services/configd/test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/configd/trust_store.h"

namespace lazaret::config::testing {
namespace {

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  chmod(path, 0700);
  return remove(path);
}

}  // namespace

Scratch::Scratch() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl =
      absl::StrCat(base != nullptr && *base == '/' ? base : "/tmp", "/lazaret-config-test.XXXXXX");
  char* made = mkdtemp(tmpl.data());
  char* real = made != nullptr ? realpath(made, nullptr) : nullptr;
  root_ = real != nullptr ? real : tmpl;
  free(real);
}

Scratch::~Scratch() { nftw(root_.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS); }

std::string Scratch::Dir(const std::string& rel) const {
  std::string p = root_;
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    absl::StrAppend(&p, "/", part);
    mkdir(p.c_str(), 0700);
  }
  return p;
}

std::string Scratch::File(const std::string& rel, const std::string& content) const {
  const size_t slash = rel.rfind('/');
  if (slash != std::string::npos) Dir(rel.substr(0, slash));
  const std::string p = Path(rel);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  chmod(p.c_str(), 0600);
  return p;
}

std::string Scratch::Symlink(const std::string& target, const std::string& rel) const {
  const size_t slash = rel.rfind('/');
  if (slash != std::string::npos) Dir(rel.substr(0, slash));
  const std::string p = Path(rel);
  unlink(p.c_str());
  symlink(target.c_str(), p.c_str());
  return p;
}

HostContext Scratch::Host() const {
  Dir("home/.ssh");
  Dir("run");
  Dir("ws");
  HostContext h;
  h.home = Path("home");
  h.config_home = Path("home/.config");
  h.state_home = Path("home/.local/state");
  h.runtime_dir = Path("run");
  h.xdg_runtime_dir = "";
  return h;
}

LoadedConfig Load(const Scratch& s, const std::string& user, const std::string& workspace,
                  const std::string& explicit_config, bool workspace_trusted) {
  std::vector<LayerSource> layers;
  if (!user.empty()) {
    layers.push_back(
        {Layer::kUser, s.Path("home/.config/lazaret/config.toml"), user, Sha256Hex(user), true});
  }
  if (!workspace.empty()) {
    layers.push_back({Layer::kWorkspace, s.workspace() + "/lazaret.toml", workspace,
                      Sha256Hex(workspace), workspace_trusted});
  }
  if (!explicit_config.empty()) {
    layers.push_back({Layer::kExplicit, s.Path("explicit.toml"), explicit_config,
                      Sha256Hex(explicit_config), true});
  }
  return LoadLayers(s.Host(), s.workspace(), layers);
}

std::string Errors(const LoadedConfig& c) {
  std::string out;
  for (const Diagnostic& d : c.diagnostics.errors())
    absl::StrAppend(&out, FormatDiagnostic(d), "\n");
  return out;
}

std::string Warnings(const LoadedConfig& c) {
  std::string out;
  for (const Diagnostic& d : c.diagnostics.warnings()) {
    absl::StrAppend(&out, FormatDiagnostic(d), "\n");
  }
  return out;
}

Parsed ParseText(const std::string& text) {
  Parsed p;
  p.layer = ParseLayer(Layer::kUser, kUserConfigFile, text, p.diags);
  return p;
}

std::string AllErrors(const Diagnostics& d) {
  std::string out;
  for (const Diagnostic& e : d.errors()) absl::StrAppend(&out, FormatDiagnostic(e), "\n");
  return out;
}

const KeySource* SourceOf(const ResolvedProfile& p, const std::string& key) {
  for (const KeySource& k : p.sources) {
    if (k.key_path == key) return &k;
  }
  return nullptr;
}

}  // namespace lazaret::config::testing
