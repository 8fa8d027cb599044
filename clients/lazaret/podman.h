// Former path of clients/lazaret/session/podman.h (the podman driver of
// lazaret_session); include that instead. These names stay reachable in
// lazaret::cli for code that still uses them from here.
#ifndef LAZARET_CLIENTS_LAZARET_PODMAN_H_
#define LAZARET_CLIENTS_LAZARET_PODMAN_H_

#include "clients/lazaret/session/podman.h"

namespace lazaret::cli {

using session::FindRunsc;
using session::ImageExists;
using session::kImageInputsLabel;
using session::kRunscEnv;
using session::kSandboxRepository;
using session::kSidecarImage;
using session::kSidecarRepository;
using session::Rootless;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_PODMAN_H_
