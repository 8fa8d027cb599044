// Tiny helper for the "--name=value" flags of the service binaries.
#ifndef LAZARET_SERVICES_COMMON_FLAGS_H_
#define LAZARET_SERVICES_COMMON_FLAGS_H_

#include <string_view>

namespace lazaret {

// If `arg` starts with `prefix`, strips it and returns true.
inline bool ConsumeFlag(std::string_view& arg, std::string_view prefix) {
  if (!arg.starts_with(prefix)) return false;
  arg.remove_prefix(prefix.size());
  return true;
}

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_FLAGS_H_
