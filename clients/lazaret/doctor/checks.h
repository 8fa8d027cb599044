// `lazaret doctor`'s checks: whether this host can run Lazaret sessions for
// the calling user, each with how to fix a problem. Runs in the user's
// terminal, as the user; reads host files and runs version queries,
// changes nothing. What host programs print is only reported, never acted on.
#ifndef LAZARET_CLIENTS_LAZARET_DOCTOR_CHECKS_H_
#define LAZARET_CLIENTS_LAZARET_DOCTOR_CHECKS_H_

#include <sys/types.h>

#include <functional>
#include <string>

namespace lazaret::cli::doctor {

// A failure means sessions cannot run; a warning does not stop them.
enum class Verdict { kOk, kWarn, kFail };

// The result of one check.
struct Finding {
  Verdict verdict = Verdict::kOk;
  std::string what;    // "podman", "/dev/fuse", ...
  std::string detail;  // what was found
  std::string fix;     // how to fix it; may be empty
};

// Who the checks are for.
struct HostUser {
  std::string name;  // from the passwd entry, else the uid
  uid_t uid = 0;
  bool rootless = false;  // sessions use rootless podman
};

HostUser CurrentUser();

struct CheckOptions {
  std::string runtime_dir;  // where the service set's sockets are
  std::string libexec_dir;  // the service binaries (whose router the sidecar image holds)
};

// Runs every check in order and hands each finding to `report` as soon as
// it is known (some checks take seconds).
void RunChecks(const HostUser& user, const CheckOptions& options,
               const std::function<void(const Finding&)>& report);

}  // namespace lazaret::cli::doctor

#endif  // LAZARET_CLIENTS_LAZARET_DOCTOR_CHECKS_H_
