// Forwarding header: Lazaret's local images live in clients/lazaret/images/
// (namespace lazaret::cli::images); the image tag `lazaret doctor` compares
// comes from images/tags.h.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGE_H_
#define LAZARET_CLIENTS_LAZARET_IMAGE_H_

#include "clients/lazaret/images/tags.h"  // IWYU pragma: export

namespace lazaret::cli {

using images::SidecarImageTag;

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_IMAGE_H_
