#include "clients/lazaret/config/options.h"

#include <unistd.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/configd/layer_files.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::config {

std::string Cwd() {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return "";
  return buf;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return absl::StrCat(Cwd(), "/", path);
}

absl::StatusOr<ConfigArgs> ParseConfigArgs(const std::vector<std::string>& args, size_t from,
                                           bool show) {
  ConfigArgs out;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag, std::string* into) -> bool {
      const std::string eq = absl::StrCat(flag, "=");
      if (a == flag && i + 1 < args.size()) {
        *into = args[++i];
        return true;
      }
      if (absl::StartsWith(a, eq)) {
        *into = a.substr(eq.size());
        return true;
      }
      return false;
    };
    if (value("--config", &out.explicit_config)) continue;
    if (show && value("--profile", &out.profile)) continue;
    if (show && a == "--json") {
      out.json = true;
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown or incomplete argument '", a, "'"));
  }
  if (!out.explicit_config.empty()) out.explicit_config = Absolute(out.explicit_config);
  return out;
}

absl::StatusOr<TrustArgs> ParseTrustArgs(const std::vector<std::string>& args) {
  TrustArgs out;
  out.file = ::lazaret::config::kWorkspaceFileName;
  int files = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--revoke") {
      out.revoke = true;
    } else if (a == "--sha256" && i + 1 < args.size()) {
      out.expected_sha256 = absl::AsciiStrToLower(args[++i]);
    } else if (absl::StartsWith(a, "--sha256=")) {
      out.expected_sha256 = absl::AsciiStrToLower(a.substr(9));
    } else if (!a.empty() && a[0] != '-' && files++ == 0) {
      out.file = a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", vocab::EscapeForTerminal(a), "'"));
    }
  }
  return out;
}

bool IsSha256Hex(absl::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace lazaret::cli::config
