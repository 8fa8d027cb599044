#include "services/wire/messages.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/status_util.h"
#include "services/vocab/profile_name.h"
#include "services/vocab/utf8.h"
#include "services/wire/strict_json.h"

namespace lazaret::escalation {
namespace {

absl::Status ParseStrict(absl::string_view json, google::protobuf::Message* message) {
  LAZ_RETURN_IF_ERROR(CheckStrictJson(json, *message->GetDescriptor()));
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (!status.ok()) {
    // protobuf's message may quote the input; say only that a value had the
    // wrong type or form.
    return absl::InvalidArgumentError(absl::StrCat(
        "a value in the ", message->GetDescriptor()->name(), " does not fit its field type"));
  }
  return absl::OkStatus();
}

bool IsRequestIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

absl::Status CheckRequest(const v1::EscalateRequest& r) {
  const std::string& id = r.request_id();
  if (id.empty() || id.size() > kMaxRequestIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id must be 1 to 64 characters, got ", id.size()));
  }
  for (char c : id) {
    if (!IsRequestIdChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat("request_id ", QuoteForError(id),
                                                     " has a character outside [A-Za-z0-9._-]"));
    }
  }
  if (!vocab::IsValidProfileName(r.profile())) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile ", QuoteForError(r.profile()), " is not a profile name"));
  }
  const bool has_command = !r.command().empty();
  const bool has_argv = r.argv_size() > 0;
  if (has_command == has_argv) {
    return absl::InvalidArgumentError("exactly one of command and argv must be given");
  }
  if (has_argv) {
    if (static_cast<size_t>(r.argv_size()) > kMaxArgvElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("argv has ", r.argv_size(), " elements, more than 4096"));
    }
    if (r.argv(0).empty()) return absl::InvalidArgumentError("argv[0] is empty");
  }
  if (r.justification().size() > kMaxJustification) {
    return absl::InvalidArgumentError(
        absl::StrCat("justification is ", r.justification().size(), " bytes, more than 8192"));
  }
  if (!r.cwd().empty() && r.cwd()[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("cwd ", QuoteForError(r.cwd()), " is not absolute"));
  }
  return absl::OkStatus();
}

// protobuf's printer would replace a string that is not UTF-8 by "" (and
// log): an argv element must never change silently, so such a message is
// not printed at all.
bool StringsAreUtf8(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const bool text = field->type() == FieldDescriptor::TYPE_STRING;
    const bool nested = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!text && !nested) continue;
    const int n = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < n; ++i) {
      if (text) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        if (!vocab::IsValidUtf8(value)) return false;
      } else {
        const auto& sub = field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                               : reflection->GetMessage(message, field);
        if (!StringsAreUtf8(sub)) return false;
      }
    }
  }
  return true;
}

std::string Print(const google::protobuf::Message& message) {
  if (!StringsAreUtf8(message)) return "";
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "";
  return out;
}

}  // namespace


absl::StatusOr<v1::EscalateRequest> ParseRequest(absl::string_view json) {
  v1::EscalateRequest request;
  LAZ_RETURN_IF_ERROR(ParseStrict(json, &request));
  LAZ_RETURN_IF_ERROR(CheckRequest(request));
  return request;
}

absl::StatusOr<v1::ServerFrame> ParseServerFrame(absl::string_view json) {
  v1::ServerFrame frame;
  LAZ_RETURN_IF_ERROR(ParseStrict(json, &frame));
  if (frame.frame_case() == v1::ServerFrame::FRAME_NOT_SET) {
    return absl::InvalidArgumentError("a server frame with neither pending nor result");
  }
  return frame;
}

std::string SerializeRequest(const v1::EscalateRequest& request) { return Print(request); }
std::string SerializeServerFrame(const v1::ServerFrame& frame) { return Print(frame); }
std::string SerializeResponse(const v1::EscalateResponse& response) { return Print(response); }

}  // namespace lazaret::escalation
