#include "services/sessiond/session/env.h"

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;

// Bounded by podman's env file reader (one bufio.Scanner line, 64 KiB).
constexpr size_t kMaxEnvValue = 32 * 1024;

bool IsEnvName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!(alpha || (i > 0 && c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> HostEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

absl::Status CheckEnvSetting(const EnvSetting& e) {
  if (!IsEnvName(e.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable name '", absl::CHexEscape(e.name),
                     "' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"));
  }
  if (e.value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value of ", e.name,
                     " contains a newline, carriage return or NUL, which an env file "
                     "cannot carry"));
  }
  if (e.value.size() > kMaxEnvValue) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value of ", e.name, " is longer than ", kMaxEnvValue, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EnvSetting>> ResolveProfileEnv(const pb::ResolvedProfile& profile,
                                                          const HostEnvLookup& lookup) {
  std::vector<EnvSetting> out;
  for (const pb::EnvVar& v : profile.env()) {
    const std::string key = absl::StrCat("profiles.", profile.name(), ".env.", v.name());
    EnvSetting e{v.name(), "", /*secret=*/true};
    switch (v.value_case()) {
      case pb::EnvVar::kLiteral:
        e.value = v.literal();
        break;
      case pb::EnvVar::kHostVar: {
        std::optional<std::string> got = lookup(v.host_var());
        if (!got.has_value()) {
          return absl::FailedPreconditionError(absl::StrCat(
              key, " = \"env:", v.host_var(), "\" pulls ", v.host_var(),
              " from lazaret's environment, but ", v.host_var(), " is not set. Set it (export ",
              v.host_var(), "=...) or remove the entry; Lazaret never passes an empty secret."));
        }
        if (got->empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              key, " = \"env:", v.host_var(), "\" pulls ", v.host_var(),
              " from lazaret's environment, but ", v.host_var(),
              " is empty. Set it to a value or remove the entry; Lazaret never passes an empty "
              "secret."));
        }
        e.value = *std::move(got);
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat(key, " has no value"));
    }
    if (absl::Status s = CheckEnvSetting(e); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(key, ": ", s.message()));
    }
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::string> EnvFileText(const std::vector<EnvSetting>& env) {
  std::string out;
  for (const EnvSetting& e : env) {
    if (absl::Status s = CheckEnvSetting(e); !s.ok()) return s;
    absl::StrAppend(&out, e.name, "=", e.value, "\n");
  }
  return out;
}

}  // namespace lazaret::cli::session
