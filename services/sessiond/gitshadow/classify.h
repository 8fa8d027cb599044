// What may stay in the trees the sandbox writes (the object store, the
// agent's refs and reflogs, the session directory): the names git itself
// writes there. Runs in the `lazaret` CLI on the host. Pure: each decision
// is made from a name the agent chose (relative to the walk root) and the
// entry's kind; SweepTree (tree.h) removes whatever is refused, and
// anything that is neither a regular file nor a directory, before host git
// reads any of it.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_CLASSIFY_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_CLASSIFY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "services/sessiond/gitshadow/tree.h"

namespace lazaret::cli::gitshadow {

// The names git writes in an object directory (loose objects of
// `hex_length`-digit ids, packs, info/, commit graphs, temporary files and
// quarantine directories). info/http-alternates is rejected; info/alternates
// is kept here and checked separately by content.
Verdict ClassifyObjectStoreEntry(size_t hex_length, const std::vector<std::string>& rel,
                                 EntryKind kind);

// Names below refs/heads/lazaret/ (refs) and logs/refs/heads/lazaret/
// (reflogs): every component a valid ref component, files optionally with a
// ".lock" suffix (a write in progress).
Verdict ClassifyRefTreeEntry(const std::vector<std::string>& rel, EntryKind kind);

// The session directory (see plan.cc): regular files "packed-refs" and
// "index", and git's lock and temporary files next to them. Nothing deeper.
Verdict ClassifySessionEntry(const std::vector<std::string>& rel, EntryKind kind);

// True when `s` is not empty and only lowercase hex digits.
bool IsLowerHex(const std::string& s);

// "pack-<40 or 64 hex digits>" with one of the suffixes git gives the files
// of a pack (.pack, .idx, .rev, .keep, .mtimes, .promisor, .bitmap).
bool IsPackFileName(const std::string& name);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_CLASSIFY_H_
