// Every `lazaret` subcommand, one function each. Grouped by the file that
// implements them.
#ifndef LAZARET_CLIENTS_LAZARET_COMMANDS_H_
#define LAZARET_CLIENTS_LAZARET_COMMANDS_H_

#include <string>
#include <vector>

#include "clients/lazaret/cli.h"

namespace lazaret::cli {

// service_set_cmd.cc: the service set.
int CmdUp(const Context& ctx, const std::vector<std::string>& args);
int CmdDown(const Context& ctx, const std::vector<std::string>& args);
int CmdStatus(const Context& ctx, const std::vector<std::string>& args);

// config_cmd.cc: the configuration and workspace trust.
int CmdConfig(const Context& ctx, const std::vector<std::string>& args);
int CmdTrust(const Context& ctx, const std::vector<std::string>& args);

// run_cmd.cc: one agent session (docs/operations.md, docs/architecture.md).
int CmdRun(const Context& ctx, const std::vector<std::string>& args);

// attach_cmd.cc: a terminal attached to a running session (attach/).
int CmdAttach(const Context& ctx, const std::vector<std::string>& args);

// sessions_cmd.cc: the sessions of this runtime directory.
int CmdPs(const Context& ctx, const std::vector<std::string>& args);
int CmdStop(const Context& ctx, const std::vector<std::string>& args);
int CmdClean(const Context& ctx, const std::vector<std::string>& args);

// state_cmd.cc: a profile's persistent directories (persist/).
int CmdState(const Context& ctx, const std::vector<std::string>& args);

// held_cmd.cc: the held changes to files host programs act on (held/).
int CmdHeld(const Context& ctx, const std::vector<std::string>& args);

// net_cmd.cc: a live session's egress policy (net/).
int CmdNet(const Context& ctx, const std::vector<std::string>& args);

// port_cmd.cc: a live session's inbound port forwards (net/port_args.h).
int CmdPort(const Context& ctx, const std::vector<std::string>& args);

// audit_cmd.cc: the escalation audit (escalation/).
int CmdAudit(const Context& ctx, const std::vector<std::string>& args);

// approve_cmd.cc: the terminal approver (approve/).
int CmdApprove(const Context& ctx, const std::vector<std::string>& args);

// image_cmd.cc: Lazaret's local images (sandbox, sidecar).
int CmdImage(const Context& ctx, const std::vector<std::string>& args);

// doctor_cmd.cc: host checks (doctor/).
int CmdDoctor(const Context& ctx, const std::vector<std::string>& args);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_COMMANDS_H_
