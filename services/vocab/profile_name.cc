#include "services/vocab/profile_name.h"

#include <algorithm>

namespace lazaret::vocab {

bool IsValidProfileName(absl::string_view name) {
  if (name.size() < 2 || name.size() > 32) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace lazaret::vocab
