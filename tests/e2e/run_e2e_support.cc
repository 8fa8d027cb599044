#include "tests/e2e/run_e2e_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace lazaret::test::e2e {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string E2eRoot() { return EnvOr("LAZARET_E2E_ROOT", LAZARET_E2E_ROOT_DEFAULT); }

ModeEnv MakeEnv() {
  ModeEnv e;
  if (CurrentMode() == Mode::kRootful) {
    e.user = "root";
    e.home = E2eRoot() + "/root/home";
    e.runtime_dir = E2eRoot() + "/root/run";
    e.vars = {{"HOME", e.home},
              {"LAZARET_RUNTIME_DIR", e.runtime_dir},
              {"PATH", EnvOr("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")},
              {"LANG", "C.UTF-8"}};
    return e;
  }
  e.user = EnvOr("LAZARET_E2E_USER", LAZARET_E2E_USER_DEFAULT);
  const passwd* pw = getpwnam(e.user.c_str());
  if (pw == nullptr) std::abort();  // the user-setup fixture creates it
  e.uid = pw->pw_uid;
  e.gid = pw->pw_gid;
  e.home = pw->pw_dir;
  const std::string xdg = "/run/user/" + std::to_string(e.uid);
  e.runtime_dir = xdg + "/lazaret";
  e.vars = {{"HOME", e.home},
            {"USER", e.user},
            {"LOGNAME", e.user},
            {"XDG_RUNTIME_DIR", xdg},
            {"PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"},
            {"LANG", "C.UTF-8"}};
  return e;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      out.emplace_back(e->d_name);
    }
  }
  closedir(d);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

