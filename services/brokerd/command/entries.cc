#include "services/brokerd/command/entries.h"

#include "absl/strings/str_cat.h"
#include "services/vocab/escape.h"
#include "services/vocab/text_scan.h"

namespace lazaret::brokerd::command {

absl::StatusOr<std::vector<AutoApproveEntry>> ResolveEntries(
    const lazaret::config::v1::EscalationPolicy& policy, std::vector<std::string>* warnings,
    absl::string_view search_path) {
  std::vector<AutoApproveEntry> entries;
  for (const lazaret::config::v1::CommandPrefix& prefix : policy.auto_approve()) {
    const std::string shown = vocab::EscapeForDisplay(prefix.text(), nullptr);
    if (prefix.argv().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("auto_approve entry '", shown, "' has no command"));
    }
    for (const std::string& word : prefix.argv()) {
      const vocab::TextFindings f = vocab::ScanText(word);
      if (f.any()) {
        return absl::InvalidArgumentError(
            absl::StrCat("auto_approve entry '", shown, "': a word ", f.first));
      }
    }
    absl::StatusOr<ResolvedBinary> binary = ResolveCommandName(prefix.argv(0), search_path);
    if (absl::IsNotFound(binary.status())) {
      if (warnings != nullptr) {
        warnings->push_back(absl::StrCat("auto_approve entry '", shown,
                                         "' is not used: ", binary.status().message()));
      }
      continue;
    }
    if (!binary.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("auto_approve entry '", shown, "': ", binary.status().message()));
    }
    // An option list is re-checked like the words: the listing rule
    // accepted only option-shaped words, and options on an exact entry
    // would mean a configuration that never passed it.
    if (prefix.exact() && !prefix.options().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("auto_approve entry '", shown, "' is exact and lists options"));
    }
    for (const std::string& option : prefix.options()) {
      if (option.size() < 2 || option[0] != '-' || option.find('=') != std::string::npos ||
          vocab::ScanText(option).any()) {
        return absl::InvalidArgumentError(absl::StrCat("auto_approve entry '", shown, "' lists '",
                                                       vocab::EscapeForDisplay(option, nullptr),
                                                       "', which is not an option word"));
      }
    }
    AutoApproveEntry entry;
    entry.argv.assign(prefix.argv().begin(), prefix.argv().end());
    entry.exact = prefix.exact();
    entry.options.assign(prefix.options().begin(), prefix.options().end());
    entry.text = prefix.text();
    entry.binary = std::move(*binary);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace lazaret::brokerd::command
