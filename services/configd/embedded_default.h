// The built-in lowest configuration layer, so that Lazaret works with no
// file at all. Part of lazaret_config. docs/configuration.md restates it;
// a unit test parses it with the same loader as every user file.
#ifndef LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_
#define LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_

#include <string>
#include "services/common/constants.h"

namespace lazaret::config {

// The default image and profile names (kDefaultSandboxImage,
// kDefaultProfileName) are in services/common/constants.h.
// The embedded default layer as TOML text.
const std::string& EmbeddedDefaultToml();

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_
