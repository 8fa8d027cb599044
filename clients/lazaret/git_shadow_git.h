// Host git for the Git Shadow (clients/lazaret/gitshadow/git.h, namespace
// lazaret::cli::gitshadow) in lazaret::cli, for the CLI code that includes
// this header.
#ifndef LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_
#define LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_

#include "clients/lazaret/gitshadow/git.h"

namespace lazaret::cli {

using gitshadow::GitResult;
using gitshadow::kGitQueryTimeout;
using gitshadow::RunGitRaw;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_
