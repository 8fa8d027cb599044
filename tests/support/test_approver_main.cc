// lazaret-test-approver: a scripted approver for the escalation tests, and
// the example of what a user's script does with the approver API. Runs on
// the host as the user (brokerd.sock admits only its owner); trusts the
// broker's answers only as far as printing them.
//
//   lazaret-test-approver --socket PATH decide [--session ID] [--argv0 NAME]
//       [--network-name NAME]
//       (--approve | --deny=REASON | --edit=COMMAND | --abort
//        | --allow-name=once|session|profile | --watch-only)
//       [--count N] [--timeout S] [--name NAME] [--delay-ms MS]
//     Prints "watching" once the broker counts it, then watches pending
//     requests and decides each one that matches (argv[0] equal to NAME, a
//     network request's name equal to --network-name, and the session),
//     MS after it appeared, until N were decided (--watch-only: prints each
//     match and decides nothing). Prints one JSON line per decision:
//     {"pending": PendingRequest, "decided": DecideResponse} or {"pending":
//     ..., "error": "..."}. Exit 0 when N were decided, 3 on timeout, 2 on a
//     usage error, 1 when the broker failed.
//   lazaret-test-approver --socket PATH sessions
//     Prints ListSessionsResponse as JSON.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"

namespace {

namespace pb = ::lazaret::approver::v1;

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &out, o).ok()) return "{}";
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int Usage(const char* why) {
  std::fprintf(stderr, "lazaret-test-approver: %s\n", why);
  return 2;
}

struct Options {
  std::string socket;
  std::string command;
  std::string session;
  std::string argv0;
  std::string name = "lazaret-test-approver";
  std::string network_name;
  enum class Action { kNone, kApprove, kDeny, kEdit, kAbort, kAllowName, kWatch };
  Action action = Action::kNone;
  pb::AllowName::Scope scope = pb::AllowName::SCOPE_UNSPECIFIED;
  int delay_ms = 0;
  std::string arg;  // deny reason or edited command
  int count = 1;
  int timeout_s = 60;
};

bool Value(const std::string& a, const char* flag, std::string* out) {
  const std::string p = std::string(flag) + "=";
  if (!absl::StartsWith(a, p)) return false;
  *out = a.substr(p.size());
  return true;
}

int Decide(const Options& o, pb::ApproverService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(o.timeout_s));
  pb::WatchPendingRequest req;
  req.set_session_id(o.session);
  req.mutable_approver()->set_kind(pb::Approver::KIND_SCRIPT);
  req.mutable_approver()->set_name(o.name);
  req.mutable_approver()->set_pid(getpid());
  auto reader = stub.WatchPending(&ctx, req);
  // The broker sends the call's metadata once the watcher is counted.
  reader->WaitForInitialMetadata();
  std::printf("watching\n");
  std::fflush(stdout);
  int decided = 0;
  pb::PendingEvent ev;
  while (decided < o.count && reader->Read(&ev)) {
    if (ev.kind() != pb::PendingEvent::KIND_ADDED) continue;
    const pb::PendingRequest& p = ev.request();
    if (!o.argv0.empty() && (p.argv_size() == 0 || p.argv(0) != o.argv0)) continue;
    if (!o.network_name.empty() && p.network().name() != o.network_name) continue;
    if (o.action == Options::Action::kWatch) {
      std::printf("{\"pending\":%s}\n", Json(p).c_str());
      std::fflush(stdout);
      continue;
    }
    if (o.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.delay_ms));
    pb::DecideRequest d;
    d.set_id(p.id());
    *d.mutable_approver() = req.approver();
    switch (o.action) {
      case Options::Action::kApprove:
        d.mutable_approve();
        break;
      case Options::Action::kDeny:
        d.mutable_deny()->set_reason(o.arg);
        break;
      case Options::Action::kEdit:
        d.mutable_edit()->set_command(o.arg);
        break;
      case Options::Action::kAbort:
        d.mutable_abort()->set_reason("aborted by lazaret-test-approver");
        break;
      case Options::Action::kAllowName:
        d.mutable_allow_name()->set_scope(o.scope);
        d.mutable_allow_name()->set_before_sha256(p.network().profile_sha256());
        break;
      case Options::Action::kNone:
      case Options::Action::kWatch:
        break;
    }
    grpc::ClientContext dctx;
    dctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    pb::DecideResponse resp;
    grpc::Status st = stub.Decide(&dctx, d, &resp);
    if (st.ok()) {
      std::printf("{\"pending\":%s,\"decided\":%s}\n", Json(p).c_str(), Json(resp).c_str());
      ++decided;
    } else {
      std::printf("{\"pending\":%s,\"error\":%s}\n", Json(p).c_str(),
                  Quote(st.error_message()).c_str());
    }
    std::fflush(stdout);
  }
  ctx.TryCancel();
  if (decided >= o.count) return 0;
  grpc::Status st = reader->Finish();
  if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      st.error_code() == grpc::StatusCode::CANCELLED) {
    std::fprintf(stderr, "lazaret-test-approver: timed out after %d of %d decisions\n", decided,
                 o.count);
    return 3;
  }
  std::fprintf(stderr, "lazaret-test-approver: WatchPending ended: %s\n",
               st.error_message().c_str());
  return 1;
}

