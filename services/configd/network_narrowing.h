// The workspace clamp for the [network] keys and the network keys of each
// profile (default_allow, allow_egress, allow_domains, dns_upstream, http):
// CheckNarrowing (narrowing.h) hands them here. Part of lazaret_config
// (runs in lazaret-configd and the loader fuzzer). The workspace layer is
// untrusted text, possibly written by the agent.
#ifndef LAZARET_SERVICES_CONFIGD_NETWORK_NARROWING_H_
#define LAZARET_SERVICES_CONFIGD_NETWORK_NARROWING_H_

#include <string>
#include <vector>

#include "services/configd/diagnostics.h"
#include "services/configd/schema.h"

namespace lazaret::config {

// Whether one pattern of `granted` covers `name` (DomainCovers).
bool NameCoveredBy(const std::string& name, const std::vector<Setting<std::string>>& granted);

// The workspace layer `w` (untrusted) against the user's own merge `c`:
// each widening of a network key goes to `diags` as Diagnostics::Widening
// with `hint`. Profiles of `w` that `c` lacks are left to the caller.
void CheckNetworkNarrowing(const LayerConfig& w, const LayerConfig& c, const std::string& hint,
                           Diagnostics& diags);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_NETWORK_NARROWING_H_
