#include "tests/e2e/net_e2e_support.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::test::e2e::net {
namespace {

using ::lazaret::test::ShellQuote;

// A dns probe names its server: the router unless the test chose one.
std::vector<std::string> WithServer(std::vector<std::string> args) {
  if (!args.empty() && args[0] == "dns" &&
      std::find(args.begin(), args.end(), "--server") == args.end()) {
    args.push_back("--server");
    args.push_back("127.0.0.1");
  }
  return args;
}

bool ParseMs(const std::string& s, double* ms) {
  char* end = nullptr;
  *ms = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

}  // namespace

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

ProbeResult ParseProbeLine(const std::string& line) {
  ProbeResult r;
  r.line = line;
  std::vector<std::string> t = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (t.size() == 2 && (t[0] == "ok" || t[0] == "sent")) {
    r.parsed = ParseMs(t[1], &r.ms);
    r.ok = r.parsed;
  } else if (t.size() >= 3 && t[0] == "err") {
    r.error = t[1];
    r.parsed = ParseMs(t[2], &r.ms);
  } else if (t.size() == 3 && t[0] == "optfail") {
    r.optfail = true;
    r.error = t[1] + " " + t[2];
    r.parsed = true;
  } else if (t.size() >= 3 && t[0] == "rcode") {
    r.rcode = t[1];
    r.parsed = ParseMs(t[2], &r.ms);
    r.ok = r.parsed;
    r.answers.assign(t.begin() + 3, t.end());
  }
  return r;
}

FloodLog ParseFlood(const std::string& text) {
  FloodLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> t = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (t.size() == 3 && t[0] == "ok") {
      log.ok_starts.push_back(std::stoll(t[1]));
    } else if (t.size() == 3 && t[0] == "err") {
      log.errors.emplace_back(std::stoll(t[1]), t[2]);
    } else if (t.size() == 3 && t[0] == "done") {
      log.done = true;
      log.ok = std::stol(t[1].substr(t[1].find('=') + 1));
      log.failed = std::stol(t[2].substr(t[2].find('=') + 1));
    } else if (!line.empty()) {
      ++log.bad_lines;
    }
  }
  return log;
}

size_t SuccessesStartedAfter(const FloodLog& log, int64_t t_ns) {
  size_t n = 0;
  for (int64_t s : log.ok_starts) n += s > t_ns ? 1 : 0;
  return n;
}

std::vector<std::string> RunningSandboxes(const std::string& profile) {
  CommandResult r =
      Podman({"ps", "--format", "{{index .Labels \"io.lazaret.session\"}}", "--filter",
              "label=io.lazaret.role=sandbox", "--filter", "label=io.lazaret.profile=" + profile,
              "--filter", "label=io.lazaret.runtime-dir=" + Env().runtime_dir, "--filter",
              "status=running"});
  std::vector<std::string> ids;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipWhitespace())) {
    ids.emplace_back(absl::StripAsciiWhitespace(line));
  }
  return ids;
}

