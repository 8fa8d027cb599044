#include "tests/e2e/held_e2e_world.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace lazaret::test::e2e::held {
namespace {

constexpr char kMarker[] = "# written by held_e2e (restored at its end)\n";

std::string FileBytes(int dir_fd, const char* name) {
  const int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return absl::StrCat("<unreadable: ", std::strerror(errno), ">");
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// Walks `dir_fd` (owned) depth first, never following a symlink.
void Walk(int dir_fd, const std::string& prefix, const std::vector<std::string>& skip,
          std::map<std::string, std::string>* out) {
  DIR* d = fdopendir(dir_fd);
  if (d == nullptr) {
    close(dir_fd);
    (*out)[prefix + "<dir>"] = "unreadable";
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  for (const std::string& name : names) {
    if (prefix.empty() && std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const std::string rel = prefix + name;
    struct stat st {};
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      (*out)[rel] = "vanished";
      continue;
    }
    std::string text = absl::StrCat(" mode=", absl::Hex(st.st_mode & 07777), " uid=", st.st_uid,
                                    " gid=", st.st_gid);
    if (S_ISREG(st.st_mode)) {
      text = absl::StrCat("file", text, " bytes=", absl::CHexEscape(FileBytes(dirfd(d), name.c_str())));
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = readlinkat(dirfd(d), name.c_str(), target, sizeof(target));
      text = absl::StrCat("symlink", text, " -> ",
                          absl::CHexEscape(std::string(target, n > 0 ? static_cast<size_t>(n) : 0)));
    } else if (S_ISDIR(st.st_mode)) {
      text = absl::StrCat("dir", text);
      const int sub = openat(dirfd(d), name.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        Walk(sub, rel + "/", skip, out);
      } else {
        text += " unreadable";
      }
    } else {
      text = absl::StrCat("other", text, " type=", absl::Hex(st.st_mode & S_IFMT));
    }
    (*out)[rel] = text;
  }
  closedir(d);
}

// Each object of `v` (at any depth) that has a string "change" and a path
// ("path_bytes" in base64, "path" or "rel").
void CollectEntries(const google::protobuf::Value& v, HeldListing* out) {
  if (v.has_list_value()) {
    for (const auto& e : v.list_value().values()) CollectEntries(e, out);
    return;
  }
  if (!v.has_struct_value()) return;
  const auto& fields = v.struct_value().fields();
  auto text = [&](const char* key) -> std::string {
    auto it = fields.find(key);
    if (it == fields.end() || !it->second.has_string_value()) return "";
    return it->second.string_value();
  };
  // The exact bytes when the listing has them (a name need not be
  // printable), else the path as shown.
  std::string path;
  if (!absl::Base64Unescape(text("path_bytes"), &path) || path.empty()) path = text("path");
  if (path.empty()) path = text("rel");
  const std::string change = text("change");
  if (!path.empty() && !change.empty()) {
    out->paths[path] = HeldPath{change, text("kind")};
    return;
  }
  for (const auto& [key, value] : fields) CollectEntries(value, out);
}

}  // namespace

HeldWorld::HeldWorld() {
  dir_ = std::make_unique<UserDir>("held");
  data_root_ = dir_->path() + "/data";
  if (RunAs("/", {"mkdir", "-p", data_root_}).exit_code != 0) {
    error_ = "cannot create " + data_root_;
    return;
  }
  const std::string config = absl::StrCat(
      "[storage]\ndata_root = \"", data_root_, "\"\n\n",
      "[profiles.", kAgentProfile, "]\nimage = \"", kImage, "\"\n",
      // Room for Debian's nodejs and npm; preallocated on disk, so no more.
      "persistent_dirs = [\"/usr\"]\npersistent_cap = \"1GiB\"\n",
      "env = { NODE_EXTRA_CA_CERTS = \"", kCaInside, "\" }\n",
      "[[profiles.", kAgentProfile, ".volumes]]\nhost = \"", kHostCaBundle,
      "\"\ncontainer = \"", kCaInside, "\"\nmode = \"ro\"\n");
  user_config_ = std::make_unique<UserConfig>(kMarker, config);
  if (!user_config_->error().empty()) error_ = user_config_->error();
}

HeldWorld::~HeldWorld() {
  // The agent profile's overlay goes before its directory does.
  Lazaret("/", {"state", "reset", kAgentProfile, "--yes"});
  user_config_.reset();
}

CommandResult UserSh(const std::string& cwd, const std::string& script) {
  return RunAs(cwd, {"sh", "-c", script},
               {{"GIT_AUTHOR_NAME", "Dev"},
                {"GIT_AUTHOR_EMAIL", "dev@example.com"},
                {"GIT_COMMITTER_NAME", "Dev"},
                {"GIT_COMMITTER_EMAIL", "dev@example.com"}});
}

CommandResult RunSession(const std::string& ws, const std::string& script,
                         const std::string& profile) {
  std::vector<std::string> args = {"run"};
  if (!profile.empty()) args.push_back(profile);
  args.insert(args.end(), {"--", "sh", "-c", script});
  return Lazaret(ws, args);
}

CommandResult Held(const std::string& ws, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"held"};
  all.insert(all.end(), args.begin(), args.end());
  return Lazaret(ws, all);
}

namespace {

HeldListing ParseListing(const CommandResult& r) {
  HeldListing listing;
  listing.raw = r.out + r.err;
  if (r.exit_code != 0) {
    listing.error = absl::StrCat("lazaret held list --json: exit ", r.exit_code, ": ", r.err);
    return listing;
  }
  google::protobuf::Value v;
  const auto s = google::protobuf::util::JsonStringToMessage(r.out, &v);
  if (!s.ok()) {
    listing.error = absl::StrCat("lazaret held list --json printed no JSON (", s.ToString(),
                                 "): ", r.out);
    return listing;
  }
  CollectEntries(v, &listing);
  return listing;
}

}  // namespace

HeldListing ListHeld(const std::string& ws, const std::string& profile) {
  std::vector<std::string> args = {"list"};
  if (!profile.empty()) args.push_back(profile);
  args.push_back("--json");
  return ParseListing(Held(ws, args));
}

HeldListing ListHeldIn(const std::string& cwd, const std::string& folder) {
  return ParseListing(Held(cwd, {"list", "--workspace", folder, "--json"}));
}

std::map<std::string, std::string> TreeState(const std::string& root,
                                             const std::vector<std::string>& skip) {
  std::map<std::string, std::string> out;
  const int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    out["<root>"] = absl::StrCat("cannot open ", root, ": ", std::strerror(errno));
    return out;
  }
  struct stat st {};
  fstat(fd, &st);
  out["."] = absl::StrCat("dir mode=", absl::Hex(st.st_mode & 07777), " uid=", st.st_uid);
  Walk(fd, "", skip, &out);
  return out;
}

