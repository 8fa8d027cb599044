// A NetPolicyService for tests of the `lazaret` CLI's side: it answers
// with what the test set and records every request. Runs in the test
// process, served over a real Unix socket (GrpcUnixServer); trusts
// everything, checks nothing.
#ifndef LAZARET_CLIENTS_LAZARET_NET_FAKE_NETPOLICY_SERVICE_H_
#define LAZARET_CLIENTS_LAZARET_NET_FAKE_NETPOLICY_SERVICE_H_

#include <mutex>
#include <string>
#include <vector>

#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"

namespace lazaret::cli::net {

namespace fake_pb = ::lazaret::netpolicy::v1;

// Answers with what the test set, and records every request.
class FakeNetPolicyService final : public fake_pb::NetPolicyService::Service {
 public:
  grpc::Status AttachSession(grpc::ServerContext*, const fake_pb::AttachSessionRequest* r,
                             fake_pb::PolicyApplied* out) override {
    return Answer("AttachSession", r->session().id(), out);
  }
  grpc::Status ReloadSession(grpc::ServerContext*, const fake_pb::ReloadSessionRequest* r,
                             fake_pb::PolicyApplied* out) override {
    return Answer("ReloadSession", r->session().id(), out);
  }
  grpc::Status ChangeSession(grpc::ServerContext*, const fake_pb::ChangeSessionRequest* r,
                             fake_pb::PolicyApplied* out) override {
    std::lock_guard<std::mutex> l(mu);
    change = *r;
    return AnswerLocked("ChangeSession", r->session().id(), out);
  }
  grpc::Status DetachSession(grpc::ServerContext*, const fake_pb::DetachSessionRequest* r,
                             fake_pb::DetachSessionResponse*) override {
    fake_pb::PolicyApplied ignored;
    return Answer("DetachSession", r->session().id(), &ignored);
  }
  grpc::Status ShowPolicy(grpc::ServerContext*, const fake_pb::ShowPolicyRequest* r,
                          fake_pb::SessionPolicy* out) override {
    std::lock_guard<std::mutex> l(mu);
    *out = policy;
    return AnswerLocked("ShowPolicy", r->session().id(), nullptr);
  }
  grpc::Status TestDestination(grpc::ServerContext*, const fake_pb::TestDestinationRequest* r,
                               fake_pb::TestDestinationResponse* out) override {
    std::lock_guard<std::mutex> l(mu);
    test = *r;
    *out = verdict;
    return AnswerLocked("TestDestination", r->session().id(), nullptr);
  }
  grpc::Status WatchLog(grpc::ServerContext*, const fake_pb::WatchLogRequest* r,
                        grpc::ServerWriter<fake_pb::LogEntry>* w) override {
    std::vector<fake_pb::LogEntry> entries;
    {
      std::lock_guard<std::mutex> l(mu);
      watch = *r;
      calls.push_back("WatchLog " + r->session().id());
      entries = log;
    }
    for (const fake_pb::LogEntry& e : entries) w->Write(e);
    return status;
  }

  std::mutex mu;
  grpc::Status status = grpc::Status::OK;
  fake_pb::PolicyApplied applied;
  fake_pb::SessionPolicy policy;
  fake_pb::TestDestinationResponse verdict;
  std::vector<fake_pb::LogEntry> log;
  std::vector<std::string> calls;
  fake_pb::ChangeSessionRequest change;
  fake_pb::TestDestinationRequest test;
  fake_pb::WatchLogRequest watch;

 private:
  grpc::Status Answer(const char* rpc, const std::string& id, fake_pb::PolicyApplied* out) {
    std::lock_guard<std::mutex> l(mu);
    return AnswerLocked(rpc, id, out);
  }
  grpc::Status AnswerLocked(const char* rpc, const std::string& id, fake_pb::PolicyApplied* out) {
    calls.push_back(std::string(rpc) + " " + id);
    if (out != nullptr) *out = applied;
    return status;
  }
};

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_FAKE_NETPOLICY_SERVICE_H_
