// An ApproverService for tests of the terminal approver: WatchPending sends
// the events the test scripted (to every watcher, then each new one as the
// test adds it), Decide records the decision and resolves the request
// (first decision wins, as the broker's), ParseCommand splits at spaces,
// GetRequest answers with a fixed output. Runs in the test process, served
// over a real Unix socket (GrpcUnixServer); trusts everything.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_FAKE_APPROVER_SERVICE_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_FAKE_APPROVER_SERVICE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"

namespace lazaret::cli::approve {

class FakeApproverService final : public ::lazaret::approver::v1::ApproverService::Service {
 public:
  using Event = ::lazaret::approver::v1::PendingEvent;

  void Add(const ::lazaret::approver::v1::PendingRequest& r) {
    Event e;
    e.set_kind(Event::KIND_ADDED);
    *e.mutable_request() = r;
    Push(e);
  }
  void Resolve(const std::string& id, const std::string& how) {
    Event e;
    e.set_kind(Event::KIND_RESOLVED);
    e.mutable_request()->set_request_id(id);
    e.set_resolution(how);
    {
      std::lock_guard<std::mutex> l(mu);
      resolved.insert(id);
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
      if (resolved.count(r->request_id()) != 0) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "already decided: approved by ci-script");
      }
      resolved.insert(r->request_id());
      out->set_binary("/usr/bin/true");
    }
    Event e;
    e.set_kind(Event::KIND_RESOLVED);
    e.mutable_request()->set_request_id(r->request_id());
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
    out->mutable_request()->set_request_id(r->request_id());
    out->set_phase(::lazaret::approver::v1::RequestState::PHASE_DONE);
    out->mutable_record()->set_ran(true);
    out->set_stdout("output of " + r->request_id() + "\n");
    return grpc::Status::OK;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Event> events;
  std::set<std::string> resolved;
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
