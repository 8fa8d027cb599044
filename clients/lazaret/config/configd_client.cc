#include "clients/lazaret/config/configd_client.h"

#include <chrono>
#include <cstdio>

#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::config {
namespace {

namespace pb = ::lazaret::config::v1;

void Deadline(grpc::ClientContext* cc) {
  cc->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

}  // namespace

bool NotRunning(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

ConfigdClient::ConfigdClient(const std::string& runtime_dir)
    : socket_(ServiceSocketPath(runtime_dir, kConfigdService)),
      stub_(pb::ConfigService::NewStub(DialUnix(socket_))) {}

grpc::Status ConfigdClient::Validate(const pb::ValidateRequest& req, pb::ValidateResponse* resp) {
  grpc::ClientContext cc;
  Deadline(&cc);
  return stub_->Validate(&cc, req, resp);
}

grpc::Status ConfigdClient::ListProfiles(const pb::ListProfilesRequest& req,
                                         pb::ListProfilesResponse* resp) {
  grpc::ClientContext cc;
  Deadline(&cc);
  return stub_->ListProfiles(&cc, req, resp);
}

grpc::Status ConfigdClient::ResolveProfile(const pb::ResolveProfileRequest& req,
                                           pb::ResolveProfileResponse* resp) {
  grpc::ClientContext cc;
  Deadline(&cc);
  return stub_->ResolveProfile(&cc, req, resp);
}

bool ConfigdClient::ReportNotRunning(const grpc::Status& s) const {
  if (!NotRunning(s)) return false;
  std::fprintf(stderr,
               "lazaret: the config service is not running (no answer on %s).\n"
               "Start Lazaret first; run: lazaret up\n",
               socket_.c_str());
  return true;
}

}  // namespace lazaret::cli::config
