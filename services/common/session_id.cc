#include "services/common/session_id.h"

namespace lazaret {

bool IsValidSessionId(std::string_view id) {
  if (id.size() != kSessionIdLength) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace lazaret
