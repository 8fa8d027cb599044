// Reading one whole input file of an image build: the package list, the
// host's apt sources, the files that go into the sidecar. Runs in the
// `lazaret` CLI, as the user; every file is the user's own host file.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_READ_FILE_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace lazaret::cli::images {

// The bytes of the file at `path`; NotFound when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_READ_FILE_H_
