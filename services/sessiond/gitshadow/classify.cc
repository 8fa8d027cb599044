#include "services/sessiond/gitshadow/classify.h"

#include <string>

#include "absl/strings/match.h"
#include "services/sessiond/gitshadow/refs.h"

namespace lazaret::cli::gitshadow {
namespace {

bool IsTemporaryName(const std::string& name) {
  return absl::StartsWith(name, "tmp_") || absl::StartsWith(name, ".tmp-") ||
         absl::EndsWith(name, ".lock");
}

}  // namespace

bool IsLowerHex(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsPackFileName(const std::string& name) {
  static constexpr const char* kSuffixes[] = {".pack",   ".idx",      ".rev",   ".keep",
                                              ".mtimes", ".promisor", ".bitmap"};
  if (!absl::StartsWith(name, "pack-")) return false;
  for (const char* suffix : kSuffixes) {
    if (absl::EndsWith(name, suffix)) {
      const std::string hex =
          name.substr(5, name.size() - 5 - std::char_traits<char>::length(suffix));
      return IsLowerHex(hex) && (hex.size() == 40 || hex.size() == 64);
    }
  }
  return false;
}

Verdict ClassifyObjectStoreEntry(size_t hex_length, const std::vector<std::string>& rel,
                                 EntryKind kind) {
  const bool dir = kind == EntryKind::kDirectory;
  const std::string& name = rel.back();
  // Quarantine and temporary object directories git makes while receiving
  // or writing objects: allowed (a few levels), never imported.
  if (absl::StartsWith(rel[0], "incoming-") || absl::StartsWith(rel[0], "tmp_objdir-")) {
    return (rel.size() <= 3 && (dir ? rel.size() <= 2 : true)) ? Verdict::kKeep : Verdict::kRemove;
  }
  if (rel.size() == 1) {
    if (dir) {
      return ((name.size() == 2 && IsLowerHex(name)) || name == "pack" || name == "info")
                 ? Verdict::kKeep
                 : Verdict::kRemove;
    }
    // Temporary objects, and locks such as the maintenance.lock of `git gc`.
    return IsTemporaryName(name) ? Verdict::kKeep : Verdict::kRemove;
  }
  const std::string& parent = rel[rel.size() - 2];
  if (rel.size() == 2) {
    if (parent.size() == 2 && IsLowerHex(parent)) {
      return (!dir && ((name.size() == hex_length - 2 && IsLowerHex(name)) ||
                       absl::StartsWith(name, "tmp_obj_")))
                 ? Verdict::kKeep
                 : Verdict::kRemove;
    }
    if (parent == "pack") {
      return (!dir && (IsPackFileName(name) || IsTemporaryName(name) || name == "multi-pack-index"))
                 ? Verdict::kKeep
                 : Verdict::kRemove;
    }
    if (parent == "info") {
      if (dir) return name == "commit-graphs" ? Verdict::kKeep : Verdict::kRemove;
      return (name == "alternates" || name == "packs" || name == "commit-graph" ||
              IsTemporaryName(name))
                 ? Verdict::kKeep
                 : Verdict::kRemove;
    }
    return Verdict::kRemove;
  }
  if (rel.size() == 3 && rel[0] == "info" && rel[1] == "commit-graphs" && !dir) {
    const bool graph = absl::StartsWith(name, "graph-") && absl::EndsWith(name, ".graph");
    return (graph || name == "commit-graph-chain" || IsTemporaryName(name)) ? Verdict::kKeep
                                                                            : Verdict::kRemove;
  }
  return Verdict::kRemove;
}

Verdict ClassifySessionEntry(const std::vector<std::string>& rel, EntryKind kind) {
  if (rel.size() != 1 || kind != EntryKind::kFile) return Verdict::kRemove;
  const std::string& name = rel[0];
  return (name == "packed-refs" || name == "index" ||
          ((absl::StartsWith(name, "packed-refs.") || absl::StartsWith(name, "index.")) &&
           (absl::EndsWith(name, ".lock") || absl::EndsWith(name, ".new"))))
             ? Verdict::kKeep
             : Verdict::kRemove;
}

Verdict ClassifyRefTreeEntry(const std::vector<std::string>& rel, EntryKind kind) {
  std::string name = rel.back();
  if (kind == EntryKind::kFile && absl::EndsWith(name, ".lock")) {
    name.resize(name.size() - 5);
  }
  return IsValidRefComponent(name) ? Verdict::kKeep : Verdict::kRemove;
}

}  // namespace lazaret::cli::gitshadow
