// The workspace scan's public names (clients/lazaret/workspace/, namespace
// lazaret::cli::workspace) in lazaret::cli, for the CLI code that includes
// this header. (Its include guard is not the path's: that one is
// workspace/scan.h's.)
#ifndef LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_NAMES_H_
#define LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_NAMES_H_

#include "clients/lazaret/workspace/privileges.h"
#include "clients/lazaret/workspace/roots.h"
#include "clients/lazaret/workspace/scan.h"
#include "clients/lazaret/workspace/snapshot.h"

namespace lazaret::cli {

using workspace::GitDirSnapshot;
using workspace::kSnapshotFileName;
using workspace::ParseSnapshot;
using workspace::ReportLines;
using workspace::ScanAtSessionEnd;
using workspace::ScanLimits;
using workspace::ScanReport;
using workspace::ScanRoot;
using workspace::SerializeSnapshot;
using workspace::StripPrivilegeBits;
using workspace::TakeGitDirSnapshot;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_NAMES_H_