absl::StatusOr<std::unique_ptr<NetSession>> NetSession::Start(const std::string& workspace,
                                                              const std::string& config,
                                                              const std::string& profile,
                                                              const std::string& log) {
  std::unique_ptr<NetSession> s(new NetSession());
  s->workspace_ = workspace;
  s->log_ = log;
  // The running sandboxes of this profile: the new session is the one that
  // is not among them (several sessions of one profile may run at once).
  const auto running = [&] { return RunningSandboxes(profile); };
  const std::vector<std::string> before = running();
  s->pid_ =
      SpawnLazaret(workspace, {"run", "--config", config, profile, "--", "sleep", "3600"}, {}, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(s->pid_, &status, WNOHANG) == s->pid_) {
      s->ended_ = true;
      return absl::FailedPreconditionError(
          absl::StrCat("`lazaret run` of profile ", profile, " ended (status ", status,
                       ") before its sandbox ran:\n", test::ReadFile(log)));
    }
    std::string id;
    for (const std::string& candidate : running()) {
      if (std::find(before.begin(), before.end(), candidate) == before.end()) id = candidate;
    }
    if (!id.empty()) {
      s->id_ = id;
      s->resolv_conf_is_router_ =
          Trim(s->Exec({"cat", "/etc/resolv.conf"}).out) == kRouterResolvConf;
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no running sandbox of profile ", profile, ":\n", test::ReadFile(log)));
}

NetSession::~NetSession() {
  if (!ended_) End();
}

pid_t NetSession::RouterPid() const {
  const std::string pid = Inspect(sidecar(), "{{.State.Pid}}");
  return pid.empty() ? 0 : static_cast<pid_t>(std::stol(pid));
}

std::string NetSession::Log() const { return test::ReadFile(log_); }

CommandResult NetSession::Exec(const std::vector<std::string>& argv,
                               const std::string& user) const {
  std::vector<std::string> args = {"exec"};
  if (!user.empty()) args.push_back("--user=" + user);
  args.push_back(sandbox());
  args.insert(args.end(), argv.begin(), argv.end());
  return Podman(args);
}

CommandResult NetSession::Getent(const std::vector<std::string>& args) const {
  if (!resolv_conf_is_router_) {
    CommandResult r;
    r.err = "not resolved: /etc/resolv.conf inside names a resolver other than the router";
    return r;
  }
  std::vector<std::string> argv = {"getent"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Exec(argv);
}

CommandResult NetSession::Shell(const std::string& script) const {
  return Exec({"sh", "-c", script});
}

ProbeResult NetSession::Probe(const std::vector<std::string>& args, const std::string& user) const {
  std::vector<std::string> argv = {kProbe};
  for (auto& a : WithServer(args)) argv.push_back(a);
  CommandResult r = Exec(argv, user);
  ProbeResult p = ParseProbeLine(Trim(r.out));
  if (!p.parsed) p.line = absl::StrCat(r.out, r.err, " (exit ", r.exit_code, ")");
  return p;
}

std::map<std::string, ProbeResult> NetSession::Probes(const std::vector<ProbeCall>& calls,
                                                      bool parallel) const {
  std::string script;
  for (const auto& c : calls) {
    std::vector<std::string> quoted = {kProbe};
    for (const auto& a : WithServer(c.args)) quoted.push_back(ShellQuote(a));
    // Each result is one short line written at once: lines of parallel
    // probes do not mix.
    absl::StrAppend(&script, parallel ? "( " : "", "r=$(", absl::StrJoin(quoted, " "),
                    " 2>&1); echo ", ShellQuote(c.label), " \"$r\"", parallel ? " ) &\n" : "\n");
  }
  if (parallel) script += "wait\n";
  CommandResult r = Shell(script);
  std::map<std::string, ProbeResult> out;
  for (const auto& c : calls) out[c.label].line = "no output (" + r.err + ")";
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = ParseProbeLine(line.substr(sp + 1));
  }
  return out;
}

CommandResult NetSession::RouterIp(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"nsenter",
                                   "--net=/proc/" + std::to_string(RouterPid()) + "/ns/net", "ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::Run(argv);
}

std::string NetSession::RouterSysctl(const std::string& path) const {
  return Trim(test::Run({"nsenter", "--net=/proc/" + std::to_string(RouterPid()) + "/ns/net", "cat",
                         "/proc/sys/net/" + path})
                  .out);
}

int NetSession::End(int timeout_seconds) {
  if (ended_) return -1;
  ended_ = true;
  kill(pid_, SIGTERM);
  return WaitChild(pid_, timeout_seconds);
}

int NetSession::WaitExit(int timeout_seconds) {
  if (ended_) return -1;
  ended_ = true;
  return WaitChild(pid_, timeout_seconds);
}

CommandResult LazaretNet(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"net"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Lazaret("/", argv);
}

std::string DefaultDenyWith(const std::vector<std::string>& extra) {
  std::vector<std::string> deny = {
      "0.0.0.0/8",      "10.0.0.0/8",   "100.64.0.0/10",  "127.0.0.0/8",   "169.254.0.0/16",
      "172.16.0.0/12",  "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
      "240.0.0.0/4",    "::/128",       "::1/128",        "::ffff:0:0/96", "64:ff9b::/96",
      "64:ff9b:1::/48", "100::/64",     "2002::/16",      "fc00::/7",      "fe80::/10",
      "fec0::/10",      "ff00::/8"};
  deny.insert(deny.end(), extra.begin(), extra.end());
  std::vector<std::string> quoted;
  for (const auto& d : deny) quoted.push_back("\"" + d + "\"");
  return "[" + absl::StrJoin(quoted, ", ") + "]";
}

}  // namespace lazaret::test::e2e::net
