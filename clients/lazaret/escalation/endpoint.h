// The check of lazaret-brokerd's answer to AttachSession before anything of
// it is mounted into a sandbox. Runs in the `lazaret` CLI (`lazaret run`),
// as the user. The broker is a host service of the same user, but the two
// directories it names become bind mounts of the session's containers (the
// socket directory of its network sidecar, the certificate directory of its
// sandbox), so they are checked here as if anyone could have written the
// answer: the session it
// names, the socket directory's exact path, ownership, mode and content, and
// the certificate directory's filesystem (memory only), ownership, mode and
// files. Only a CheckedEndpoint can be planned as mounts (session/plan.h).
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_ENDPOINT_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_ENDPOINT_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "lazaret/broker/v1/broker.pb.h"
#include "services/common/service_catalog.h"

namespace lazaret::cli::escalation {

// The socket in a session's endpoint directory (its name in the service
// catalog), and the files of its certificate directory (docs/escalation.md).
inline constexpr const auto& kEndpointSocketName = kEscalationSocketName;
inline constexpr const char* kCertificateFiles[] = {"ca.pem", "client.pem", "client.key"};

// <profile socket_dir>/<session_id>: the only directory AttachSession may
// name for the session's socket.
std::string SessionSocketDir(const std::string& profile_socket_dir, const std::string& session_id);

// Where the broker keeps a session's certificates, as the plan and the dry
// run show it before the broker is asked: /dev/shm/lazaret-<uid>.XXXXXX/<id>
// (a memory filesystem: /run and /tmp need not be one). The XXXXXX is the
// broker's random root (services/brokerd/tls/private_dir.h), so the path
// is not predictable; the directory the broker names in its answer is what
// is checked and mounted.
std::string ExpectedCertsDir(uid_t uid, const std::string& session_id);

// An endpoint whose directories passed CheckEndpoint.
class CheckedEndpoint {
 public:
  const std::string& session_id() const { return session_id_; }
  const std::string& socket_dir() const { return socket_dir_; }
  const std::string& certs_dir() const { return certs_dir_; }
  int64_t certificate_not_after() const { return not_after_; }

 private:
  friend absl::StatusOr<CheckedEndpoint> CheckEndpoint(const ::lazaret::broker::v1::Endpoint&,
                                                       const std::string&, const std::string&,
                                                       uid_t);
  CheckedEndpoint() = default;

  std::string session_id_;
  std::string socket_dir_;
  std::string certs_dir_;
  int64_t not_after_ = 0;
};

// Accepts `answer` only when: its session_id is `session_id`; its socket_dir
// is `expected_socket_dir` exactly and is a real directory (not a symlink)
// owned by `owner`, mode 0700, holding only escalate.sock, which is a
// socket; its certs_dir is a clean absolute path <root>/<session_id> where
// root and certs_dir are real directories owned by `owner`, mode 0700, the
// latter on tmpfs or ramfs, holding ca.pem, client.pem and
// client.key as regular files owned by `owner` that nobody else may read.
// The error says which of these failed.
absl::StatusOr<CheckedEndpoint> CheckEndpoint(const ::lazaret::broker::v1::Endpoint& answer,
                                              const std::string& session_id,
                                              const std::string& expected_socket_dir, uid_t owner);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_ENDPOINT_H_
