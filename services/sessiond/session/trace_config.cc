#include "services/sessiond/session/trace_config.h"

#include "absl/strings/str_cat.h"
#include "services/sessiond/session/session_dir.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace lazaret::cli::session {

std::string TraceConfigPath(const std::string& session_path) {
  return absl::StrCat(session_path, "/trace.json");
}

std::string TraceSocketPath(const std::string& session_path) {
  return absl::StrCat(session_path, "/trace.sock");
}

std::string TraceConfigJson(const std::string& socket_path) {
  using google::protobuf::Struct;
  using google::protobuf::Value;
  auto text = [](const std::string& s) {
    Value v;
    v.set_string_value(s);
    return v;
  };
  // "Default" is the only session name runsc accepts. The context fields
  // are what the log shows: when, and which process. retries 0: a full
  // socket drops the record (the header's dropped counter says how many)
  // rather than slowing the sandbox's connect() down.
  Value point;
  Struct& p = *point.mutable_struct_value();
  (*p.mutable_fields())["name"] = text("syscall/connect/exit");
  auto* fields = (*p.mutable_fields())["context_fields"].mutable_list_value();
  *fields->add_values() = text("time");
  *fields->add_values() = text("process_name");
  Value sink;
  Struct& k = *sink.mutable_struct_value();
  (*k.mutable_fields())["name"] = text("remote");
  Struct& cfg = *(*k.mutable_fields())["config"].mutable_struct_value();
  (*cfg.mutable_fields())["endpoint"] = text(socket_path);
  (*cfg.mutable_fields())["retries"].set_number_value(0);
  (*k.mutable_fields())["ignore_setup_error"].set_bool_value(false);
  Struct session;
  (*session.mutable_fields())["name"] = text("Default");
  *(*session.mutable_fields())["points"].mutable_list_value()->add_values() = point;
  *(*session.mutable_fields())["sinks"].mutable_list_value()->add_values() = sink;
  Struct config;
  *(*config.mutable_fields())["trace_session"].mutable_struct_value() = session;
  std::string out;
  // A Struct of strings, numbers and booleans always prints.
  (void)google::protobuf::util::MessageToJsonString(config, &out);
  return out + "\n";
}

absl::Status WriteTraceConfig(SessionDir& dir) {
  return dir.WriteTraceConfig(TraceConfigJson(TraceSocketPath(dir.path())));
}

}  // namespace lazaret::cli::session
