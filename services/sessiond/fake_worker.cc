// A stand-in for `lazaret-sessiond --session-worker` and `--reap-session`
// in sessiond_test: speaks the descriptor-3 protocol (one StartRequest in,
// WorkerReport packets out) and acts out what its first argument names,
// without podman. A spare (StartRequest.spare) reports ready with its pid
// as session id, then waits for SIGTERM or the request it is adopted for.
// Runs as the test's user, started by the WorkerTable under test.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "lazaret/session/v1/session.pb.h"

namespace {

namespace pb = ::lazaret::session::v1;

constexpr int kControlFd = 3;
constexpr size_t kMaxPacketBytes = 1 << 20;

void Send(const pb::WorkerReport& r) {
  const std::string bytes = r.SerializeAsString();
  (void)!send(kControlFd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

void Notice(const std::string& text) {
  pb::WorkerReport r;
  r.mutable_event()->set_notice(text);
  Send(r);
}

// One StartRequest packet from the control socket; false at its end or for
// a packet that does not parse.
bool ReceiveRequest(pb::StartRequest* req) {
  std::string buf(kMaxPacketBytes, '\0');
  ssize_t n;
  do {
    n = recv(kControlFd, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  return n > 0 && req->ParseFromArray(buf.data(), static_cast<int>(n));
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

// What a worker does with `req` (args: WHAT [SESSION_ID]), whether it was
// started for it or adopted as a spare.
int Serve(const pb::StartRequest& req) {
  if (req.args_size() == 0) return 64;
  const std::string& what = req.args(0);
  const std::string id = req.args_size() > 1 ? req.args(1) : "";
  const std::string marker = req.workspace_dir() + "/terminated";
  // "decline" is declined by a spare only; a worker started for it starts.
  if (what == "start" || what == "decline") {
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

// A spare: ready at once, as session id its pid in 12 hex digits (so a
// test can tell which process serves a session). Then either SIGTERM
// (leaves `spare-terminated`) or the request it is adopted for: "decline"
// is declined (leaves `declined`), anything else is served (leaves
// `adopted` holding the request's arguments).
int Spare(const pb::StartRequest& spare) {
  const std::string ws = spare.workspace_dir();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) return 66;

  char id[32];
  std::snprintf(id, sizeof(id), "%012x", static_cast<unsigned>(getpid()));
  pb::WorkerReport ready;
  ready.set_spare_ready(id);
  Send(ready);

  pollfd fds[2] = {{kControlFd, POLLIN, 0}, {sfd, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 67;
    }
    if (fds[1].revents != 0) {
      std::ofstream(ws + "/spare-terminated") << "terminated\n";
      return 0;
    }
    if (fds[0].revents != 0) break;
  }
  close(sfd);

  pb::StartRequest req;
  if (!ReceiveRequest(&req) || req.args_size() == 0) return 64;
  if (req.args(0) == "decline") {
    std::ofstream(req.workspace_dir() + "/declined") << "declined\n";
    pb::WorkerReport declined;
    declined.set_spare_declined("test");
    Send(declined);
    return 0;
  }
  std::string args;
  for (const std::string& a : req.args()) args += (args.empty() ? "" : " ") + a;
  std::ofstream(req.workspace_dir() + "/adopted") << args << "\n";
  return Serve(req);
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

  pb::StartRequest req;
  if (!ReceiveRequest(&req)) return 64;
  return req.spare() ? Spare(req) : Serve(req);
}
