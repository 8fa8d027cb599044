#include "services/common/service_catalog.h"

#include "absl/strings/str_cat.h"

namespace lazaret {

const ServiceEntry* FindService(std::string_view name) {
  for (const ServiceEntry* s : kServiceCatalog) {
    if (s->name == name) return s;
  }
  return nullptr;
}

std::string ServiceSocketPath(const std::string& runtime_dir, const ServiceEntry& service) {
  return absl::StrCat(runtime_dir, "/", service.socket);
}

}  // namespace lazaret
