#include "services/configd/configd.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/configd/layer_files.h"
#include "services/configd/profile_edit.h"
#include "services/configd/proto_convert.h"

namespace lazaret::configd {
namespace {

namespace pb = ::lazaret::config::v1;

// Stateless: every call reads the files again, so an edit or a `lazaret
// trust` takes effect at once and nothing is cached across requests.
class ConfigServiceImpl final : public pb::ConfigService::Service {
 public:
  explicit ConfigServiceImpl(config::HostContext host) : host_(std::move(host)) {}

  grpc::Status ResolveProfile(grpc::ServerContext*, const pb::ResolveProfileRequest* req,
                              pb::ResolveProfileResponse* resp) override {
    absl::StatusOr<config::Selector> sel = CheckSelector(req->selector());
    if (!sel.ok()) return ToGrpcStatus(sel.status());
    const config::LoadedConfig loaded = config::LoadForSelector(host_, *sel);
    absl::StatusOr<config::ResolvedProfile> profile = loaded.Profile(req->profile());
    if (!profile.ok()) {
      LogRefusal(*sel, profile.status());
      return ToGrpcStatus(profile.status());
    }
    config::ToProto(*profile, resp->mutable_profile());
    for (const auto& w : loaded.diagnostics.warnings()) config::ToProto(w, resp->add_warnings());
    for (const auto& l : loaded.layers) config::ToProto(l, resp->add_layers());
    return grpc::Status::OK;
  }

  grpc::Status ListProfiles(grpc::ServerContext*, const pb::ListProfilesRequest* req,
                            pb::ListProfilesResponse* resp) override {
    absl::StatusOr<config::Selector> sel = CheckSelector(req->selector());
    if (!sel.ok()) return ToGrpcStatus(sel.status());
    const config::LoadedConfig loaded = config::LoadForSelector(host_, *sel);
    if (absl::Status st = loaded.status(); !st.ok()) {
      LogRefusal(*sel, st);
      return ToGrpcStatus(st);
    }
    for (const auto& [name, p] : loaded.profiles) resp->add_profiles(name);
    resp->set_default_profile(loaded.default_profile);
    return grpc::Status::OK;
  }

  grpc::Status Validate(grpc::ServerContext*, const pb::ValidateRequest* req,
                        pb::ValidateResponse* resp) override {
    absl::StatusOr<config::Selector> sel = CheckSelector(req->selector());
    if (!sel.ok()) return ToGrpcStatus(sel.status());
    if (req->has_workspace_file_content()) sel->workspace_text = req->workspace_file_content();
    const config::LoadedConfig loaded = config::LoadForSelector(host_, *sel);
    resp->set_ok(!loaded.diagnostics.has_errors());
    for (const auto& e : loaded.diagnostics.errors()) config::ToProto(e, resp->add_errors());
    for (const auto& w : loaded.diagnostics.warnings()) config::ToProto(w, resp->add_warnings());
    for (const auto& l : loaded.layers) config::ToProto(l, resp->add_layers());
    return grpc::Status::OK;
  }

  grpc::Status PreviewNameAllow(grpc::ServerContext*, const pb::NameAllowRequest* req,
                                pb::NameAllowPreview* resp) override {
    absl::StatusOr<config::Selector> sel = CheckSelector(req->selector());
    if (!sel.ok()) return ToGrpcStatus(sel.status());
    absl::StatusOr<config::NameAllowEdit> edit =
        config::PreviewNameAllow(host_, *sel, req->profile(), req->name());
    if (!edit.ok()) return ToGrpcStatus(edit.status());
    ToProto(*edit, resp);
    return grpc::Status::OK;
  }

  grpc::Status ApplyNameAllow(grpc::ServerContext*, const pb::NameAllowRequest* req,
                              pb::NameAllowPreview* resp) override {
    absl::StatusOr<config::Selector> sel = CheckSelector(req->selector());
    if (!sel.ok()) return ToGrpcStatus(sel.status());
    absl::StatusOr<config::NameAllowEdit> edit =
        config::ApplyNameAllow(host_, *sel, req->profile(), req->name(), req->before_sha256());
    if (!edit.ok()) {
      LAZ_LOG_WARNING << "did not allow a name for a profile: " << edit.status().code();
      return ToGrpcStatus(edit.status());
    }
    LAZ_LOG_INFO << "allowed a name for profile " << req->profile() << " in " << edit->file;
    ToProto(*edit, resp);
    return grpc::Status::OK;
  }

 private:
  static void ToProto(const config::NameAllowEdit& e, pb::NameAllowPreview* out) {
    out->set_file(e.file);
    out->set_diff(e.diff);
    out->set_before_sha256(e.before_sha256);
    out->set_after_sha256(e.after_sha256);
  }

  static absl::StatusOr<config::Selector> CheckSelector(const pb::ConfigSelector& s) {
    if (s.workspace_dir().empty() || s.workspace_dir()[0] != '/') {
      return absl::InvalidArgumentError("selector.workspace_dir must be an absolute path");
    }
    if (!s.explicit_config().empty() && s.explicit_config()[0] != '/') {
      return absl::InvalidArgumentError("selector.explicit_config must be an absolute path");
    }
    return config::Selector{s.workspace_dir(), s.explicit_config(), std::nullopt};
  }

  static void LogRefusal(const config::Selector& sel, const absl::Status& st) {
    if (absl::IsPermissionDenied(st)) {
      LAZ_LOG_WARNING << "refused the workspace configuration of " << sel.workspace_dir
                      << ": it widens what the user granted";
    }
  }

  const config::HostContext host_;
};

}  // namespace

ServiceSpec Spec() {
  return ServiceSpec{
      .name = std::string(kConfigdService.name),
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers = [](const std::string& runtime_dir) -> absl::StatusOr<ServiceHandlers> {
        absl::StatusOr<config::HostContext> host = config::HostContextFromEnvironment(runtime_dir);
        if (!host.ok()) return host.status();
        ServiceHandlers h;
        h.services.push_back(std::make_unique<ConfigServiceImpl>(*std::move(host)));
        return h;
      },
  };
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::configd
