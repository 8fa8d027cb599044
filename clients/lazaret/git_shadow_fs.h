// The Git Shadow's descriptor-based file helpers (clients/lazaret/gitshadow/
// tree.h, namespace lazaret::cli::gitshadow) in lazaret::cli, for the CLI
// code that includes this header.
#ifndef LAZARET_CLIENTS_LAZARET_GIT_SHADOW_FS_H_
#define LAZARET_CLIENTS_LAZARET_GIT_SHADOW_FS_H_

#include "clients/lazaret/gitshadow/tree.h"

namespace lazaret::cli {

using gitshadow::DirFd;
using gitshadow::ReadRegularFileAt;
using gitshadow::WriteFileAt;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_GIT_SHADOW_FS_H_
