// Printing what lazaret-configd answers for `lazaret config`: the layers
// found, the diagnostics and a resolved profile. Runs in the user's
// terminal. Prints the service's answers as they are, except the network
// entries, names and their files, which are escaped (terminal_text.h): a
// workspace file may have supplied them. `lazaret trust`, which shows the
// lines of an agent-written file, escapes everything it prints.
// Environment values are never printed.
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_PRINT_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_PRINT_H_

#include <cstdio>
#include <string>

#include "lazaret/common/v1/common.pb.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::config {

// "embedded default", "user", "workspace", "--config" (or "?").
const char* LayerText(::lazaret::common::v1::ConfigLayer l);

// "file:line:col: key.path: message" and the hint (diagnostics.h).
std::string FormatDiagnostic(const ::lazaret::config::v1::Diagnostic& d);

// The layers, lowest first, with their digests and whether the workspace
// file is trusted.
void PrintLayers(
    const google::protobuf::RepeatedPtrField<::lazaret::config::v1::LayerInfo>& layers);

// One "<kind>: <diagnostic>" line each.
void PrintDiagnostics(
    const char* kind,
    const google::protobuf::RepeatedPtrField<::lazaret::config::v1::Diagnostic>& ds, FILE* out);

// The profile of `resp`, each key with the layer that set it, each network
// entry and allowed name with its file and line. Literal
// environment values are not shown, only their names.
void PrintProfile(const ::lazaret::config::v1::ResolveProfileResponse& resp);

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_PRINT_H_
