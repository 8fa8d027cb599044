#include "services/netpolicyd/host_inputs.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::netpolicyd {

std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id) {
  return absl::StrCat(runtime_dir, "/sessions/", id, "/router/router.sock");
}

absl::StatusOr<ProfileInputs> ResolveProfileInputs(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record) {
  LAZ_ASSIGN_OR_RETURN(lazaret::config::v1::ResolvedProfile profile,
                       ResolveSessionProfile(runtime_dir, record));
  ProfileInputs in;
  in.intercepted = InterceptedNames(profile);
  in.network = std::move(*profile.mutable_network());
  return in;
}

std::vector<std::string> InterceptedNames(const lazaret::config::v1::ResolvedProfile& profile) {
  std::set<std::string> names;
  const auto add = [&names](const std::string& host) {
    absl::StatusOr<std::string> name = vocab::NormalizeDnsPattern(host);
    if (name.ok()) names.insert(*std::move(name));
  };
  for (const auto& secret : profile.secrets()) {
    for (const std::string& host : secret.hosts()) add(host);
  }
  for (const auto& rule : profile.http_rules()) add(rule.host());
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace lazaret::netpolicyd
