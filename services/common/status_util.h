// Status helpers shared by every Lazaret process. No exceptions cross any
// Lazaret boundary: fallible calls return absl::Status / absl::StatusOr.
#ifndef LAZARET_SERVICES_COMMON_STATUS_UTIL_H_
#define LAZARET_SERVICES_COMMON_STATUS_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret {

// A Status carrying errno's text, prefixed by what was being done.
absl::Status ErrnoStatus(const std::string& what, int err);

}  // namespace lazaret

#define LAZ_STATUS_CONCAT_INNER_(a, b) a##b
#define LAZ_STATUS_CONCAT_(a, b) LAZ_STATUS_CONCAT_INNER_(a, b)

#define LAZ_RETURN_IF_ERROR(expr)                               \
  do {                                                          \
    if (absl::Status laz_status_ = (expr); !laz_status_.ok()) { \
      return laz_status_;                                       \
    }                                                           \
  } while (0)

#define LAZ_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(*tmp)

#define LAZ_ASSIGN_OR_RETURN(lhs, expr) \
  LAZ_ASSIGN_OR_RETURN_IMPL_(LAZ_STATUS_CONCAT_(laz_statusor_, __LINE__), lhs, expr)

#endif  // LAZARET_SERVICES_COMMON_STATUS_UTIL_H_
