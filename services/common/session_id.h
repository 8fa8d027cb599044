// Session ids: 12 lowercase hex digits from getrandom(), made by `lazaret
// run`. Every process that takes one from a file, a socket or a command line
// (the CLI, the supervisor's registry and reaping, sessiond) checks it
// with this one function before it names a path or a container with it.
#ifndef LAZARET_SERVICES_COMMON_SESSION_ID_H_
#define LAZARET_SERVICES_COMMON_SESSION_ID_H_

#include <cstddef>
#include <string_view>

namespace lazaret {

inline constexpr size_t kSessionIdLength = 12;

bool IsValidSessionId(std::string_view id);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SESSION_ID_H_
