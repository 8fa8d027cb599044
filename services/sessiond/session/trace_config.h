// The sandbox's connection log: the pod-init-config file runsc reads
// (--pod-init-config), which turns on gVisor runtime monitoring for the
// one trace point `syscall/connect/exit` and sends it to lazaret-netpolicyd's
// trace socket in the session directory (services/netpolicyd/trace_sink.h),
// so every connect() the agent makes, allowed or refused, is logged with
// the rule that decided it. Runs in the session worker. The sink is set up
// with ignore_setup_error false: runsc refuses to start a sandbox whose
// log socket is not there, so no sandbox runs unlogged.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TRACE_CONFIG_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TRACE_CONFIG_H_

#include <string>

#include "absl/status/status.h"

namespace lazaret::cli::session {

class SessionDir;

// <session dir>/trace.json and <session dir>/trace.sock (the socket is
// lazaret-netpolicyd's, bound when it attaches the session).
std::string TraceConfigPath(const std::string& session_path);
std::string TraceSocketPath(const std::string& session_path);

// The file's JSON (runsc/boot/seccheck.go InitConfig of runsc 20240729).
std::string TraceConfigJson(const std::string& socket_path);

// Writes trace.json, mode 0600, refusing to follow or replace anything.
absl::Status WriteTraceConfig(SessionDir& dir);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TRACE_CONFIG_H_