std::vector<std::string> SplitNul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A JSON value as `lazaret ps --json` prints them. The support library is
// linked into binaries without protobuf (persist_bench), so it reads JSON
// itself: RFC 8259 values, nesting bounded.
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // a string's value, a number's characters
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  // The member `name` of an object, or nullptr.
  const JsonValue* Member(const std::string& name) const {
    for (const auto& [k, v] : members) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  // The member `name` when it is a string.
  std::optional<std::string> StringMember(const std::string& name) const {
    const JsonValue* v = Member(name);
    if (v == nullptr || v->kind != Kind::kString) return std::nullopt;
    return v->text;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  // Exactly one value, with nothing but white space around it.
  bool ReadDocument(JsonValue* out) {
    if (!Value(out, 0)) return false;
    SkipSpace();
    return at_ == s_.size();
  }

 private:
  static constexpr int kMaxDepth = 32;

  void SkipSpace() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\r' || s_[at_] == '\t')) {
      ++at_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool Word(const std::string& word) {
    if (s_.compare(at_, word.size(), word) != 0) return false;
    at_ += word.size();
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (at_ < s_.size()) {
      const char c = s_[at_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (at_ >= s_.size()) return false;
      const char e = s_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          // A surrogate half stays a code unit of its own: the values read
          // here (ids, paths) are compared, never printed.
          if (s_.size() - at_ < 4) return false;
          uint32_t cp = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[at_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') {
              cp |= static_cast<uint32_t>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
              cp |= static_cast<uint32_t>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
              cp |= static_cast<uint32_t>(h - 'A' + 10);
            } else {
              return false;
            }
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool Value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (at_ >= s_.size()) return false;
    const char c = s_[at_];
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return String(&v->text);
    }
    if (c == '{') {
      ++at_;
      v->kind = JsonValue::Kind::kObject;
      if (Eat('}')) return true;
      do {
        std::pair<std::string, JsonValue> m;
        if (!String(&m.first) || !Eat(':') || !Value(&m.second, depth + 1)) return false;
        v->members.push_back(std::move(m));
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++at_;
      v->kind = JsonValue::Kind::kArray;
      if (Eat(']')) return true;
      do {
        JsonValue item;
        if (!Value(&item, depth + 1)) return false;
        v->items.push_back(std::move(item));
      } while (Eat(','));
      return Eat(']');
    }
    if (Word("true") || Word("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = c == 't';
      return true;
    }
    if (Word("null")) return true;
    const size_t start = at_;
    while (at_ < s_.size() && std::strchr("+-0123456789.eE", s_[at_]) != nullptr) ++at_;
    if (at_ == start) return false;
    v->kind = JsonValue::Kind::kNumber;
    v->text = s_.substr(start, at_ - start);
    return true;
  }

  const std::string& s_;
  size_t at_ = 0;
};

// True when `pid` has a file descriptor open on `dir` or below it.
bool HoldsOpenBelow(pid_t pid, const std::string& dir) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const std::string& fd : ListDir(fds)) {
    char target[PATH_MAX];
    const ssize_t n = readlink((fds + "/" + fd).c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    const std::string t(target, static_cast<size_t>(n));
    if (t == dir || t.rfind(dir + "/", 0) == 0) return true;
  }
  return false;
}

}  // namespace

Mode CurrentMode() {
  const char* v = std::getenv("LAZARET_E2E_MODE");
  return v != nullptr && std::string(v) == "rootless" ? Mode::kRootless : Mode::kRootful;
}
bool IsRootless() { return CurrentMode() == Mode::kRootless; }
const char* ModeName() { return IsRootless() ? "rootless" : "rootful"; }

const ModeEnv& Env() {
  static const ModeEnv* const kEnv = new ModeEnv(MakeEnv());
  return *kEnv;
}

std::vector<std::string> AsMode(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& extra) {
  const ModeEnv& e = Env();
  std::map<std::string, std::string> vars = e.vars;
  for (const auto& [k, v] : extra) vars[k] = v;
  std::vector<std::string> out;
  if (IsRootless()) {
    out = {"setpriv", "--reuid=" + std::to_string(e.uid), "--regid=" + std::to_string(e.gid),
           "--init-groups", "--"};
  }
  out.push_back("env");
  out.push_back("-i");
  for (const auto& [k, v] : vars) {
    if (!v.empty()) out.push_back(k + "=" + v);
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

CommandResult RunAs(const std::string& cwd, const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& extra, const std::string& input) {
  std::vector<std::string> full = {"sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", cwd};
  for (auto& a : AsMode(argv, extra)) full.push_back(a);
  return test::Run(full, {}, input);
}

CommandResult Lazaret(const std::string& cwd, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra) {
  std::vector<std::string> argv = {test::Binary("lazaret")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunAs(cwd, argv, extra);
}

CommandResult Podman(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"podman"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunAs("/", argv);
}

pid_t SpawnLazaret(const std::string& cwd, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& extra, const std::string& log) {
  std::vector<std::string> argv = {test::Binary("lazaret")};
  argv.insert(argv.end(), args.begin(), args.end());
  return SpawnAs(cwd, argv, extra, log);
}

pid_t SpawnAs(const std::string& cwd, const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& extra, const std::string& log) {
  std::vector<std::string> full = AsMode(argv, extra);
  std::vector<char*> cargv;
  for (auto& s : full) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // setpriv and env exec in place: this pid becomes lazaret.
    if (chdir(cwd.c_str()) != 0) _exit(126);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    setpgid(0, 0);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

int WaitChild(pid_t pid, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

UserDir::UserDir(const std::string& prefix) {
  const std::string base = E2eRoot();
  mkdir(base.c_str(), 0755);
  chmod(base.c_str(), 0755);
  std::string tmpl = base + "/" + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
  chmod(path_.c_str(), 0755);
  if (chown(path_.c_str(), Env().uid, Env().gid) != 0) std::abort();
}

UserDir::~UserDir() { test::Run({"rm", "-rf", path_}); }

UserConfig::UserConfig(const std::string& marker, const std::string& text) {
  const std::string dir = Env().home + "/.config/lazaret";
  RunAs("/", {"mkdir", "-p", dir});
  path_ = dir + "/config.toml";
  struct stat st {};
  had_one_ = stat(path_.c_str(), &st) == 0;
  if (had_one_) before_ = test::ReadFile(path_);
  if (before_.rfind(marker, 0) == 0) had_one_ = false;
  std::ofstream(path_) << marker << text;
  chmod(path_.c_str(), 0644);
  if (chown(path_.c_str(), Env().uid, Env().gid) != 0) error_ = "chown " + path_;
}

UserConfig::~UserConfig() {
  if (had_one_) {
    std::ofstream(path_) << before_;
  } else {
    unlink(path_.c_str());
  }
}

std::string UserDir::Write(const std::string& name, const std::string& content) const {
  const std::string p = path_ + "/" + name;
  std::ofstream(p) << content;
  chmod(p.c_str(), 0644);
  if (chown(p.c_str(), Env().uid, Env().gid) != 0) std::abort();
  return p;
}

std::vector<std::string> SpareIds() {
  const std::string sessions = Env().runtime_dir + "/sessions";
  std::vector<std::string> out;
  for (const std::string& id : ListDir(sessions)) {
    struct stat st {};
    if (lstat((sessions + "/" + id + "/spare").c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      out.push_back(id);
    }
  }
  return out;
}

std::vector<std::string> SessionContainers() {
  CommandResult r = Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.runtime-dir=" + Env().runtime_dir});
  // The spares after the containers: a spare's directory and marker exist
  // before its sidecar is created.
  const std::vector<std::string> spares = SpareIds();
  std::vector<std::string> out;
  for (const std::string& name : Lines(r.out)) {
    const bool spare = std::any_of(spares.begin(), spares.end(), [&](const std::string& id) {
      return name == "lazaret-" + id + "-sidecar";
    });
    if (!spare) out.push_back(name);
  }
  return out;
}

std::vector<std::string> SessionDirs() {
  const std::vector<std::string> all = ListDir(Env().runtime_dir + "/sessions");
  const std::vector<std::string> spares = SpareIds();
  std::vector<std::string> out;
  for (const std::string& d : all) {
    if (!Contains(spares, d)) out.push_back(d);
  }
  return out;
}

std::vector<std::string> LeftBehind(int timeout_seconds) {
  std::vector<std::string> left;
  test::WaitFor(
      [&] {
        left = SessionContainers();
        for (const std::string& d : SessionDirs()) left.push_back("sessions/" + d);
        return left.empty();
      },
      std::chrono::seconds(timeout_seconds));
  return left;
}

std::vector<std::string> PsSessions() {
  CommandResult r = Lazaret("/", {"ps"});
  std::vector<std::string> out;
  for (const auto& l : Lines(r.out)) {
    if (l.rfind("SESSION", 0) == 0 || l.rfind("Orphaned", 0) == 0) continue;
    out.push_back(l.substr(0, l.find(' ')));
  }
  return out;
}

PsListing PsJson() {
  PsListing out;
  CommandResult r = Lazaret("/", {"ps", "--json"});
  if (r.exit_code != 0) {
    out.error = absl::StrCat("lazaret ps --json exited ", r.exit_code, ": ", Trim(r.err));
    return out;
  }
  JsonValue doc;
  if (!JsonReader(r.out).ReadDocument(&doc) || doc.kind != JsonValue::Kind::kObject) {
    out.error = "lazaret ps --json printed no JSON object: " + r.out.substr(0, 2000);
    return out;
  }
  const JsonValue* sessions = doc.Member("sessions");
  const JsonValue* spares = doc.Member("spares");
  if (sessions == nullptr || sessions->kind != JsonValue::Kind::kArray || spares == nullptr ||
      spares->kind != JsonValue::Kind::kArray) {
    out.error = "lazaret ps --json has no arrays sessions and spares: " + r.out.substr(0, 2000);
    return out;
  }
  for (const JsonValue& s : sessions->items) {
    std::optional<std::string> id = s.StringMember("id");
    if (!id.has_value()) {
      out.error = "a session without an id in: " + r.out.substr(0, 2000);
      return out;
    }
    out.session_ids.push_back(*id);
  }
  for (const JsonValue& s : spares->items) {
    std::optional<std::string> id = s.StringMember("id");
    std::optional<std::string> workspace = s.StringMember("workspace");
    const JsonValue* ready = s.Member("ready");
    if (!id.has_value() || !workspace.has_value() || ready == nullptr ||
        ready->kind != JsonValue::Kind::kBool) {
      out.error = "a spare without id, workspace or ready in: " + r.out.substr(0, 2000);
      return out;
    }
    out.spares.push_back({*id, *workspace, ready->boolean});
  }
  return out;
}

std::string WaitForReadySpare(const std::string& workspace, int timeout_seconds,
                              const std::string& not_id) {
  char resolved[PATH_MAX];
  const std::string canonical =
      realpath(workspace.c_str(), resolved) != nullptr ? std::string(resolved) : workspace;
  std::string id;
  test::WaitFor(
      [&] {
        for (const PsSpare& s : PsJson().spares) {
          if (s.ready && s.workspace == canonical && !s.id.empty() && s.id != not_id) {
            id = s.id;
            return true;
          }
        }
        // Each look runs the CLI; a few a second are enough.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return false;
      },
      std::chrono::seconds(timeout_seconds));
  return id;
}

pid_t SessionWorkerPid(const std::string& id) {
  const std::string runtime_flag = "--runtime-dir=" + Env().runtime_dir;
  const std::string dir = Env().runtime_dir + "/sessions/" + id;
  pid_t worker = -1;
  test::WaitFor(
      [&] {
        std::vector<pid_t> found;
        for (const std::string& name : ListDir("/proc")) {
          const pid_t pid = std::atoi(name.c_str());
          if (pid <= 0) continue;
          const std::vector<std::string> args = absl::StrSplit(
              test::ReadFile("/proc/" + name + "/cmdline"), '\0', absl::SkipEmpty());
          if (Contains(args, "--session-worker") && Contains(args, runtime_flag) &&
              HoldsOpenBelow(pid, dir)) {
            found.push_back(pid);
          }
        }
        worker = found.size() == 1 ? found[0] : -1;
        return worker > 0;
      },
      std::chrono::seconds(10));
  return worker;
}

std::string WaitForRunningSession(int timeout_seconds) {
  std::string id;
  test::WaitFor(
      [&] {
        CommandResult r = Podman({"ps", "--format", "{{index .Labels \"io.lazaret.session\"}}",
                                  "--filter", "label=io.lazaret.role=sandbox", "--filter",
                                  "label=io.lazaret.runtime-dir=" + Env().runtime_dir, "--filter",
                                  "status=running"});
        auto l = Lines(r.out);
        if (l.empty()) return false;
        id = l[0];
        return true;
      },
      std::chrono::seconds(timeout_seconds));
  return id;
}

std::string Inspect(const std::string& name, const std::string& format) {
  return Trim(Podman({"inspect", "--format", format, name}).out);
}

std::vector<std::vector<std::string>> ProcessesWith(const std::string& needle) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : ListDir("/proc")) {
    if (p.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = test::ReadFile("/proc/" + p + "/cmdline");
    if (cmdline.find(needle) != std::string::npos) out.push_back(SplitNul(cmdline));
  }
  return out;
}

bool AnyCommandLineContains(const std::string& needle) { return !ProcessesWith(needle).empty(); }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string UnreachableFromHost(const std::string& url) {
  CommandResult r = test::Run({"timeout", "30", "curl", "--silent", "--show-error", "--noproxy",
                               "*", "--max-time", "20", "--output", "/dev/null", url});
  if (r.exit_code == 0) return "";
  return absl::StrCat(url, " cannot be reached from this machine (curl exit ", r.exit_code, ": ",
                      Trim(r.err), ")");
}

std::string InstallNodeAndNpmScript() {
  return absl::StrCat(
      "export DEBIAN_FRONTEND=noninteractive\n"
      "if ! command -v node >/dev/null; then\n"
      "  timeout 600 apt-get -o APT::Sandbox::User=root update -q >/tmp/apt.log 2>&1 || "
      "{ tail -20 /tmp/apt.log; exit 71; }\n"
      "  timeout 900 apt-get -o APT::Sandbox::User=root install -y -q --no-install-recommends "
      "nodejs >>/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 72; }\n"
      "  echo 'step: nodejs installed with apt'\n"
      "fi\n"
      "echo \"node $(node --version)\"\n"
      "if ! command -v npm >/dev/null; then\n"
      "  timeout 300 node -e ",
      ShellQuote(absl::StrCat(
          "(async () => { const r = await fetch('", kNpmTarball, "'); ",
          "if (!r.ok) throw new Error('HTTP ' + r.status); ",
          "require('fs').writeFileSync('/tmp/npm.tgz', Buffer.from(await r.arrayBuffer())); ",
          "})().catch(e => { console.error(String(e), e.cause); process.exit(74); })")),
      " || { getent hosts registry.npmjs.org; exit 74; }\n"
      "  mkdir -p /usr/local/lib/npm\n"
      "  tar -xzf /tmp/npm.tgz -C /usr/local/lib/npm --strip-components=1 --no-same-owner\n"
      "  ln -s ../lib/npm/bin/npm-cli.js /usr/local/bin/npm\n"
      "  echo 'step: npm fetched'\n"
      "fi\n");
}

}  // namespace lazaret::test::e2e
