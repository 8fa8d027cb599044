#include "services/configd/profile_edit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/common/constants.h"
#include "services/common/fs/file.h"
#include "services/configd/embedded_default.h"
#include "services/configd/proto_convert.h"
#include "services/configd/schema.h"
#include "services/configd/toml.h"
#include "services/configd/trust_store.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/profile_name.h"

namespace lazaret::config {
namespace {

std::string Q(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// The byte offset of a toml++ source position (1-based line, 1-based
// column counted in code points), or npos when it is past the text.
size_t OffsetOf(absl::string_view text, uint32_t line, uint32_t column) {
  size_t i = 0;
  for (uint32_t l = 1; l < line; ++l) {
    const size_t nl = text.find('\n', i);
    if (nl == absl::string_view::npos) return absl::string_view::npos;
    i = nl + 1;
  }
  for (uint32_t c = 1; c < column; ++c) {
    if (i >= text.size()) return absl::string_view::npos;
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  }
  return i;
}

// The header line `[profiles.<profile>]` (spaces and quotes allowed, a
// trailing comment allowed) starts at `at`.
bool IsProfileHeader(absl::string_view text, size_t at, const std::string& profile) {
  const size_t eol = text.find('\n', at);
  absl::string_view line = text.substr(at, eol == absl::string_view::npos ? eol : eol - at);
  if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = line.substr(0, hash);
  }
  std::string compact;
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '"' && c != '\'') compact.push_back(c);
  }
  return compact == absl::StrCat("[profiles.", profile, "]");
}

// Whether the embedded default defines [profiles.<profile>].
bool BuiltInProfile(const std::string& profile) {
  Diagnostics ignored;
  const LayerConfig d = ParseLayer(Layer::kEmbeddedDefault, kEmbeddedFileName,
                                   EmbeddedDefaultToml(), ignored);
  return d.profiles.count(profile) != 0;
}

absl::Status CheckExactName(const std::string& name) {
  absl::StatusOr<std::string> canon = vocab::CheckDomainPattern(name);
  if (!canon.ok() || *canon != name || absl::StrContains(name, '*')) {
    return absl::InvalidArgumentError(
        absl::StrCat("an approval allows one exact host name, lowercase, without a trailing dot",
                     canon.ok() ? "" : absl::StrCat(" (", canon.status().message(), ")")));
  }
  return absl::OkStatus();
}

// Everything about a resolved profile except its allowed names, with the
// lines of entries left out (an inserted line moves the ones below it).
std::string Fingerprint(const ResolvedProfile& p) {
  v1::ResolvedProfile out;
  ToProto(p, &out);
  v1::NetworkPolicy* n = out.mutable_network();
  n->clear_allow_domains();
  for (v1::CidrEntry& e : *n->mutable_allow()) e.mutable_source()->clear_line();
  for (v1::CidrEntry& e : *n->mutable_deny()) e.mutable_source()->clear_line();
  n->mutable_egress_source()->clear_line();
  auto* sources = out.mutable_key_sources();
  sources->erase(std::remove_if(sources->begin(), sources->end(),
                                [&](const v1::KeySource& k) {
                                  return absl::EndsWith(k.key_path(), ".allow_domains");
                                }),
                 sources->end());
  std::string bytes;
  out.SerializeToString(&bytes);
  return bytes;
}

std::vector<std::string> Names(const ResolvedProfile& p) {
  std::vector<std::string> out;
  for (const Setting<std::string>& d : p.allow_domains) out.push_back(d.value);
  return out;
}

// The user's file: where it really is (a symlinked dotfile is edited in
// place), its bytes ("" when absent) and its mode.
struct UserFile {
  std::string path;
  std::string canonical;
  std::string text;
  mode_t mode = 0600;
  bool exists = false;
};

absl::StatusOr<UserFile> ReadUserFile(const HostContext& host) {
  UserFile f;
  f.path = host.UserConfigFile();
  f.canonical = f.path;
  if (char* real = realpath(f.path.c_str(), nullptr); real != nullptr) {
    f.canonical = real;
    free(real);
  }
  absl::StatusOr<std::string> text = ReadConfigFile(f.canonical, true);
  if (text.ok()) {
    struct stat st {};
    if (stat(f.canonical.c_str(), &st) == 0) f.mode = st.st_mode & 07777;
    f.text = *std::move(text);
    f.exists = true;
  } else if (!absl::IsNotFound(text.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("your configuration file ", f.path, " ", text.status().message()));
  }
  return f;
}

