// `lazaret config check`, `lazaret config show` and `lazaret trust`: the
// front-ends. Runs in the user's terminal. The configuration is parsed only
// by lazaret-configd, asked over configd.sock (config/configd_client.h);
// `trust` reviews an agent-written workspace file and writes the user's
// trust store (config/trust_review.h).
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/config/configd_client.h"
#include "clients/lazaret/config/options.h"
#include "clients/lazaret/config/print.h"
#include "clients/lazaret/config/trust_review.h"
#include "clients/lazaret/help/help.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/layer_files.h"
#include "services/configd/trust_store.h"
#include "services/vocab/escape.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::config::v1;
namespace cfg = ::lazaret::config;
using config::ConfigArgs;
using config::ConfigdClient;

pb::ConfigSelector Selector(const ConfigArgs& a) {
  pb::ConfigSelector s;
  s.set_workspace_dir(config::Cwd());
  s.set_explicit_config(a.explicit_config);
  return s;
}

int ConfigCheck(const Context& ctx, const ConfigArgs& a) {
  ConfigdClient configd(ctx.runtime_dir);
  pb::ValidateRequest req;
  *req.mutable_selector() = Selector(a);
  pb::ValidateResponse resp;
  grpc::Status s = configd.Validate(req, &resp);
  if (!s.ok()) {
    if (configd.ReportNotRunning(s)) return config::kExitNotRunning;
    std::fprintf(stderr, "lazaret config check: %s\n", s.error_message().c_str());
    return 1;
  }
  config::PrintLayers(resp.layers());
  config::PrintDiagnostics("warning", resp.warnings(), stdout);
  if (!resp.ok()) {
    config::PrintDiagnostics("error", resp.errors(), stderr);
    std::fprintf(stderr, "The configuration is invalid (%d error%s).\n", resp.errors_size(),
                 resp.errors_size() == 1 ? "" : "s");
    return 1;
  }
  pb::ListProfilesRequest lreq;
  *lreq.mutable_selector() = Selector(a);
  pb::ListProfilesResponse lresp;
  if (configd.ListProfiles(lreq, &lresp).ok()) {
    std::printf("Profiles: %s (default: %s)\n", absl::StrJoin(lresp.profiles(), ", ").c_str(),
                lresp.default_profile().c_str());
  }
  std::printf("The configuration is valid.\n");
  return 0;
}

int ConfigShow(const Context& ctx, const ConfigArgs& a) {
  ConfigdClient configd(ctx.runtime_dir);
  pb::ResolveProfileRequest req;
  *req.mutable_selector() = Selector(a);
  req.set_profile(a.profile);
  pb::ResolveProfileResponse resp;
  grpc::Status s = configd.ResolveProfile(req, &resp);
  if (!s.ok()) {
    if (configd.ReportNotRunning(s)) return config::kExitNotRunning;
    std::fprintf(stderr, "lazaret config show: %s\n", s.error_message().c_str());
    return 1;
  }
  for (pb::EnvVar& e : *resp.mutable_profile()->mutable_env()) {
    if (e.has_literal()) e.clear_value();  // names and sources only
  }
  if (a.json) {
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    std::string out;
    if (!google::protobuf::util::MessageToJsonString(resp, &out, o).ok()) return 1;
    std::printf("%s\n", out.c_str());
    return 0;
  }
  config::PrintProfile(resp);
  config::PrintLayers(resp.layers());
  config::PrintDiagnostics("warning", resp.warnings(), stdout);
  return 0;
}

}  // namespace

int CmdConfig(const Context& ctx, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "check" && args[0] != "show")) {
    std::fprintf(stderr, "%s", help::kConfigUsage);
    return 2;
  }
  const bool show = args[0] == "show";
  absl::StatusOr<ConfigArgs> a = config::ParseConfigArgs(args, 1, show);
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret config %s: %s\n%s", args[0].c_str(),
                 std::string(a.status().message()).c_str(), help::kConfigUsage);
    return 2;
  }
  return show ? ConfigShow(ctx, *a) : ConfigCheck(ctx, *a);
}

int CmdTrust(const Context& ctx, const std::vector<std::string>& args) {
  absl::StatusOr<config::TrustArgs> a = config::ParseTrustArgs(args);
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret trust: %s\n%s", std::string(a.status().message()).c_str(),
                 help::kTrustUsage);
    return 2;
  }
  if (!a->expected_sha256.empty() && !config::IsSha256Hex(a->expected_sha256)) {
    std::fprintf(stderr, "lazaret trust: --sha256 takes the 64 hex digits `lazaret trust` shows\n");
    return 2;
  }
  const std::string abs = config::Absolute(a->file);
  if (abs.substr(abs.rfind('/') + 1) != cfg::kWorkspaceFileName) {
    std::fprintf(stderr,
                 "lazaret trust: %s is not a workspace lazaret.toml. Only a workspace's "
                 "lazaret.toml needs trust; your own config.toml and --config files are always "
                 "yours.\n",
                 vocab::EscapeForTerminal(abs).c_str());
    return 2;
  }
  absl::StatusOr<cfg::HostContext> host = cfg::HostContextFromEnvironment(ctx.runtime_dir);
  absl::StatusOr<std::string> canon = cfg::CanonicalWorkspaceFile(abs);
  if (!host.ok() || !canon.ok()) {
    std::fprintf(
        stderr, "lazaret trust: %s\n",
        vocab::EscapeForTerminal((!host.ok() ? host.status() : canon.status()).message()).c_str());
    return 1;
  }
  cfg::TrustStore store(host->TrustStoreFile());
  if (a->revoke) return config::RevokeTrust(store, *canon);
  ConfigdClient configd(ctx.runtime_dir);
  return config::ReviewAndTrust(configd, store, *canon, a->expected_sha256);
}

}  // namespace lazaret::cli
