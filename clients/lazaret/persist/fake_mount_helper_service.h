// A MountHelperService for tests of the `lazaret` CLI's side: it answers
// with what the test set and records every request. Runs in the test
// process, served over a real Unix socket (GrpcUnixServer); trusts
// everything, checks nothing.
#ifndef LAZARET_CLIENTS_LAZARET_PERSIST_FAKE_MOUNT_HELPER_SERVICE_H_
#define LAZARET_CLIENTS_LAZARET_PERSIST_FAKE_MOUNT_HELPER_SERVICE_H_

#include <mutex>
#include <string>
#include <vector>

#include "lazaret/mounthelper/v1/mounthelper.grpc.pb.h"

namespace lazaret::cli::persist {

class FakeMountHelperService final
    : public ::lazaret::mounthelper::v1::MountHelperService::Service {
 public:
  using Ctx = grpc::ServerContext;
  grpc::Status AttachSession(Ctx*, const ::lazaret::mounthelper::v1::AttachSessionRequest* r,
                             ::lazaret::mounthelper::v1::AttachSessionResponse* out) override {
    return Answer("AttachSession " + r->session_id() + " " + r->image_id(), attach, out);
  }
  grpc::Status DetachSession(Ctx*, const ::lazaret::mounthelper::v1::DetachSessionRequest* r,
                             ::lazaret::mounthelper::v1::DetachSessionResponse* out) override {
    return Answer("DetachSession " + r->session_id(), detach, out);
  }
  grpc::Status ListMounts(Ctx*, const ::lazaret::mounthelper::v1::ListMountsRequest*,
                          ::lazaret::mounthelper::v1::ListMountsResponse* out) override {
    return Answer("ListMounts", list, out);
  }
  grpc::Status DescribeState(Ctx*, const ::lazaret::mounthelper::v1::DescribeStateRequest* r,
                             ::lazaret::mounthelper::v1::DescribeStateResponse* out) override {
    return Answer("DescribeState " + r->profile(), describe, out);
  }
  grpc::Status ResetState(Ctx*, const ::lazaret::mounthelper::v1::ResetStateRequest* r,
                          ::lazaret::mounthelper::v1::ResetStateResponse* out) override {
    return Answer("ResetState " + r->profile() + " " + r->directory(), reset, out);
  }
  grpc::Status Cleanup(Ctx*, const ::lazaret::mounthelper::v1::CleanupRequest*,
                       ::lazaret::mounthelper::v1::CleanupResponse* out) override {
    return Answer("Cleanup", cleanup, out);
  }

  std::vector<std::string> Calls() {
    std::lock_guard<std::mutex> l(mu);
    return calls;
  }

  std::mutex mu;
  grpc::Status status = grpc::Status::OK;  // every call's
  ::lazaret::mounthelper::v1::AttachSessionResponse attach;
  ::lazaret::mounthelper::v1::DetachSessionResponse detach;
  ::lazaret::mounthelper::v1::ListMountsResponse list;
  ::lazaret::mounthelper::v1::DescribeStateResponse describe;
  ::lazaret::mounthelper::v1::ResetStateResponse reset;
  ::lazaret::mounthelper::v1::CleanupResponse cleanup;
  std::vector<std::string> calls;

 private:
  template <typename T>
  grpc::Status Answer(std::string call, const T& answer, T* out) {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back(std::move(call));
    *out = answer;
    return status;
  }
};

}  // namespace lazaret::cli::persist

#endif  // LAZARET_CLIENTS_LAZARET_PERSIST_FAKE_MOUNT_HELPER_SERVICE_H_
