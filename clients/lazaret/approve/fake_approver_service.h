// An ApproverService for tests of the terminal approver: WatchPending sends
// the events the test scripted (to every watcher, then each new one as the
// test adds it), Add gives each request a broker id ("q1", "q2"... unless
// the test set one), Decide records the decision and resolves the request
// named by its id (first decision wins, as the broker's; as the broker does,
// it refuses approve and edit on a network request and allow_name on a
// command), ParseCommand splits at spaces, GetRequest answers with a fixed
// output. Runs in the test process, served
// over a real Unix socket (GrpcUnixServer); trusts everything.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_FAKE_APPROVER_SERVICE_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_FAKE_APPROVER_SERVICE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"

namespace lazaret::cli::approve {

class FakeApproverService final : public ::lazaret::approver::v1::ApproverService::Service {
 public:
  using Event = ::lazaret::approver::v1::PendingEvent;

  // The request as announced (with its broker id).
  ::lazaret::approver::v1::PendingRequest Add(::lazaret::approver::v1::PendingRequest r) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (r.id().empty()) r.set_id("q" + std::to_string(++next_id));
      if (!r.request_id().empty()) ids[r.request_id()] = r.id();
      if (r.has_network()) network.insert(r.id());
    }
    Event e;
    e.set_kind(Event::KIND_ADDED);
    *e.mutable_request() = r;
    Push(e);
    return r;
  }
  // `name`: the broker id, or the agent's request id of a request added.
  void Resolve(const std::string& name, const std::string& how) {
    Event e;
    e.set_kind(Event::KIND_RESOLVED);
    e.set_resolution(how);
    {
      std::lock_guard<std::mutex> l(mu);
      auto it = ids.find(name);
      e.mutable_request()->set_id(it == ids.end() ? name : it->second);
      if (it != ids.end()) e.mutable_request()->set_request_id(name);
      resolved.insert(e.request().id());
    }
    Push(e);
  }

  grpc::Status WatchPending(grpc::ServerContext* ctx,
                            const ::lazaret::approver::v1::WatchPendingRequest* r,
                            grpc::ServerWriter<Event>* w) override {
    std::unique_lock<std::mutex> l(mu);
    watches.push_back(*r);
    ++watching;
    size_t sent = 0;
    while (!ctx->IsCancelled()) {
      cv.wait_for(l, std::chrono::milliseconds(50), [&] { return sent < events.size(); });
      while (sent < events.size()) {
        const Event e = events[sent++];
        l.unlock();
        w->Write(e);
        l.lock();
      }
    }
    --watching;
    return grpc::Status::OK;
  }

  grpc::Status Decide(grpc::ServerContext*, const ::lazaret::approver::v1::DecideRequest* r,
                      ::lazaret::approver::v1::DecideResponse* out) override {
    {
      std::lock_guard<std::mutex> l(mu);
      decides.push_back(*r);
      if (resolved.count(r->id()) != 0) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "already decided: approved by ci-script");
      }
      const bool is_network = network.count(r->id()) != 0;
      if (is_network && (r->has_approve() || r->has_edit())) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "a network request is allowed (allow_name) or denied");
      }
      if (!is_network && r->has_allow_name()) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "allow_name decides network requests only");
      }
      resolved.insert(r->id());
      out->set_binary("/usr/bin/true");
    }
    Event e;
    e.set_kind(Event::KIND_RESOLVED);
    e.mutable_request()->set_id(r->id());
    e.set_resolution("decided by lazaret approve");
    Push(e);
    return grpc::Status::OK;
  }

  grpc::Status ParseCommand(grpc::ServerContext*,
                            const ::lazaret::approver::v1::ParseCommandRequest* r,
                            ::lazaret::approver::v1::ParseCommandResponse* out) override {
    std::lock_guard<std::mutex> l(mu);
    parses.push_back(*r);
    for (absl::string_view a : absl::StrSplit(r->command(), ' ', absl::SkipEmpty())) {
      out->add_argv(std::string(a));
      out->add_argv_escaped(std::string(a));
    }
    out->set_ok(out->argv_size() > 0);
    if (out->ok()) out->set_binary("/usr/bin/" + out->argv(0));
    if (!out->ok()) out->set_error("empty command");
    return grpc::Status::OK;
  }

  grpc::Status GetRequest(grpc::ServerContext*, const ::lazaret::approver::v1::GetRequestRequest* r,
                          ::lazaret::approver::v1::RequestState* out) override {
    const std::string name = r->id().empty() ? r->request_id() : r->id();
    out->mutable_request()->set_id(r->id());
    out->mutable_request()->set_request_id(r->request_id());
    out->set_phase(::lazaret::approver::v1::RequestState::PHASE_DONE);
    out->mutable_record()->set_ran(true);
    out->set_stdout("output of " + name + "\n");
    return grpc::Status::OK;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Event> events;
  std::set<std::string> resolved;  // broker ids
  std::set<std::string> network;   // broker ids of network requests
  std::map<std::string, std::string> ids;  // request_id -> broker id
  int next_id = 0;
  int watching = 0;
  std::vector<::lazaret::approver::v1::WatchPendingRequest> watches;
  std::vector<::lazaret::approver::v1::DecideRequest> decides;
  std::vector<::lazaret::approver::v1::ParseCommandRequest> parses;

 private:
  void Push(const Event& e) {
    {
      std::lock_guard<std::mutex> l(mu);
      events.push_back(e);
    }
    cv.notify_all();
  }
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_FAKE_APPROVER_SERVICE_H_
