#include "clients/lazaret/net/egress_client.h"

#include <openssl/crypto.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::net {
namespace {

namespace epb = ::lazaret::egress::v1;

constexpr std::chrono::seconds kEgressAttachTimeout{15};

absl::Status FromGrpc(const grpc::Status& st, const std::string& what) {
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat(what, ": ", st.error_message()));
}

}  // namespace

std::string EgressSocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kEgressdService);
}

absl::StatusOr<epb::AttachSessionResponse> AttachEgress(const std::string& runtime_dir,
                                                        epb::AttachSessionRequest* request) {
  auto stub = epb::EgressService::NewStub(DialUnix(EgressSocket(runtime_dir)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + kEgressAttachTimeout);
  epb::AttachSessionResponse resp;
  grpc::Status st = stub->AttachSession(&cc, *request, &resp);
  for (epb::SecretValue& v : *request->mutable_secrets()) {
    std::string* value = v.mutable_value();
    if (!value->empty()) OPENSSL_cleanse(value->data(), value->size());
    value->clear();
  }
  if (!st.ok()) return FromGrpc(st, "lazaret-egressd did not take the session");
  return resp;
}

bool EgressServes(const std::string& runtime_dir, const std::string& session) {
  auto stub = epb::EgressService::NewStub(DialUnix(EgressSocket(runtime_dir)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  epb::ListSessionsResponse resp;
  if (!stub->ListSessions(&cc, epb::ListSessionsRequest(), &resp).ok()) return false;
  for (const epb::SessionSummary& s : resp.sessions()) {
    if (s.session_id() == session) return true;
  }
  return false;
}

absl::Status DetachEgressBestEffort(const std::string& runtime_dir, const std::string& session) {
  auto stub = epb::EgressService::NewStub(DialUnix(EgressSocket(runtime_dir)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  epb::DetachSessionRequest req;
  req.set_session_id(session);
  epb::DetachSessionResponse resp;
  grpc::Status st = stub->DetachSession(&cc, req, &resp);
  if (st.ok() || st.error_code() == grpc::StatusCode::NOT_FOUND) return absl::OkStatus();
  return FromGrpc(st, "lazaret-egressd did not let go of the session");
}

absl::Status WatchEgressRequests(const std::string& runtime_dir, const std::string& session,
                                 bool follow,
                                 const std::function<bool(const epb::RequestRecord&)>& each) {
  auto stub = epb::EgressService::NewStub(DialUnix(EgressSocket(runtime_dir)));
  grpc::ClientContext cc;
  if (!follow) cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  epb::WatchRequestsRequest req;
  req.set_session_id(session);
  req.set_follow(follow);
  auto reader = stub->WatchRequests(&cc, req);
  epb::RequestRecord record;
  while (reader->Read(&record)) {
    if (!each(record)) {
      cc.TryCancel();
      break;
    }
  }
  grpc::Status st = reader->Finish();
  if (st.ok() || st.error_code() == grpc::StatusCode::CANCELLED) return absl::OkStatus();
  return FromGrpc(st, "the request log could not be read");
}

}  // namespace lazaret::cli::net
