// A stand-in for `lazaret-sessiond --session-worker` and `--reap-session`
// in sessiond_test: speaks the descriptor-3 protocol (one StartRequest in,
// WorkerReport packets out) and acts out what its first argument names,
// without podman. Runs as the test's user, started by the WorkerTable
// under test.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "lazaret/session/v1/session.pb.h"

namespace {

namespace pb = ::lazaret::session::v1;

void Send(const pb::WorkerReport& r) {
  const std::string bytes = r.SerializeAsString();
  (void)!send(3, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

void Notice(const std::string& text) {
  pb::WorkerReport r;
  r.mutable_event()->set_notice(text);
  Send(r);
}

// Blocks until SIGTERM, then leaves `marker` behind as proof.
int AwaitTermThenMark(const std::string& marker) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  std::ofstream(marker) << "terminated\n";
  return 0;
}

int Reap(std::string_view id) {
  std::printf("session %s (profile p):\n  removed its containers\n", std::string(id).c_str());
  std::fflush(stdout);
  if (id == "00000000000a") return 0;  // reaped
  if (id == "00000000000b") return 1;  // something left
  if (id == "00000000000c") pause();   // hangs until killed
  return 2;                            // nothing left
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--reap-session=")) return Reap(a.substr(15));
  }
  // SIGTERM is taken synchronously; block it before anything can send it.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);

  std::string buf(1 << 20, '\0');
  const ssize_t n = recv(3, buf.data(), buf.size(), 0);
  pb::StartRequest req;
  if (n <= 0 || !req.ParseFromArray(buf.data(), static_cast<int>(n)) || req.args_size() == 0) {
    return 64;
  }
  const std::string& what = req.args(0);
  const std::string id = req.args_size() > 1 ? req.args(1) : "";
  const std::string marker = req.workspace_dir() + "/terminated";
  if (what == "start") {
    // Proves what the worker was given: stdin is /dev/null.
    char target[64] = {};
    (void)!readlink("/proc/self/fd/0", target, sizeof(target) - 1);
    Notice(std::string("planning; stdin ") + target);
    pb::WorkerReport info;
    info.mutable_info()->set_id(id);
    info.mutable_info()->set_profile("p");
    info.mutable_info()->set_state(pb::SESSION_STATE_RUNNING);
    info.mutable_info()->set_worker_pid(1);  // a lie sessiond must not pass on
    Send(info);
    pb::WorkerReport started;
    started.mutable_event()->mutable_started()->set_session_id(id);
    started.mutable_event()->mutable_started()->set_attach_socket("/nonexistent/attach.sock");
    Send(started);
    Notice("after started: never relayed");
    return AwaitTermThenMark(marker);
  }
  if (what == "plan") {
    Notice("planning");
    pb::WorkerReport plan;
    plan.mutable_event()->set_plan("the plan\n");
    Send(plan);
    return 0;
  }
  if (what == "die") {
    Notice("about to fail");
    return 3;
  }
  if (what == "hang") {
    Notice("waiting");
    return AwaitTermThenMark(marker);
  }
  return 65;
}
