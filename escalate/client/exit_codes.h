// The exit codes of lazaret-escalate (inside the sandbox, unprivileged).
// 0-255 are the host command's own when it ran; when it did not, the client
// exits with one of the codes below, which common commands rarely use. A
// host command may itself exit 240-244: --json tells the two apart.
#ifndef LAZARET_ESCALATE_CLIENT_EXIT_CODES_H_
#define LAZARET_ESCALATE_CLIENT_EXIT_CODES_H_

namespace lazaret::escalation::client {

// The host command ran past the host's timeout and was stopped (as
// timeout(1) exits).
inline constexpr int kExitHostTimeout = 124;
// The request was denied (by a human or a rule); the reason is on stderr.
inline constexpr int kExitDenied = 240;
// Waiting ended: the client's --timeout, or the broker's approval timeout.
inline constexpr int kExitTimedOut = 241;
// The broker could not be reached: no socket, connection refused, the
// certificates are missing.
inline constexpr int kExitUnreachable = 242;
// TLS failed, a frame was malformed, or the broker refused the request as
// malformed.
inline constexpr int kExitProtocol = 243;
// The command line was wrong.
inline constexpr int kExitUsage = 244;

}  // namespace lazaret::escalation::client

#endif  // LAZARET_ESCALATE_CLIENT_EXIT_CODES_H_
