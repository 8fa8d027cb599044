#include "clients/lazaret/persist/state_format.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::persist {
namespace {

namespace pb = ::lazaret::mounthelper::v1;
using vocab::EscapeForTerminal;

std::string Sizes(const pb::DirectoryState& d) {
  return absl::StrCat(HumanBytes(d.bytes()), ", ", d.files(), d.files() == 1 ? " file" : " files");
}

// "  changed (3): a b c" or "  changed (25, first 20): ..."
void AppendSample(std::string* out, const char* what, uint64_t total,
                  const google::protobuf::RepeatedPtrField<std::string>& sample) {
  if (total == 0 && sample.empty()) return;
  std::vector<std::string> shown;
  for (const std::string& p : sample) shown.push_back(EscapeForTerminal(p));
  const uint64_t listed = static_cast<uint64_t>(sample.size());
  absl::StrAppend(out, "    ", what, " (", total,
                  total > listed ? absl::StrCat(", first ", listed) : std::string(),
                  "): ", absl::StrJoin(shown, " "), "\n");
}

// 262144 -> "262,144"
std::string Grouped(uint64_t n) {
  std::string digits = absl::StrCat(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "persistent data: 1.2 GiB used of the 4.0 GiB cap (2.8 GiB free, 1,234
// of 262,144 inodes), loop-mounted ext4 image"
std::string UsageLine(const pb::DescribeStateResponse& s) {
  const pb::PersistentUsage& u = s.usage();
  const std::string cap = HumanBytes(u.cap_bytes());
  if (!u.exists()) {
    return absl::StrCat("  persistent data: none yet (cap ", cap,
                        ", preallocated at the profile's first session)\n");
  }
  if (u.held_by().empty()) {
    return absl::StrCat("  persistent data: cap ", cap, "; usage unknown: ",
                        EscapeForTerminal(u.note()), "\n");
  }
  std::string out = absl::StrCat(
      "  persistent data: ", HumanBytes(u.used_bytes()), " used of the ", cap, " cap (",
      HumanBytes(u.free_bytes()), " free, ", Grouped(u.inodes_used()), " of ",
      Grouped(u.inodes_total()), " inodes), ", EscapeForTerminal(u.held_by()), "\n");
  // A cap changed since the image was made applies at the next mount (the
  // image is a whole number of 4 KiB blocks).
  if (u.size_bytes() != u.cap_bytes() - u.cap_bytes() % 4096) {
    absl::StrAppend(&out, "    made for a cap of ", HumanBytes(u.size_bytes()),
                    "; persistent_cap ", cap, " applies when the next session mounts it\n");
  }
  return out;
}

}  // namespace

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    v /= 1024.0;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[u]);
}

std::string StateText(const pb::DescribeStateResponse& s) {
  std::string out = absl::StrCat("Profile ", EscapeForTerminal(s.profile()), " (",
                                 EscapeForTerminal(s.profile_dir()), ")\n");
  if (s.directories().empty()) {
    absl::StrAppend(&out, "  no persistent directories (persistent_dirs is empty)\n");
    return out;
  }
  absl::StrAppend(&out, UsageLine(s));
  for (const pb::DirectoryState& d : s.directories()) {
    absl::StrAppend(&out, "  ", EscapeForTerminal(d.directory()), ": ", Sizes(d), " changed in ",
                    EscapeForTerminal(d.changes()),
                    d.overlay().empty() ? ""
                                        : absl::StrCat(" (", EscapeForTerminal(d.overlay()), ")"),
                    "\n");
    if (!d.limit().empty()) {
      absl::StrAppend(&out, "    NOT WALKED IN FULL, the counts are lower bounds: ",
                      EscapeForTerminal(d.limit()),
                      "\n    (lazaret state reset removes all of it)\n");
    } else if (d.changed_total() == 0 && d.deleted_total() == 0) {
      absl::StrAppend(&out, "    no changes: the image's own content\n");
    }
    if (!d.uncapped_changes().empty()) {
      absl::StrAppend(&out, "    A LAYER FROM BEFORE persistent_cap is at ",
                      EscapeForTerminal(d.uncapped_changes()),
                      ": never mounted again. Copy what you need from it, then `lazaret state "
                      "reset ",
                      EscapeForTerminal(s.profile()), "` removes it\n");
    }
    AppendSample(&out, "changed", d.changed_total(), d.changed());
    AppendSample(&out, "deleted", d.deleted_total(), d.deleted());
    if (d.mounted()) {
      std::vector<std::string> ids;
      for (const std::string& id : d.sessions()) ids.push_back(EscapeForTerminal(id));
      absl::StrAppend(&out, "    mounted by ",
                      ids.empty() ? std::string("no live session (lazaret clean unmounts it)")
                                  : absl::StrCat("session", ids.size() == 1 ? " " : "s ",
                                                 absl::StrJoin(ids, ", ")),
                      "\n");
    } else {
      absl::StrAppend(&out, "    not mounted\n");
    }
  }
  return out;
}

absl::StatusOr<std::string> StateJson(const pb::DescribeStateResponse& s) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (auto st = google::protobuf::util::MessageToJsonString(s, &out, o); !st.ok()) {
    return absl::InternalError(absl::StrCat("printing the state as JSON: ", st.ToString()));
  }
  return out;
}

std::string ResetQuestion(const pb::DescribeStateResponse& s, const std::string& directory) {
  std::vector<std::string> parts;
  for (const pb::DirectoryState& d : s.directories()) {
    if (!directory.empty() && d.directory() != directory) continue;
    parts.push_back(absl::StrCat(EscapeForTerminal(d.directory()), " (", Sizes(d), ")"));
  }
  if (parts.empty()) {
    return absl::StrCat("profile ", EscapeForTerminal(s.profile()), " has no persistent directory ",
                        EscapeForTerminal(directory));
  }
  const bool whole_image = directory.empty() && s.usage().exists();
  return absl::StrCat("drop every change the sandbox made to ", absl::StrJoin(parts, ", "),
                      " of profile ", EscapeForTerminal(s.profile()),
                      whole_image ? absl::StrCat(" and delete its persistent data image (",
                                                 HumanBytes(s.usage().cap_bytes()), " cap)")
                                  : std::string(),
                      "; the next session starts from the image's content");
}

std::string CleanupText(const pb::CleanupResponse& c) {
  std::string out;
  for (const pb::OverlayMount& m : c.unmounted()) {
    absl::StrAppend(&out, "unmounted the overlay of ", EscapeForTerminal(m.directory()),
                    " of profile ", EscapeForTerminal(m.profile()), " (",
                    EscapeForTerminal(m.merged()), "; no live session held it)\n");
  }
  return out;
}

}  // namespace lazaret::cli::persist
