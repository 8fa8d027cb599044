// A session's secrets (profile key `secrets`, docs/configuration.md
// "Secrets"): each value resolved on the host when the session starts - a
// variable of `lazaret run`'s environment, a host file, or a command's
// output - and a placeholder made for it, which is all the sandbox ever
// gets. Runs in the session worker, as the user. The values go to
// lazaret-egressd only (egress_client.h) and are wiped when the worker has
// handed them over; no error here ever carries one.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SECRETS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SECRETS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/podman/mount_spec.h"

namespace lazaret::cli::session {

// The largest value read from a file or a command's output.
inline constexpr size_t kMaxSecretBytes = 16 * 1024;
// How long a `command` secret may take (a keyring prompt included).
inline constexpr int kSecretCommandSeconds = 60;
// "lzs-" and 32 lower-case hex digits from the kernel's random source.
inline constexpr char kPlaceholderPrefix[] = "lzs-";
inline constexpr size_t kPlaceholderSize = 36;

struct ResolvedSecret {
  lazaret::config::v1::Secret spec;
  std::string placeholder;
  std::string value;
};

// The resolved secrets of a session. Wipes every value on destruction.
class SessionSecrets {
 public:
  SessionSecrets() = default;
  ~SessionSecrets();
  SessionSecrets(const SessionSecrets&) = delete;
  SessionSecrets& operator=(const SessionSecrets&) = delete;

  std::vector<ResolvedSecret>& secrets() { return secrets_; }
  const std::vector<ResolvedSecret>& secrets() const { return secrets_; }
  // Forgets the values (wiped); names and placeholders stay.
  void WipeValues();

 private:
  std::vector<ResolvedSecret> secrets_;
};

// The caller's environment, whole (StartRequest.env): `env:` values are
// read from it and a `command` secret runs in it.
using CallerEnvironment = std::map<std::string, std::string>;

// Resolves every secret of `profile`. Errors name the secret and what to
// do, never a value: an unset or empty variable, an unreadable, empty or
// oversized file, a command that is not found on the caller's PATH, fails,
// times out, prints nothing or too much. A value must fit an HTTP header
// value: no control character but tab (one trailing newline, or CR LF, is
// removed first). Never partially: on any error nothing is returned.
absl::StatusOr<std::unique_ptr<SessionSecrets>> ResolveSecrets(
    const lazaret::config::v1::ResolvedProfile& profile, const CallerEnvironment& env);

// A fresh placeholder: kPlaceholderPrefix and 32 hex digits (getrandom).
std::string NewPlaceholder();

// The sandbox variables that hold the placeholders (each secret's
// sandbox_env, when set), marked secret as every env value.
std::vector<EnvSetting> PlaceholderEnv(const SessionSecrets& secrets);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SECRETS_H_
