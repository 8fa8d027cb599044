#include "tests/e2e/escalation_e2e_support.h"

#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "tests/e2e/escalation_e2e_world.h"

namespace lazaret::test::e2e::esc {
namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

CommandResult Escalate(const net::NetSession& s, const std::vector<std::string>& args,
                       const std::vector<std::string>& env) {
  std::vector<std::string> argv;
  if (!env.empty()) {
    argv.push_back("env");
    argv.insert(argv.end(), env.begin(), env.end());
  }
  argv.push_back(kClient);
  argv.insert(argv.end(), args.begin(), args.end());
  return s.Exec(argv);
}

CommandResult Raw(const net::NetSession& s, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kRawClient};
  argv.insert(argv.end(), args.begin(), args.end());
  return s.Exec(argv);
}

int RawExchange::results() const {
  int n = 0;
  for (const auto& f : frames) n += f.has_result() ? 1 : 0;
  return n;
}

EscalateResponse RawExchange::result() const {
  EscalateResponse r;
  for (const auto& f : frames) {
    if (f.has_result()) r = f.result();
  }
  return r;
}

bool RawExchange::pending_seen() const {
  for (const auto& f : frames) {
    if (f.has_pending()) return true;
  }
  return false;
}

RawExchange ParseRawExchange(const std::string& out, const std::string& tag) {
  RawExchange x;
  const std::string frame = tag.empty() ? "frame " : "frame " + tag + " ";
  const std::string end = tag.empty() ? "end " : "end " + tag + " ";
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  for (const auto& l : SplitLines(out)) {
    if (absl::StartsWith(l, frame) && (tag.empty() ? l[6] == '{' : true)) {
      ServerFrame f;
      if (google::protobuf::util::JsonStringToMessage(l.substr(frame.size()), &f, strict).ok()) {
        x.frames.push_back(f);
      } else {
        x.bad_lines.push_back(l);
      }
    } else if (absl::StartsWith(l, end)) {
      x.end = l.substr(end.size());
    } else if (tag.empty()) {
      x.bad_lines.push_back(l);
    }
  }
  return x;
}

std::map<std::string, std::string> RawSummary(const std::string& out, const std::string& word) {
  std::map<std::string, std::string> kv;
  for (const auto& l : SplitLines(out)) {
    if (!absl::StartsWith(l, word + " ")) continue;
    for (absl::string_view t : absl::StrSplit(l.substr(word.size() + 1), ' ', absl::SkipEmpty())) {
      const size_t eq = t.find('=');
      if (eq != absl::string_view::npos)
        kv[std::string(t.substr(0, eq))] = std::string(t.substr(eq + 1));
    }
  }
  return kv;
}

std::map<std::string, long> RawReasons(const std::string& out) {
  std::map<std::string, long> reasons;
  for (const auto& l : SplitLines(out)) {
    if (!absl::StartsWith(l, "reason ")) continue;
    const std::string rest = l.substr(7);
    const size_t sp = rest.find(' ');
    reasons[sp == std::string::npos ? "" : rest.substr(sp + 1)] +=
        std::atol(rest.substr(0, sp).c_str());
  }
  return reasons;
}

std::string RequestJson(const std::string& request_id, const std::string& profile,
                        const std::vector<std::string>& argv) {
  std::string out = absl::StrCat("{\"request_id\":", JsonString(request_id),
                                 ",\"profile\":", JsonString(profile), ",\"argv\":[");
  for (size_t i = 0; i < argv.size(); ++i) absl::StrAppend(&out, i ? "," : "", JsonString(argv[i]));
  return out + "],\"justification\":\"escalation e2e\"}";
}

std::string CommandRequestJson(const std::string& request_id, const std::string& profile,
                               const std::string& command) {
  return absl::StrCat("{\"request_id\":", JsonString(request_id),
                      ",\"profile\":", JsonString(profile), ",\"command\":", JsonString(command),
                      ",\"justification\":\"escalation e2e\"}");
}

