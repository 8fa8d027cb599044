// The built-in lowest configuration layer, so that Lazaret works with no
// file at all. Part of lazaret_config. docs/configuration.md restates it;
// a unit test parses it with the same loader as every user file.
#ifndef LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_
#define LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_

#include <string>

namespace lazaret::config {

// The sandbox image built locally from deploy/images/sandbox. The one
// place the default image name is written.
inline constexpr char kDefaultImage[] = "localhost/lazaret-sandbox:trixie";

// The name of the profile the embedded default defines.
inline constexpr char kDefaultProfileName[] = "default";

// The embedded default layer as TOML text.
const std::string& EmbeddedDefaultToml();

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_EMBEDDED_DEFAULT_H_
