// The environment the supervisor, its services and its launcher run with.
// Runs in `lazaret up` (for the supervisor it spawns) and in the supervisor
// (for every child), so that neither the user's whole environment nor
// anything set in the shell that ran `lazaret up` reaches a service: only
// the variables named here pass, each as it was.
#ifndef LAZARET_SERVICES_COMMON_SERVICE_ENVIRONMENT_H_
#define LAZARET_SERVICES_COMMON_SERVICE_ENVIRONMENT_H_

#include <string>
#include <vector>

namespace lazaret {

// True for the names that pass: identity and locale (HOME, USER, LOGNAME,
// LANG, LANGUAGE, LC_*, TZ, TMPDIR, PATH), the XDG base directories,
// Lazaret's own (LAZARET_RUNTIME_DIR, LAZARET_LIBEXEC_DIR, LAZARET_RUNSC,
// LAZARET_OVERLAY, the audit log's LAZARET_AUDIT_LOG, _MAX_BYTES, _FILES)
// and what podman needs to find the same containers as the CLI when
// lazaret-sessiond runs or reaps a session (CONTAINERS_CONF,
// CONTAINERS_STORAGE_CONF, DBUS_SESSION_BUS_ADDRESS), and the OpenSSL
// store the egress proxy verifies upstreams against (SSL_CERT_FILE,
// SSL_CERT_DIR).
bool PassesToServices(const std::string& name);

// "NAME=value" entries of `envp` (a NULL-terminated array such as environ)
// whose name passes, in order; PATH gets a fixed default when unset.
std::vector<std::string> ServiceEnvironment(char* const* envp);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SERVICE_ENVIRONMENT_H_
