#include "clients/lazaret/images/read_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace lazaret::cli::images {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace lazaret::cli::images
