// Whether a profile's persistent_dirs keep a package manager coherent: a
// package manager's installed files and the record of what it installed
// must persist together, or the next sandbox's package manager is wrong
// about its own system (files it no longer knows, or records of files that
// are gone). Part of lazaret_config (runs in lazaret-configd and the loader
// fuzzer); the directories are clean absolute container paths from a
// checked layer. The result is advice for `lazaret config check`, never a
// refusal: such a profile still runs.
#ifndef LAZARET_SERVICES_CONFIGD_PERSIST_COHERENCE_H_
#define LAZARET_SERVICES_CONFIGD_PERSIST_COHERENCE_H_

#include <string>
#include <vector>

namespace lazaret::config {

struct CoherenceWarning {
  std::string message;
  std::string hint;
};

// The warnings for one profile's persistent directories, in the order of
// the rules (CoherenceRules in persist_coherence.cc), at most a few per
// package manager. Empty for a coherent set or one no rule concerns.
std::vector<CoherenceWarning> CheckPersistCoherence(const std::vector<std::string>& dirs);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_PERSIST_COHERENCE_H_