absl::StatusOr<ResolvedProfile> LoadProfile(const HostContext& host, const Selector& selector,
                                            const std::string& profile) {
  const LoadedConfig loaded = LoadForSelector(host, selector);
  absl::StatusOr<ResolvedProfile> p = loaded.Profile(profile);
  if (!p.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the configuration does not load: ", p.status().message()));
  }
  return p;
}

// mkdir -p with mode 0700 (the directories hold only the user's own files).
absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty() || dir == "/") return absl::OkStatus();
  if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
  if (errno == ENOENT) {
    if (absl::Status st = MakeDirs(dir.substr(0, dir.rfind('/'))); !st.ok()) return st;
    if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir, ": ", strerror(errno)));
}

struct Prepared {
  UserFile file;
  NameAllowEdit edit;
  ResolvedProfile resolved;
};

absl::StatusOr<Prepared> Prepare(const HostContext& host, const Selector& selector,
                                 const std::string& profile, const std::string& name) {
  if (absl::Status st = CheckExactName(name); !st.ok()) return st;
  if (!vocab::IsValidProfileName(profile)) {
    return absl::InvalidArgumentError(absl::StrCat(Q(profile), " is not a valid profile name"));
  }
  Prepared out;
  absl::StatusOr<ResolvedProfile> resolved = LoadProfile(host, selector, profile);
  if (!resolved.ok()) return resolved.status();
  out.resolved = *std::move(resolved);
  for (const Setting<std::string>& d : out.resolved.allow_domains) {
    if (vocab::DomainCovers(d.value, name)) {
      return absl::FailedPreconditionError(
          absl::StrCat(Q(name), " is already allowed for profile ", Q(profile), " by ",
                       Q(d.value)));
    }
  }
  absl::StatusOr<UserFile> file = ReadUserFile(host);
  if (!file.ok()) return file.status();
  out.file = *std::move(file);
  // A table appended for a profile the user's file does not define would
  // be a profile without an image once the other file is gone.
  Diagnostics diags;
  const LayerConfig user = ParseLayer(Layer::kUser, out.file.path, out.file.text, diags);
  if (user.profiles.count(profile) == 0 && !BuiltInProfile(profile)) {
    return absl::FailedPreconditionError(
        absl::StrCat("profile ", Q(profile), " is not defined in your own configuration file ",
                     out.file.path,
                     "; Lazaret only edits that file (never a workspace or --config file): "
                     "add the name to the file that defines the profile by hand"));
  }
  absl::StatusOr<std::string> after =
      AddNameToProfileText(out.file.text, out.file.path, profile, name);
  if (!after.ok()) return after.status();
  out.edit.file = out.file.path;
  out.edit.before = out.file.text;
  out.edit.after = *std::move(after);
  out.edit.before_sha256 = Sha256Hex(out.edit.before);
  out.edit.after_sha256 = Sha256Hex(out.edit.after);
  out.edit.diff = UnifiedDiff(out.file.path, out.edit.before, out.edit.after);
  return out;
}

}  // namespace

