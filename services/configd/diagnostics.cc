#include "services/configd/diagnostics.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lazaret::config {

const char* LayerName(Layer layer) {
  switch (layer) {
    case Layer::kEmbeddedDefault:
      return "embedded default";
    case Layer::kUser:
      return "user";
    case Layer::kWorkspace:
      return "workspace";
    case Layer::kExplicit:
      return "explicit";
  }
  return "unknown";
}

std::string FormatDiagnostic(const Diagnostic& d) {
  std::string out = d.file;
  if (d.line > 0) absl::StrAppend(&out, ":", d.line, ":", d.column);
  absl::StrAppend(&out, ": ");
  if (!d.key_path.empty()) absl::StrAppend(&out, d.key_path, ": ");
  absl::StrAppend(&out, d.message);
  if (!d.hint.empty()) absl::StrAppend(&out, "\n  fix: ", d.hint);
  return out;
}

void Diagnostics::Add(std::vector<Diagnostic>& to, Diagnostic d) {
  const bool dup = std::any_of(to.begin(), to.end(), [&](const Diagnostic& o) {
    return o.file == d.file && o.line == d.line && o.column == d.column &&
           o.key_path == d.key_path && o.message == d.message;
  });
  if (!dup) to.push_back(std::move(d));
}

void Diagnostics::Error(const Origin& at, std::string message, std::string hint) {
  Add(errors_, Diagnostic{at.file, at.key_path, at.line, at.column, std::move(message),
                          std::move(hint), false});
}

void Diagnostics::Widening(const Origin& at, std::string message, std::string hint) {
  Add(errors_, Diagnostic{at.file, at.key_path, at.line, at.column, std::move(message),
                          std::move(hint), true});
}

void Diagnostics::Warning(const Origin& at, std::string message, std::string hint) {
  Add(warnings_, Diagnostic{at.file, at.key_path, at.line, at.column, std::move(message),
                            std::move(hint), false});
}

absl::Status Diagnostics::ToStatus() const {
  if (errors_.empty()) return absl::OkStatus();
  bool widening = false;
  std::string msg = errors_.size() == 1
                        ? std::string("the configuration is invalid:\n")
                        : absl::StrCat("the configuration has ", errors_.size(), " errors:\n");
  for (const Diagnostic& d : errors_) {
    widening = widening || d.widening;
    absl::StrAppend(&msg, FormatDiagnostic(d), "\n");
  }
  msg.pop_back();
  return widening ? absl::PermissionDeniedError(msg) : absl::InvalidArgumentError(msg);
}

}  // namespace lazaret::config
