// Moved to services/common/fs/sha256.h (lazaret_fs).
#ifndef LAZARET_SERVICES_COMMON_SHA256_H_
#define LAZARET_SERVICES_COMMON_SHA256_H_

#include "services/common/fs/sha256.h"

namespace lazaret {
using ::lazaret::fs::Sha256;
}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SHA256_H_
