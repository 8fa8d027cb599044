#include "clients/lazaret/ps/listing.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "clients/lazaret/json/json_writer.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::ps {
namespace {

namespace pb = ::lazaret::session::v1;

// "42s", "5m", "3h", "2d".
std::string Duration(int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return absl::StrCat(s, "s");
  if (s < 7200) return absl::StrCat(s / 60, "m");
  if (s < 172800) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

std::string Age(int64_t started, int64_t now) {
  if (started <= 0) return "?";
  return Duration(now - started);
}

std::string StateName(const Row& r) {
  if (r.orphaned) return "orphaned";
  switch (r.info.state()) {
    case pb::SESSION_STATE_STARTING:
      return "starting";
    case pb::SESSION_STATE_RUNNING:
      return "running";
    case pb::SESSION_STATE_STOPPING:
      return "stopping";
    default:
      return "?";
  }
}

// "1", "2", or "detached 5m" and, when the profile keeps an unattended
// session for a while, "stop in 11h".
std::string Attached(const pb::SessionInfo& s, int64_t now) {
  if (s.attached() > 0) return absl::StrCat(s.attached());
  std::string out = s.detached_since_unix() > 0
                        ? absl::StrCat("detached ", Duration(now - s.detached_since_unix()))
                        : std::string("detached");
  if (s.stop_at_unix() > 0) absl::StrAppend(&out, ", stop in ", Duration(s.stop_at_unix() - now));
  return out;
}

// A time as RFC 3339, or null when there is none.
std::string TimeJson(int64_t unix_seconds) {
  const std::string t = Rfc3339Utc(unix_seconds);
  return t.empty() ? std::string("null") : json::Quote(t);
}

}  // namespace

std::vector<Row> Rows(const std::vector<pb::SessionInfo>& live,
                      const std::vector<session::FoundSession>& dirs) {
  std::map<std::string, Row> by_id;
  for (const pb::SessionInfo& s : live) by_id[s.id()].info = s;
  for (const session::FoundSession& d : dirs) {
    if (d.owner_alive || by_id.count(d.id) != 0) continue;
    Row r;
    r.orphaned = true;
    r.has_record = d.has_record;
    r.info.set_id(d.id);
    if (d.has_record) {
      r.info.set_profile(d.record.profile);
      r.info.set_workspace(d.record.workspace);
      r.info.set_started_unix(d.record.started_unix);
      r.info.set_worker_pid(d.record.pid);
    }
    by_id[d.id] = std::move(r);
  }
  std::vector<Row> rows;
  rows.reserve(by_id.size());
  for (auto& [id, row] : by_id) rows.push_back(std::move(row));
  return rows;
}

std::vector<std::string> TableLines(const std::vector<Row>& rows, int64_t now_unix) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat("%-13s %-20s %-10s %-6s %-26s %s", "SESSION", "PROFILE", "STATE",
                                  "AGE", "ATTACHED", "WORKSPACE"));
  for (const Row& r : rows) {
    const pb::SessionInfo& s = r.info;
    lines.push_back(
        absl::StrFormat("%-13s %-20s %-10s %-6s %-26s %s", vocab::EscapeForTerminal(s.id()),
                        r.has_record ? vocab::EscapeForTerminal(s.profile()) : "?", StateName(r),
                        Age(s.started_unix(), now_unix), r.orphaned ? "-" : Attached(s, now_unix),
                        r.has_record ? vocab::EscapeForTerminal(s.workspace()) : "-"));
  }
  return lines;
}

std::string Json(const std::vector<Row>& rows, const std::vector<pb::SpareInfo>& spares) {
  std::vector<std::string> sessions;
  sessions.reserve(rows.size());
  for (const Row& r : rows) {
    const pb::SessionInfo& s = r.info;
    json::Object o;
    o.String("id", s.id())
        .String("state", StateName(r))
        .String("profile", s.profile())
        .String("workspace", s.workspace())
        .Raw("started", TimeJson(s.started_unix()))
        .Int("started_unix", s.started_unix())
        .Int("attached", s.attached())
        .Raw("detached_since", TimeJson(s.detached_since_unix()))
        .Int("detached_since_unix", s.detached_since_unix())
        .Raw("stop_at", TimeJson(s.stop_at_unix()))
        .Int("stop_at_unix", s.stop_at_unix())
        .Bool("tty", s.tty())
        .Int("worker_pid", s.worker_pid())
        .Raw("command", json::StringArray({s.command().begin(), s.command().end()}))
        .String("attach_socket", s.attach_socket());
    sessions.push_back(o.Text());
  }
  std::vector<std::string> spare_objects;
  for (const pb::SpareInfo& s : spares) {
    spare_objects.push_back(json::Object()
                                .String("id", s.id())
                                .String("workspace", s.workspace())
                                .Bool("ready", s.ready())
                                .Text());
  }
  return json::Object()
      .Raw("sessions", json::Array(sessions))
      .Raw("spares", json::Array(spare_objects))
      .Text();
}

std::string Rfc3339Utc(int64_t unix_seconds) {
  // RFC 3339 has four-digit years: up to 9999-12-31T23:59:59Z.
  constexpr int64_t kLast = 253402300799;
  if (unix_seconds <= 0 || unix_seconds > kLast) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_seconds),
                          absl::UTCTimeZone());
}

}  // namespace lazaret::cli::ps
