#include "services/common/service_environment.h"

#include <array>
#include <string_view>

namespace lazaret {
namespace {

constexpr std::array<std::string_view, 30> kPassed = {
    "HOME",
    "USER",
    "LOGNAME",
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    "LAZARET_RUNTIME_DIR",
    "LAZARET_LIBEXEC_DIR",
    "LAZARET_RUNSC",
    "LAZARET_OVERLAY",
    // The broker's audit log: where, and its rotation (docs/operations.md).
    "LAZARET_AUDIT_LOG",
    "LAZARET_AUDIT_MAX_BYTES",
    "LAZARET_AUDIT_FILES",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "DBUS_SESSION_BUS_ADDRESS",
    // The store the user's OpenSSL trusts: lazaret-egressd verifies each
    // upstream against it, as the user's own programs would.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "LC_ALL",
    "LC_CTYPE",
};

constexpr char kDefaultPath[] = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

}  // namespace

bool PassesToServices(const std::string& name) {
  if (name.rfind("LC_", 0) == 0 && name.size() > 3) return true;
  for (std::string_view p : kPassed) {
    if (name == p) return true;
  }
  return false;
}

std::vector<std::string> ServiceEnvironment(char* const* envp) {
  std::vector<std::string> out;
  bool has_path = false;
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = entry.substr(0, eq);
    if (!PassesToServices(name)) continue;
    has_path = has_path || name == "PATH";
    out.push_back(entry);
  }
  if (!has_path) out.push_back(kDefaultPath);
  return out;
}

}  // namespace lazaret
