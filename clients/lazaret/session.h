// Former path of clients/lazaret/session/session_dir.h (the session
// directory, in lazaret_session); include that instead. These names stay
// reachable in lazaret::cli for code that still uses them from here.
#ifndef LAZARET_CLIENTS_LAZARET_SESSION_H_
#define LAZARET_CLIENTS_LAZARET_SESSION_H_

#include "clients/lazaret/session/session_dir.h"

namespace lazaret::cli {

using session::RemoveSessionTree;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_SESSION_H_
