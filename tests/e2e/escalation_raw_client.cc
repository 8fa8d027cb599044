// escalation_raw_client: a static test client of the escalation wire that
// writes frames itself, for what lazaret-escalate never sends. Runs inside
// the sandbox as the agent (unprivileged; mounted read-only at /opt/probe),
// and on the host for the fork+exec baseline. Prints one machine-parseable
// line per result; the broker's answers are untrusted text and only
// printed or counted.
//
//   [--endpoint IPV4:PORT] [--certs D] [--profile NAME] [--io-timeout S] MODE ...
//   send (--payload-file F | --payload-json J) [--len-override N]
//       -> "frame <json>" per server frame, then "end <how>"
//   replay --id ID --argv0 X [ARGS...]
//       -> the same request on two connections: "frame <n> <json>", "end <n> <how>"
//   flood --n N --parallel P --argv A...
//       -> "flood sent=.. answered=.. ran=.. denied=.. protocol_error=.. lost=.. dup=.."
//          and "reason <count> <text>" per distinct refusal reason
//   resume -> "resume first=<how> second=<how> reused=0|1 tickets=N"
//   bench-rtt --n N --argv A...        -> "rtt n=.. ok=.. p50_ms=.. p99_ms=.."
//   bench-load --clients C --seconds S --argv A...
//       -> "load clients=.. seconds=.. requests=.. answered=.. rps=.. lost=.. dup=.."
//   host-exec-baseline --n N [--exe /bin/true] -> "baseline n=.. p50_ms=.. p99_ms=.."
//   unix-bind PATH      -> "bound" or "err ERRNO"
//   unix-connect PATH   -> "connected" or "err ERRNO" (@NAME: abstract)
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/escalation_raw_conn.h"

namespace lazaret::test::rawesc {
namespace {

struct Args {
  ClientOptions client;
  std::string mode;
  std::string payload;
  bool have_payload = false;
  int64_t len_override = -1;
  std::string id;
  std::vector<std::string> argv;
  int n = 1, parallel = 1, clients = 1, seconds = 1;
  std::string exe = "/bin/true";
  std::string path;
};

int Usage(const std::string& why) {
  std::fprintf(stderr, "escalation_raw_client: %s\n", why.c_str());
  return 2;
}

// One request on one connection: the result frame (if any), how many
// result frames came, and how the connection ended.
struct Exchange {
  bool opened = false;
  int results = 0;
  Frame result;
  std::string end;
};

Exchange Ask(const Context& ctx, const std::string& payload) {
  Exchange x;
  Conn c(ctx);
  if (!c.Open()) {
    x.end = c.end();
    return x;
  }
  x.opened = true;
  if (!c.WriteFrame(payload)) {
    x.end = c.end();
    return x;
  }
  std::string f;
  while (c.ReadFrame(&f)) {
    Frame fr = ParseFrame(f);
    if (fr.result) {
      ++x.results;
      x.result = fr;
    }
  }
  x.end = c.end();
  return x;
}

void PrintExchange(const Context& ctx, const std::string& payload, int64_t len_override,
                   const std::string& tag) {
  Conn c(ctx);
  if (c.Open() && c.WriteFrame(payload, len_override)) {
    // A truncated frame: nothing more will come from this side.
    if (len_override > static_cast<int64_t>(payload.size())) {
      SSL_shutdown(c.ssl());
    }
    std::string f;
    while (c.ReadFrame(&f)) std::printf("frame %s%s\n", tag.c_str(), f.c_str());
  }
  std::printf("end %s%s\n", tag.c_str(), c.end().c_str());
}

int Send(const Context& ctx, const Args& a) {
  if (!a.have_payload) return Usage("send needs --payload-file or --payload-json");
  PrintExchange(ctx, a.payload, a.len_override, "");
  return 0;
}

int Replay(const Context& ctx, const Args& a) {
  if (a.id.empty() || a.argv.empty()) return Usage("replay needs --id and --argv0");
  const std::string payload = RequestJson(a.id, ctx.profile(), a.argv);
  PrintExchange(ctx, payload, -1, "1 ");
  PrintExchange(ctx, payload, -1, "2 ");
  return 0;
}

struct Tally {
  std::mutex mu;
  long answered = 0, ran = 0, denied = 0, protocol_error = 0, lost = 0, dup = 0;
  std::set<std::string> seen;
  std::map<std::string, long> reasons;
  std::map<std::string, long> ends;

