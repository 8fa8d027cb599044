// The Git Shadow's public names (clients/lazaret/gitshadow/, namespace
// lazaret::cli::gitshadow) in lazaret::cli, for the CLI code that includes
// this header.
#ifndef LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_
#define LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_

#include "clients/lazaret/gitshadow/import.h"
#include "clients/lazaret/gitshadow/plan.h"
#include "clients/lazaret/gitshadow/state.h"
#include "clients/lazaret/gitshadow/sync.h"

namespace lazaret::cli {

using gitshadow::GitShadowPlan;
using gitshadow::GitShadowRequest;
using gitshadow::kSandboxInitPath;
using gitshadow::kSandboxWorkspace;
using gitshadow::PlanGitShadow;
using gitshadow::WriteBack;
using gitshadow::WriteBackAll;
using gitshadow::WriteBackOptions;
using gitshadow::WriteBackReport;
using gitshadow::WriteBackTarget;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_
