#include "services/sessiond/session/run_args.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/net/port_args.h"

namespace lazaret::cli::session {

absl::StatusOr<RunArgs> ParseRunArgs(const std::vector<std::string>& args, const std::string& cwd) {
  RunArgs out;
  size_t i = 0;
  auto value = [&](const std::string& a, const char* flag,
                   std::string* into) -> absl::StatusOr<bool> {
    const std::string eq = absl::StrCat(flag, "=");
    if (a == flag) {
      if (i + 1 >= args.size() || args[i + 1].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      *into = args[++i];
      return true;
    }
    if (absl::StartsWith(a, eq)) {
      *into = a.substr(eq.size());
      if (into->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      return true;
    }
    return false;
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.command.assign(args.begin() + i + 1, args.end());
      return out;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a == "--worktree") {
      out.worktree = true;
      continue;
    }
    if (a == "--dry-run") {
      out.dry_run = true;
      continue;
    }
    auto c = value(a, "--config", &out.explicit_config);
    if (!c.ok()) return c.status();
    if (*c) {
      if (out.explicit_config[0] != '/')
        out.explicit_config = absl::StrCat(cwd, "/", out.explicit_config);
      continue;
    }
    auto b = value(a, "--branch", &out.branch);
    if (!b.ok()) return b.status();
    if (*b) continue;
    std::string port;
    auto p = value(a, "-p", &port);
    if (!p.ok()) return p.status();
    if (!*p) {
      p = value(a, "--publish", &port);
      if (!p.ok()) return p.status();
    }
    if (*p) {
      absl::StatusOr<lazaret::common::v1::PortForward> f = net::ParsePortSpec(port);
      if (!f.ok()) return absl::InvalidArgumentError(absl::StrCat("-p ", f.status().message()));
      out.ports.push_back(*std::move(f));
      continue;
    }
    auto ap = value(a, "--approver", &out.approver);
    if (!ap.ok()) return ap.status();
    if (*ap) {
      if (out.approver != "inline" && out.approver != "remote") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--approver '", out.approver,
            "' is not an approver: inline (prompt in this terminal when no lazaret approve is "
            "attached) or remote (never prompt here)"));
      }
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown option '", a, "' (options go before the profile; a command goes after --)"));
  }
  if (i < args.size()) {
    out.profile = args[i++];
    if (i < args.size() && args[i] == "--") ++i;
    out.command.assign(args.begin() + i, args.end());
  }
  return out;
}

}  // namespace lazaret::cli::session