int Sessions(pb::ApproverService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::ListSessionsResponse resp;
  grpc::Status st = stub.ListSessions(&ctx, pb::ListSessionsRequest(), &resp);
  if (!st.ok()) {
    std::fprintf(stderr, "lazaret-test-approver: %s\n", st.error_message().c_str());
    return 1;
  }
  std::printf("%s\n", Json(resp).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    if (Value(a, "--socket", &o.socket) || Value(a, "--session", &o.session) ||
        Value(a, "--argv0", &o.argv0) || Value(a, "--name", &o.name) ||
        Value(a, "--network-name", &o.network_name)) {
      continue;
    } else if (a == "--approve") {
      o.action = Options::Action::kApprove;
    } else if (Value(a, "--deny", &o.arg)) {
      o.action = Options::Action::kDeny;
    } else if (Value(a, "--edit", &o.arg)) {
      o.action = Options::Action::kEdit;
    } else if (a == "--abort") {
      o.action = Options::Action::kAbort;
    } else if (a == "--watch-only") {
      o.action = Options::Action::kWatch;
    } else if (Value(a, "--allow-name", &v)) {
      o.action = Options::Action::kAllowName;
      o.scope = v == "once"      ? pb::AllowName::SCOPE_ONCE
                : v == "session" ? pb::AllowName::SCOPE_SESSION
                : v == "profile" ? pb::AllowName::SCOPE_PROFILE
                                 : pb::AllowName::SCOPE_UNSPECIFIED;
      if (o.scope == pb::AllowName::SCOPE_UNSPECIFIED) {
        return Usage("--allow-name takes once, session or profile");
      }
    } else if (Value(a, "--delay-ms", &v)) {
      if (!absl::SimpleAtoi(v, &o.delay_ms) || o.delay_ms < 0) return Usage("--delay-ms takes MS");
    } else if (Value(a, "--count", &v)) {
      if (!absl::SimpleAtoi(v, &o.count) || o.count < 1) return Usage("--count takes N >= 1");
    } else if (Value(a, "--timeout", &v)) {
      if (!absl::SimpleAtoi(v, &o.timeout_s) || o.timeout_s < 1) {
        return Usage("--timeout takes seconds >= 1");
      }
    } else if (o.command.empty() && (a == "decide" || a == "sessions")) {
      o.command = a;
    } else {
      return Usage(("unknown argument: " + a).c_str());
    }
  }
  if (o.socket.empty()) return Usage("--socket=PATH is required");
  auto stub = pb::ApproverService::NewStub(
      grpc::CreateChannel("unix:" + o.socket, grpc::InsecureChannelCredentials()));
  if (o.command == "sessions") return Sessions(*stub);
  if (o.command != "decide") return Usage("say decide or sessions");
  if (o.action == Options::Action::kNone) {
    return Usage(
        "decide needs --approve, --deny=REASON, --edit=COMMAND, --abort, --allow-name=SCOPE or "
        "--watch-only");
  }
  return Decide(o, *stub);
}
