// The workspace clamp: a workspace lazaret.toml whose exact content the
// user has not trusted may only narrow the merge of the user's own layers
// (embedded default, user file and --config); every widening is an error.
// See docs/configuration.md for the rule of each key; those of the network
// keys are in network_narrowing.h. Part of lazaret_config (runs in
// lazaret-configd and the loader fuzzer, which checks the clamp as a
// property). The workspace layer is untrusted text, possibly written by
// the agent.
#ifndef LAZARET_SERVICES_CONFIGD_NARROWING_H_
#define LAZARET_SERVICES_CONFIGD_NARROWING_H_

#include <vector>

#include "services/configd/diagnostics.h"
#include "services/configd/resolve.h"
#include "services/configd/schema.h"
#include "services/vocab/cidr.h"

namespace lazaret::config {

// Whether one network of `nets` covers all of `c`.
bool CoveredBy(const vocab::Cidr& c, const std::vector<Setting<vocab::Cidr>>& nets);

// The workspace layer `w` (untrusted) against the user's own merge `c`:
// each widening goes to `diags` as Diagnostics::Widening. `g` holds the
// data_root of `c` (empty when it does not resolve).
void CheckNarrowing(const LayerConfig& w, const LayerConfig& c, const LoadContext& g,
                    Diagnostics& diags);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_NARROWING_H_