namespace {

absl::StatusOr<std::string> InsertName(absl::string_view text, const std::string& path,
                                       const std::string& profile, const std::string& name) {
  toml::parse_result result =
      toml::parse(std::string_view(text.data(), text.size()), std::string_view(path));
  if (!result) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not valid TOML: ", std::string(result.error().description())));
  }
  const std::string quoted = Q(name);
  const bool crlf = absl::StrContains(text, "\r\n");
  const char* eol = crlf ? "\r\n" : "\n";
  const toml::table& root = result.table();
  const toml::table* profiles = nullptr;
  if (const toml::node* n = root.get("profiles")) {
    profiles = n->as_table();
    if (profiles == nullptr || profiles->is_inline()) {
      return absl::UnimplementedError(
          absl::StrCat("profiles in ", path,
                       " is not written as [profiles.<name>] tables; add the name by hand"));
    }
  }
  const toml::node* table_node = profiles != nullptr ? profiles->get(profile) : nullptr;
  if (table_node == nullptr) {
    // (c) Appended, after a line break if the file does not end with one.
    std::string out(text);
    if (!out.empty() && out.back() != '\n') out += eol;
    absl::StrAppend(&out, out.empty() ? "" : eol, "[profiles.", profile, "]", eol,
                    "allow_domains = [", quoted, "]", eol);
    return out;
  }
  const toml::table* table = table_node->as_table();
  auto unimplemented = [&](absl::string_view why) {
    return absl::UnimplementedError(
        absl::StrCat("profiles.", profile, " in ", path, " ", why,
                     "; Lazaret edits only a [profiles.", profile,
                     "] table with a plain allow_domains = [...] list: add the name by hand"));
  };
  if (table == nullptr || table->is_inline()) return unimplemented("is not a [table]");
  const size_t header = OffsetOf(text, table->source().begin.line, table->source().begin.column);
  if (header == absl::string_view::npos || !IsProfileHeader(text, header, profile)) {
    return unimplemented("is not written as a [profiles.<name>] header");
  }
  if (const toml::node* list = table->get("allow_domains")) {
    // (a) After the last entry, or inside the empty brackets.
    const toml::array* a = list->as_array();
    if (a == nullptr) return unimplemented("has an allow_domains that is not a list");
    const toml::source_region& at = a->empty() ? a->source() : a->back().source();
    const size_t pos = a->empty() ? OffsetOf(text, at.begin.line, at.begin.column)
                                  : OffsetOf(text, at.end.line, at.end.column);
    if (pos == absl::string_view::npos || pos > text.size() ||
        (a->empty() && (pos >= text.size() || text[pos] != '['))) {
      return unimplemented("has an allow_domains list Lazaret cannot locate");
    }
    std::string out(text);
    if (a->empty()) {
      out.insert(pos + 1, quoted);
    } else {
      out.insert(pos, absl::StrCat(", ", quoted));
    }
    return out;
  }
  // (b) Below the header line.
  size_t line_end = text.find('\n', header);
  std::string out(text);
  std::string line = absl::StrCat("allow_domains = [", quoted, "]", eol);
  if (line_end == absl::string_view::npos) {
    out += eol;
    line_end = out.size() - 1;
  }
  out.insert(line_end + 1, line);
  return out;
}

}  // namespace

absl::StatusOr<std::string> AddNameToProfileText(absl::string_view text, const std::string& path,
                                                 const std::string& profile,
                                                 const std::string& name) {
  absl::StatusOr<std::string> out = InsertName(text, path, profile, name);
  if (!out.ok()) return out;
  // The edited text must read back as the same layer with one more name
  // at the end of the profile's list.
  Diagnostics before_diags;
  Diagnostics after_diags;
  const LayerConfig before = ParseLayer(Layer::kUser, path, text, before_diags);
  const LayerConfig after = ParseLayer(Layer::kUser, path, *out, after_diags);
  std::vector<std::string> want;
  if (auto it = before.profiles.find(profile);
      it != before.profiles.end() && it->second.allow_domains) {
    for (const Setting<std::string>& d : it->second.allow_domains->value) want.push_back(d.value);
  }
  want.push_back(name);
  std::vector<std::string> got;
  if (auto it = after.profiles.find(profile);
      it != after.profiles.end() && it->second.allow_domains) {
    for (const Setting<std::string>& d : it->second.allow_domains->value) got.push_back(d.value);
  }
  if (after_diags.has_errors() != before_diags.has_errors() || got != want) {
    return absl::UnimplementedError(
        absl::StrCat("profiles.", profile, " in ", path,
                     " is written in a shape Lazaret cannot edit safely; add the name by hand"));
  }
  return out;
}

