#include "helper/mount/session_source.h"

#include "absl/strings/str_cat.h"
#include "services/common/runtime_dir.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::mounthelper {
namespace {

namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;

ProfileFacts FactsOf(const cfg::ResolvedProfile& p) {
  return ProfileFacts{p.name(),
                      p.data_root(),
                      p.profile_dir(),
                      {p.persistent_dirs().begin(), p.persistent_dirs().end()},
                      p.persistent_cap_bytes()};
}

class RegistrySessionSource final : public SessionSource {
 public:
  explicit RegistrySessionSource(std::string runtime_dir) : runtime_dir_(std::move(runtime_dir)) {}

  absl::StatusOr<ProfileFacts> ProfileOfSession(const std::string& id) override {
    LAZ_RETURN_IF_ERROR(CheckSessionId(id));
    LAZ_ASSIGN_OR_RETURN(sv::SessionInfo info, FetchSession(runtime_dir_, id));
    if (!IsLiveSessionState(info.state())) {
      return absl::FailedPreconditionError(absl::StrCat("session ", id, " is ending"));
    }
    LAZ_ASSIGN_OR_RETURN(cfg::ResolvedProfile p,
                         ResolveSessionProfile(runtime_dir_, info.record()));
    return FactsOf(p);
  }

  absl::StatusOr<bool> IsLive(const std::string& id) override {
    LAZ_RETURN_IF_ERROR(CheckSessionId(id));
    absl::StatusOr<sv::SessionInfo> info = FetchSession(runtime_dir_, id);
    if (absl::IsNotFound(info.status())) return false;
    if (!info.ok()) return info.status();
    return IsLiveSessionState(info->state());
  }

  absl::StatusOr<ProfileFacts> Profile(const ProfileQuery& q) override {
    for (const std::string* path : {&q.workspace, &q.explicit_config}) {
      if (!path->empty() && !vocab::IsCleanAbsolutePath(*path)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", path->substr(0, 256), "' is not a clean absolute path (workspace or --config)"));
      }
    }
    lazaret::common::v1::SessionRecord record;
    record.set_profile(q.name);
    record.set_explicit_config(q.explicit_config);
    if (!q.workspace.empty()) {
      // The same layers as a session in that workspace (its lazaret.toml
      // counts only when trusted: configd's rule, as for `lazaret run`).
      record.set_workspace(q.workspace);
    } else {
      // configd resolves a profile only for an absolute workspace. The
      // user's own layers alone: the helper's private directory, which
      // holds no lazaret.toml (nothing but the helper writes there) and
      // contains neither data_root nor a socket directory.
      LAZ_ASSIGN_OR_RETURN(std::string private_dir,
                           EnsurePrivateDir(absl::StrCat(runtime_dir_, "/mount-helper")));
      record.set_workspace(private_dir);
    }
    LAZ_ASSIGN_OR_RETURN(cfg::ResolvedProfile p, ResolveSessionProfile(runtime_dir_, record));
    return FactsOf(p);
  }

 private:
  const std::string runtime_dir_;
};

}  // namespace

std::unique_ptr<SessionSource> MakeRegistrySessionSource(const std::string& runtime_dir) {
  return std::make_unique<RegistrySessionSource>(runtime_dir);
}

}  // namespace lazaret::mounthelper
