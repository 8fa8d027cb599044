#include "clients/lazaret/held/display.h"

#include <google/protobuf/util/json_util.h>

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "lazaret/held/v1/held.pb.h"

namespace lazaret::cli::held {
namespace {

constexpr char kReverse[] = "\x1b[7m";
constexpr char kNoReverse[] = "\x1b[27m";
constexpr char kRed[] = "\x1b[31m";
constexpr char kGreen[] = "\x1b[32m";
constexpr char kReset[] = "\x1b[0m";
constexpr absl::string_view kNoNewline = "\\ No newline at end of file";

std::string TimeText(int64_t unix_time) {
  if (unix_time <= 0) return "?";
  const time_t t = static_cast<time_t>(unix_time);
  struct tm tm {};
  if (gmtime_r(&t, &tm) == nullptr) return "?";
  char buf[32];
  if (strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm) == 0) return "?";
  return buf;
}

}  // namespace

std::string RenderLine(const approve::Line& line, bool styled) {
  std::string out;
  for (const approve::Run& run : line) {
    if (run.marked) {
      if (styled) {
        absl::StrAppend(&out, kReverse, run.text, kNoReverse);
      } else {
        out += run.text;
      }
      continue;
    }
    if (styled) {
      out += run.text;
      continue;
    }
    for (char c : run.text) {
      if (c == '\\') {
        out += "\\\\";
      } else {
        out.push_back(c);
      }
    }
  }
  return out;
}

std::string ShowName(absl::string_view raw, bool styled) {
  return RenderLine(approve::DisplayVisible(raw), styled);
}

std::string ShowDiffLine(absl::string_view line, bool styled) {
  if (line == kNoNewline) return std::string(line);
  if (line.empty()) return "";
  const char tag = line.front();
  absl::string_view body = line.substr(1);
  size_t end = body.size();
  while (end > 0 && body[end - 1] == ' ') --end;
  approve::Line shown = approve::Display(body.substr(0, end));
  const size_t spaces = body.size() - end;
  if (spaces > 0) {
    shown.push_back(
        approve::Run{spaces == 1 ? "[1 space]" : absl::StrFormat("[%d spaces]", spaces), true});
  }
  // The tag is diff's own byte; anything unexpected there is escaped too.
  std::string head = (tag == ' ' || tag == '+' || tag == '-' || tag == '@')
                         ? std::string(1, tag)
                         : RenderLine(approve::Display(line.substr(0, 1)), styled);
  std::string text = absl::StrCat(head, RenderLine(shown, styled));
  if (styled && tag == '-') return absl::StrCat(kRed, text, kReset);
  if (styled && tag == '+') return absl::StrCat(kGreen, text, kReset);
  return text;
}

std::string ShowDiff(absl::string_view diff_output, absl::string_view rel, bool styled) {
  const std::string name = ShowName(rel, styled);
  std::string out = absl::StrCat("--- a/", name, "\n+++ b/", name, "\n");
  std::vector<absl::string_view> lines = absl::StrSplit(diff_output, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t first = 0;
  // diff's two header lines name the fixed labels ("--- a", "+++ b" and a
  // date-free tail); they are dropped for the header above.
  if (lines.size() >= 2 && absl::StartsWith(lines[0], "--- ") &&
      absl::StartsWith(lines[1], "+++ ")) {
    first = 2;
  }
  for (size_t i = first; i < lines.size(); ++i) {
    absl::StrAppend(&out, ShowDiffLine(lines[i], styled), "\n");
  }
  return out;
}

std::string SymlinkText(absl::string_view target) {
  return absl::StrCat("symlink -> ", target, "\n");
}

std::string ListText(absl::string_view profile, absl::string_view workspace,
                     const std::vector<HeldEntry>& entries, bool styled) {
  std::string out = absl::StrCat("Held for profile ", ShowName(profile, styled), " in ",
                                 ShowName(workspace, styled), ":\n");
  if (entries.empty()) {
    out += "  nothing held\n";
    return out;
  }
  for (const HeldEntry& e : entries) {
    absl::StrAppendFormat(&out, "  %-8s %-8s %-12s %-20s %s\n", ChangeName(e.change), e.kind,
                          e.session_id.empty() ? "?" : ShowName(e.session_id, styled),
                          TimeText(e.held_unix), ShowName(e.rel, styled));
  }
  absl::StrAppend(&out,
                  "\nReview with `lazaret held diff [PATH...]`; write into the folder with "
                  "`lazaret held apply PATH...`, or forget with `lazaret held drop PATH...`.\n");
  return out;
}

absl::StatusOr<std::string> ListJson(absl::string_view profile, absl::string_view workspace,
                                     const std::vector<HeldEntry>& entries) {
  ::lazaret::held::v1::Listing listing;
  listing.set_profile(ShowName(profile, false));
  listing.set_workspace(ShowName(workspace, false));
  for (const HeldEntry& e : entries) {
    ::lazaret::held::v1::Listing::Entry* j = listing.add_entries();
    j->set_path(ShowName(e.rel, false));
    j->set_path_bytes(e.rel);
    j->set_change(std::string(ChangeName(e.change)));
    j->set_kind(e.kind);
    j->set_session_id(ShowName(e.session_id, false));
    j->set_held_unix(e.held_unix);
  }
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  if (auto s = google::protobuf::util::MessageToJsonString(listing, &out, o); !s.ok()) {
    return absl::InternalError(absl::StrCat("printing the held list as JSON: ", s.ToString()));
  }
  return out;
}

}  // namespace lazaret::cli::held