std::string UnifiedDiff(const std::string& file, absl::string_view before,
                        absl::string_view after) {
  auto lines = [](absl::string_view t) {
    std::vector<std::string> out = absl::StrSplit(t, '\n');
    if (!out.empty() && out.back().empty()) out.pop_back();
    return out;
  };
  const std::vector<std::string> a = lines(before);
  const std::vector<std::string> b = lines(after);
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  constexpr size_t kContext = 3;
  const size_t start = prefix > kContext ? prefix - kContext : 0;
  const size_t a_end = std::min(a.size(), a.size() - suffix + kContext);
  const size_t b_end = std::min(b.size(), b.size() - suffix + kContext);
  auto range = [](size_t from, size_t to) {
    // "start,count" with 1-based start; an empty range names the line before.
    const size_t count = to - from;
    return absl::StrCat(count == 0 ? from : from + 1, ",", count);
  };
  std::string out = absl::StrCat("--- ", file, "\n+++ ", file, "\n@@ -", range(start, a_end), " +",
                                 range(start, b_end), " @@\n");
  for (size_t i = start; i < prefix; ++i) absl::StrAppend(&out, " ", a[i], "\n");
  for (size_t i = prefix; i < a.size() - suffix; ++i) absl::StrAppend(&out, "-", a[i], "\n");
  for (size_t i = prefix; i < b.size() - suffix; ++i) absl::StrAppend(&out, "+", b[i], "\n");
  for (size_t i = a.size() - suffix; i < a_end; ++i) absl::StrAppend(&out, " ", a[i], "\n");
  return out;
}

absl::StatusOr<NameAllowEdit> PreviewNameAllow(const HostContext& host, const Selector& selector,
                                               const std::string& profile,
                                               const std::string& name) {
  absl::StatusOr<Prepared> p = Prepare(host, selector, profile, name);
  if (!p.ok()) return p.status();
  return std::move(p->edit);
}

absl::StatusOr<NameAllowEdit> ApplyNameAllow(const HostContext& host, const Selector& selector,
                                             const std::string& profile, const std::string& name,
                                             const std::string& before_sha256) {
  absl::StatusOr<Prepared> p = Prepare(host, selector, profile, name);
  if (!p.ok()) return p.status();
  if (p->edit.before_sha256 != before_sha256) {
    return absl::FailedPreconditionError(
        absl::StrCat(p->file.path,
                     " changed since the change was shown; look at the new change and decide "
                     "again"));
  }
  if (!p->file.exists) {
    // ~/.config/lazaret may not exist yet: it holds only the user's own files.
    if (absl::Status st = MakeDirs(p->file.canonical.substr(0, p->file.canonical.rfind('/')));
        !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = fs::WriteFileAtomic(p->file.canonical, p->edit.after, p->file.mode,
                                            fs::Durability::kSync);
      !st.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", p->file.path, ": ", st.message()));
  }
  // Nothing but the name may have changed for the profile.
  absl::StatusOr<ResolvedProfile> now = LoadProfile(host, selector, profile);
  std::vector<std::string> wanted = Names(p->resolved);
  wanted.push_back(name);
  std::string problem;
  if (!now.ok()) {
    problem = std::string(now.status().message());
  } else {
    std::vector<std::string> got = Names(*now);
    std::vector<std::string> sorted_wanted = wanted;
    std::sort(got.begin(), got.end());
    std::sort(sorted_wanted.begin(), sorted_wanted.end());
    if (got != sorted_wanted) {
      problem = absl::StrCat("the profile's allowed names did not become the old ones plus ",
                             Q(name), " (another file - a workspace or --config file - sets "
                             "profiles.", profile, ".allow_domains and replaces yours)");
    } else if (Fingerprint(*now) != Fingerprint(p->resolved)) {
      problem = "another setting of the profile changed as well";
    }
  }
  if (!problem.empty()) {
    absl::Status restored =
        p->file.exists
            ? fs::WriteFileAtomic(p->file.canonical, p->edit.before, p->file.mode,
                                  fs::Durability::kSync)
            : (unlink(p->file.canonical.c_str()) == 0
                   ? absl::OkStatus()
                   : absl::InternalError(absl::StrCat("unlink: ", strerror(errno))));
    return absl::FailedPreconditionError(absl::StrCat(
        "allowing ", Q(name), " for profile ", Q(profile), " in ", p->file.path,
        " did not work: ", problem, "; ",
        restored.ok() ? "the file was put back as it was"
                      : absl::StrCat("putting the file back failed too (", restored.message(),
                                     "): check it by hand")));
  }
  return std::move(p->edit);
}

}  // namespace lazaret::config