  void Add(const std::string& id, const Exchange& x) {
    std::lock_guard<std::mutex> l(mu);
    if (x.results == 0) {
      ++lost;
      ++ends[x.end];
      return;
    }
    if (x.results > 1 || x.result.request_id != id || !seen.insert(id).second) ++dup;
    ++answered;
    if (x.result.protocol_error) {
      ++protocol_error;
      ++reasons[x.result.reason];
    } else if (x.result.approved) {
      ++ran;
    } else {
      ++denied;
      ++reasons[x.result.reason];
    }
  }
  void PrintReasons() {
    for (const auto& [r, n] : reasons) std::printf("reason %ld %s\n", n, r.c_str());
    for (const auto& [e, n] : ends) std::printf("lost-end %ld %s\n", n, e.c_str());
  }
};

int Flood(const Context& ctx, const Args& a) {
  if (a.argv.empty()) return Usage("flood needs --argv");
  Tally t;
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int p = 0; p < a.parallel; ++p) {
    workers.emplace_back([&] {
      while (next.fetch_add(1) < a.n) {
        const std::string id = NewRequestId("flood-");
        t.Add(id, Ask(ctx, RequestJson(id, ctx.profile(), a.argv)));
      }
    });
  }
  for (auto& w : workers) w.join();
  std::printf("flood sent=%d answered=%ld ran=%ld denied=%ld protocol_error=%ld lost=%ld dup=%ld\n",
              a.n, t.answered, t.ran, t.denied, t.protocol_error, t.lost, t.dup);
  t.PrintReasons();
  return 0;
}

int Resume(const Context& ctx) {
  std::string first, second;
  int reused = 0;
  SSL_SESSION* sess = nullptr;
  {
    Conn c(ctx);
    if (c.Open() &&
        c.WriteFrame(RequestJson(NewRequestId("resume-"), ctx.profile(), {"uname", "-s"}))) {
      std::string f;
      while (c.ReadFrame(&f)) {
      }
    }
    first = c.end();
    if (c.ssl() != nullptr) sess = SSL_get1_session(c.ssl());
  }
  {
    Conn c(ctx);
    const bool open = c.Open(sess);
    if (open) {
      reused = SSL_session_reused(c.ssl());
      if (c.WriteFrame(RequestJson(NewRequestId("resume-"), ctx.profile(), {"uname", "-s"}))) {
        std::string f;
        while (c.ReadFrame(&f)) {
        }
      }
    }
    second = c.end();
  }
  const int resumable = sess != nullptr ? SSL_SESSION_is_resumable(sess) : 0;
  SSL_SESSION_free(sess);
  std::printf("resume first=%s second=%s reused=%d resumable=%d tickets=%d\n", first.c_str(),
              second.c_str(), reused, resumable, Context::TicketsSeen());
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

int BenchRtt(const Context& ctx, const Args& a) {
  if (a.argv.empty()) return Usage("bench-rtt needs --argv");
  std::vector<double> ms;
  int ok = 0;
  for (int i = 0; i < a.n; ++i) {
    const std::string id = NewRequestId("rtt-");
    const double t0 = NowMs();
    Exchange x = Ask(ctx, RequestJson(id, ctx.profile(), a.argv));
    ms.push_back(NowMs() - t0);
    if (x.results == 1 && x.result.approved && x.result.exit_code == 0) ++ok;
  }
  std::printf("rtt n=%d ok=%d p50_ms=%.3f p99_ms=%.3f\n", a.n, ok, Percentile(ms, 0.5),
              Percentile(ms, 0.99));
  return 0;
}

int BenchLoad(const Context& ctx, const Args& a) {
  if (a.argv.empty()) return Usage("bench-load needs --argv");
  Tally t;
  std::atomic<long> requests{0};
  const double end = NowMs() + a.seconds * 1000.0;
  const double t0 = NowMs();
  std::vector<std::thread> workers;
  for (int c = 0; c < a.clients; ++c) {
    workers.emplace_back([&] {
      while (NowMs() < end) {
        const std::string id = NewRequestId("load-");
        requests.fetch_add(1);
        t.Add(id, Ask(ctx, RequestJson(id, ctx.profile(), a.argv)));
      }
    });
  }
  for (auto& w : workers) w.join();
  const double secs = (NowMs() - t0) / 1000.0;
  std::printf(
      "load clients=%d seconds=%.1f requests=%ld answered=%ld ran=%ld rps=%.1f lost=%ld dup=%ld\n",
      a.clients, secs, requests.load(), t.answered, t.ran, t.answered / secs, t.lost, t.dup);
  t.PrintReasons();
  return 0;
}

int HostExecBaseline(const Args& a) {
  std::vector<double> ms;
  char* const argv[] = {const_cast<char*>(a.exe.c_str()), nullptr};
  char* const envp[] = {nullptr};
  for (int i = 0; i < a.n; ++i) {
    const double t0 = NowMs();
    const pid_t pid = fork();
    if (pid == 0) {
      execve(argv[0], argv, envp);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ms.push_back(NowMs() - t0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Usage("the baseline command failed");
  }
  std::printf("baseline n=%d p50_ms=%.3f p99_ms=%.3f\n", a.n, Percentile(ms, 0.5),
              Percentile(ms, 0.99));
  return 0;
}

int UnixSocket(const Args& a, bool bind_it) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socklen_t len = sizeof addr;
  if (!a.path.empty() && a.path[0] == '@') {
    std::memcpy(addr.sun_path + 1, a.path.data() + 1, a.path.size() - 1);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + a.path.size());
  } else {
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", a.path.c_str());
  }
  const int r = bind_it ? bind(fd, reinterpret_cast<sockaddr*>(&addr), len)
                        : connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
  if (r != 0) {
    std::printf("err %s\n", strerrorname_np(errno));
    return 0;
  }
  if (bind_it && listen(fd, 1) != 0) {
    std::printf("err %s\n", strerrorname_np(errno));
    return 0;
  }
  std::printf(bind_it ? "bound\n" : "connected\n");
  close(fd);
  return 0;
}

bool ReadFileText(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

int Main(int argc, char** argv) {
  Args a;
  int i = 1;
  auto next = [&](const char* flag, std::string* out) {
    if (i + 1 >= argc) return false;
    *out = argv[++i];
    (void)flag;
    return true;
  };
  for (; i < argc; ++i) {
    const std::string f = argv[i];
    std::string v;
    if (f == "--endpoint" && next("--endpoint", &a.client.endpoint)) continue;
    if (f == "--certs" && next("--certs", &a.client.certs)) continue;
    if (f == "--profile" && next("--profile", &a.client.profile)) continue;
    if (f == "--payload-json" && next(f.c_str(), &a.payload)) {
      a.have_payload = true;
      continue;
    }
    if (f == "--payload-file" && next(f.c_str(), &v)) {
      if (!ReadFileText(v, &a.payload)) return Usage("cannot read " + v);
      a.have_payload = true;
      continue;
    }
    if (f == "--len-override" && next(f.c_str(), &v)) {
      a.len_override = std::strtoll(v.c_str(), nullptr, 10);
      continue;
    }
    if (f == "--id" && next(f.c_str(), &a.id)) continue;
    if (f == "--io-timeout" && next(f.c_str(), &v)) {
      a.client.io_timeout_s = std::atoi(v.c_str());
      continue;
    }
    if (f == "--exe" && next(f.c_str(), &a.exe)) continue;
    if (f == "--n" && next(f.c_str(), &v)) {
      a.n = std::atoi(v.c_str());
      continue;
    }
    if (f == "--parallel" && next(f.c_str(), &v)) {
      a.parallel = std::atoi(v.c_str());
      continue;
    }
    if (f == "--clients" && next(f.c_str(), &v)) {
      a.clients = std::atoi(v.c_str());
      continue;
    }
    if (f == "--seconds" && next(f.c_str(), &v)) {
      a.seconds = std::atoi(v.c_str());
      continue;
    }
    if (f == "--argv" || f == "--argv0") {
      // Everything after it is the request's argv.
      a.argv.assign(argv + i + 1, argv + argc);
      break;
    }
    if (a.mode.empty() && f.rfind("--", 0) != 0) {
      a.mode = f;
      continue;
    }
    if ((a.mode == "unix-bind" || a.mode == "unix-connect") && a.path.empty()) {
      a.path = f;
      continue;
    }
    return Usage("unknown argument: " + f);
  }
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (a.mode == "host-exec-baseline") return HostExecBaseline(a);
  if (a.mode == "unix-bind" || a.mode == "unix-connect") {
    if (a.path.empty()) return Usage("a socket path is needed");
    return UnixSocket(a, a.mode == "unix-bind");
  }
  std::string error;
  std::unique_ptr<Context> ctx(Context::Create(a.client, a.mode == "resume", &error));
  if (ctx == nullptr) {
    std::printf("end certs-failed: %s\n", error.c_str());
    return 1;
  }
  if (a.mode == "send") return Send(*ctx, a);
  if (a.mode == "replay") return Replay(*ctx, a);
  if (a.mode == "flood") return Flood(*ctx, a);
  if (a.mode == "resume") return Resume(*ctx);
  if (a.mode == "bench-rtt") return BenchRtt(*ctx, a);
  if (a.mode == "bench-load") return BenchLoad(*ctx, a);
  return Usage("unknown mode: " + a.mode);
}

}  // namespace
}  // namespace lazaret::test::rawesc

int main(int argc, char** argv) { return lazaret::test::rawesc::Main(argc, argv); }