std::string NewId(const std::string& prefix) {
  unsigned char r[6] = {};
  if (getrandom(r, sizeof r, 0) != sizeof r) std::abort();
  std::string out = prefix;
  char buf[3];
  for (unsigned char c : r) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

absl::StatusOr<std::vector<AuditRecord>> Audit(const std::string& session) {
  std::vector<std::string> args = {"audit", "--json"};
  if (!session.empty()) {
    args.push_back("--session");
    args.push_back(session);
  }
  CommandResult r = Lazaret("/", args);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("lazaret audit exited ", r.exit_code, ": ", r.err));
  }
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  std::vector<AuditRecord> out;
  for (const auto& l : SplitLines(r.out)) {
    AuditRecord rec;
    if (!google::protobuf::util::JsonStringToMessage(l, &rec, strict).ok()) {
      return absl::DataLossError("an audit line that is not an AuditRecord: " + l);
    }
    out.push_back(rec);
  }
  return out;
}

std::vector<AuditRecord> ByRequestId(const std::vector<AuditRecord>& records,
                                     const std::string& request_id) {
  std::vector<AuditRecord> out;
  for (const auto& r : records) {
    if (r.request_id() == request_id) out.push_back(r);
  }
  return out;
}

std::vector<AuditRecord> WithArgv(const std::vector<AuditRecord>& records,
                                  const std::vector<std::string>& argv) {
  std::vector<AuditRecord> out;
  for (const auto& r : records) {
    if (std::vector<std::string>(r.argv().begin(), r.argv().end()) == argv) out.push_back(r);
  }
  return out;
}

std::string DecisionName(const AuditRecord& r) { return AuditRecord::Decision_Name(r.decision()); }

std::string BrokerSocket() { return Env().runtime_dir + "/brokerd.sock"; }

std::unique_ptr<ScriptedApprover> ScriptedApprover::Start(const std::vector<std::string>& args) {
  std::unique_ptr<ScriptedApprover> a(new ScriptedApprover());
  a->log_ = EscWorld::Get().scratch().path() + "/" + NewId("approver-") + ".log";
  std::vector<std::string> argv = {test::Binary("lazaret-test-approver"),
                                   "--socket=" + BrokerSocket(), "decide"};
  argv.insert(argv.end(), args.begin(), args.end());
  a->pid_ = SpawnAs("/", argv, {}, a->log_);
  return a;
}

ScriptedApprover::~ScriptedApprover() { Stop(); }

int ScriptedApprover::Wait(int timeout_seconds) {
  if (done_) return -1;
  done_ = true;
  return WaitChild(pid_, timeout_seconds);
}

void ScriptedApprover::Stop() {
  if (done_ || pid_ <= 0) return;
  kill(pid_, SIGTERM);
  Wait(10);
}

std::vector<std::string> ScriptedApprover::Decisions() const {
  std::vector<std::string> out;
  for (const auto& l : SplitLines(test::ReadFile(log_))) {
    if (absl::StartsWith(l, "{\"pending\":")) out.push_back(l);
  }
  return out;
}

bool ScriptedApprover::Saw(const std::string& request_id) const {
  for (const auto& l : Decisions()) {
    if (absl::StrContains(l, "\"request_id\":\"" + request_id + "\"")) return true;
  }
  return false;
}

std::string ScriptedApprover::Log() const { return test::ReadFile(log_); }

std::string HostMountSource(const net::NetSession& s, const std::string& destination) {
  return Inspect(s.sandbox(), "{{range .Mounts}}{{if eq .Destination \"" + destination +
                                  "\"}}{{.Source}}{{end}}{{end}}");
}

std::vector<std::vector<std::string>> RunscProcesses(const std::string& container_id) {
  std::vector<std::vector<std::string>> out;
  if (container_id.empty()) return out;
  for (auto& argv : ProcessesWith(container_id)) {
    if (!argv.empty() && absl::StrContains(argv[0], "runsc")) out.push_back(argv);
  }
  return out;
}

std::string HostId() { return Trim(RunAs("/", {"id"}).out); }

}  // namespace lazaret::test::e2e::esc