std::string Short(const std::string& rel) {
  if (rel.size() <= 120) return rel;
  return absl::StrCat(rel.substr(0, 40), "...(", rel.size(), " bytes)...",
                      rel.substr(rel.size() - 40));
}

std::string TreeDiff(const std::map<std::string, std::string>& before,
                     const std::map<std::string, std::string>& after) {
  std::string out;
  for (const auto& [rel, text] : before) {
    auto it = after.find(rel);
    if (it == after.end()) {
      absl::StrAppend(&out, "  gone:    ", Short(rel), " (was ", Short(text), ")\n");
    } else if (it->second != text) {
      absl::StrAppend(&out, "  changed: ", Short(rel), ": ", text, " -> ", it->second, "\n");
    }
  }
  for (const auto& [rel, text] : after) {
    if (before.count(rel) == 0) absl::StrAppend(&out, "  new:     ", Short(rel), " (", text, ")\n");
  }
  return out;
}

std::string WriteFunction() {
  return "w() { for try in 1 2 3; do mkdir -p \"$(dirname \"$1\")\" 2>/dev/null; "
         "printf %s \"$2\" | base64 -d > \"$1\" 2>/dev/null && "
         "printf %s \"$2\" | base64 -d | cmp -s - \"$1\" && { echo \"WROTE $1\"; return 0; }; "
         "done; echo \"FAILED $1\"; }\n";
}

std::string WriteCommand(const std::string& rel, const std::string& content) {
  return absl::StrCat("w ", ShellQuote(rel), " ", absl::Base64Escape(content), "\n");
}

void ExpectHeld(const HeldListing& held, const std::map<std::string, std::string>& want,
                const std::string& when) {
  for (const auto& [rel, change] : want) {
    auto it = held.paths.find(rel);
    if (it == held.paths.end()) {
      ADD_FAILURE() << rel << " is not held" << when << ": " << held.raw;
    } else {
      EXPECT_EQ(it->second.change, change) << rel;
    }
  }
}

}  // namespace lazaret::test::e2e::held
