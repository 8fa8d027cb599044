#include "tests/e2e/run_e2e_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

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

std::vector<std::string> SessionContainers() {
  CommandResult r = Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.runtime-dir=" + Env().runtime_dir});
  return Lines(r.out);
}

std::vector<std::string> SessionDirs() { return ListDir(Env().runtime_dir + "/sessions"); }

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

pid_t SessionWorkerPid() {
  const std::string runtime_flag = "--runtime-dir=" + Env().runtime_dir;
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmdline = test::ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::vector<std::string> args;
    for (size_t at = 0; at < cmdline.size();) {
      const size_t end = cmdline.find('\0', at);
      args.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
      at = end == std::string::npos ? cmdline.size() : end + 1;
    }
    const auto has = [&](const std::string& a) {
      return std::find(args.begin(), args.end(), a) != args.end();
    };
    if (has("--session-worker") && has(runtime_flag)) found.push_back(pid);
  }
  closedir(proc);
  return found.size() == 1 ? found[0] : -1;
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
