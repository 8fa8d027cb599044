// The `lazaret` CLI's client of lazaret-configd, on configd.sock in the
// runtime directory. Runs in the user's terminal. The configuration is
// parsed only by the service; its answers describe the user's files, some
// of which (a workspace lazaret.toml) the agent can write.
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_CONFIGD_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_CONFIGD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "lazaret/config/v1/config.grpc.pb.h"

namespace lazaret::cli::config {

// The exit code of a command that needs lazaret-configd when it is not running.
inline constexpr int kExitNotRunning = 3;

// True when the call failed because the service is not there.
bool NotRunning(const grpc::Status& s);

class ConfigdClient {
 public:
  explicit ConfigdClient(const std::string& runtime_dir);

  const std::string& socket() const { return socket_; }

  // Each call waits at most 10 seconds.
  grpc::Status Validate(const ::lazaret::config::v1::ValidateRequest& req,
                        ::lazaret::config::v1::ValidateResponse* resp);
  grpc::Status ListProfiles(const ::lazaret::config::v1::ListProfilesRequest& req,
                            ::lazaret::config::v1::ListProfilesResponse* resp);
  grpc::Status ResolveProfile(const ::lazaret::config::v1::ResolveProfileRequest& req,
                              ::lazaret::config::v1::ResolveProfileResponse* resp);

  // NotRunning(s), after printing how to fix it.
  bool ReportNotRunning(const grpc::Status& s) const;

 private:
  std::string socket_;
  std::unique_ptr<::lazaret::config::v1::ConfigService::Stub> stub_;
};

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_CONFIGD_CLIENT_H_
