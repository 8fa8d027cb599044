// Located configuration messages. Part of the lazaret_config library (runs in
// lazaret-configd, its tests and the loader fuzzer). A Diagnostic is data
// about the user's files, not a failure of the loader: loading collects every
// problem it can find so that `lazaret config check` shows all of them at once.
#ifndef LAZARET_SERVICES_CONFIGD_DIAGNOSTICS_H_
#define LAZARET_SERVICES_CONFIGD_DIAGNOSTICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

// `s` in double quotes, as it is: a key or value the schema already checked,
// in a diagnostic's message.
inline std::string InQuotes(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// A std::string as the absl::string_view the checks take.
inline absl::string_view ViewOf(const std::string& s) {
  return absl::string_view(s.data(), s.size());
}

// The configuration layers, lowest precedence first.
enum class Layer { kEmbeddedDefault, kUser, kWorkspace, kExplicit };

// "embedded default", "user", "workspace", "explicit".
const char* LayerName(Layer layer);

// Where a value was written: file, dotted key path and 1-based position.
// The embedded default has the file name kEmbeddedFileName.
struct Origin {
  Layer layer = Layer::kEmbeddedDefault;
  std::string file;
  std::string key_path;
  uint32_t line = 0;
  uint32_t column = 0;
};

inline constexpr char kEmbeddedFileName[] = "<built-in default>";

struct Diagnostic {
  std::string file;
  std::string key_path;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string message;
  std::string hint;  // how to fix it; may be empty
  // True when the problem is a workspace file widening what the user granted.
  bool widening = false;
};

// "file:line:col: key.path: message" and, when there is a hint, a second
// line "  fix: hint".
std::string FormatDiagnostic(const Diagnostic& d);

// Collects errors and warnings; drops exact duplicates (the same value can be
// looked at by more than one check).
class Diagnostics {
 public:
  void Error(const Origin& at, std::string message, std::string hint = "");
  void Widening(const Origin& at, std::string message, std::string hint);
  void Warning(const Origin& at, std::string message, std::string hint = "");

  bool has_errors() const { return !errors_.empty(); }
  const std::vector<Diagnostic>& errors() const { return errors_; }
  const std::vector<Diagnostic>& warnings() const { return warnings_; }

  // OK without errors. Otherwise PermissionDenied when any error is a
  // refused widening, else InvalidArgument; the message lists every error.
  absl::Status ToStatus() const;

 private:
  static void Add(std::vector<Diagnostic>& to, Diagnostic d);
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
};

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_DIAGNOSTICS_H_
