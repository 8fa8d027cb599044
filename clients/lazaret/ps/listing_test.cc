#include "clients/lazaret/ps/listing.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::cli::ps {
namespace {

namespace pb = ::lazaret::session::v1;
using google::protobuf::Value;

constexpr int64_t kNow = 1764963053;  // 2025-12-05T19:30:53Z

// A profile name with a quote, a backslash, a newline and a control byte.
const std::string kOddName = "a\"b\\c\nd\x01";

pb::SessionInfo Live() {
  pb::SessionInfo s;
  s.set_id("3637741f8722");
  s.set_profile(kOddName);
  s.set_workspace("/home/u/src/app");
  s.set_started_unix(kNow - 120);
  s.set_state(pb::SESSION_STATE_RUNNING);
  s.set_attached(0);
  s.set_detached_since_unix(kNow - 60);
  s.set_stop_at_unix(kNow + 3600);
  s.set_tty(true);
  s.set_worker_pid(4242);
  s.add_command("claude");
  s.add_command("--x=\"y\"");
  s.set_attach_socket("/run/user/1000/lazaret/sessions/3637741f8722/attach.sock");
  return s;
}

session::FoundSession Orphan(const std::string& id, bool has_record) {
  session::FoundSession d;
  d.id = id;
  d.path = "/run/user/1000/lazaret/sessions/" + id;
  d.owner_alive = false;
  d.has_record = has_record;
  if (has_record) {
    d.record.id = id;
    d.record.profile = "default";
    d.record.workspace = "/home/u/w";
    d.record.pid = 77;
    d.record.started_unix = kNow - 7200;
  }
  return d;
}

// `text` parsed by protobuf's strict JSON parser; fails the test when it is
// not JSON.
google::protobuf::Struct Parse(const std::string& text) {
  google::protobuf::Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &s).ok()) << text;
  return s;
}

TEST(PsListingTest, RowsMergeLiveAndOrphanedSessionsById) {
  session::FoundSession alive = Orphan("000000000001", true);
  alive.owner_alive = true;  // a live worker sessiond has not listed (yet): not a row
  session::FoundSession listed = Orphan("3637741f8722", true);  // its worker just died
  const std::vector<Row> rows =
      Rows({Live()}, {Orphan("ffffffffffff", false), alive, listed, Orphan("0a0000000000", true)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].info.id(), "0a0000000000");
  EXPECT_TRUE(rows[0].orphaned);
  EXPECT_EQ(rows[0].info.worker_pid(), 77);
  EXPECT_EQ(rows[1].info.id(), "3637741f8722");
  EXPECT_FALSE(rows[1].orphaned);
  EXPECT_EQ(rows[2].info.id(), "ffffffffffff");
  EXPECT_TRUE(rows[2].orphaned);
  EXPECT_FALSE(rows[2].has_record);
}

TEST(PsListingTest, JsonIsExactlyTheDocumentedObject) {
  const std::string text = Json(Rows({Live()}, {Orphan("ffffffffffff", false)}));
  EXPECT_EQ(text, R"({"sessions":[)"
                  R"({"id":"3637741f8722","state":"running","profile":"a\"b\\c\u000ad\u0001",)"
                  R"("workspace":"/home/u/src/app","started":"2025-12-05T19:28:53Z",)"
                  R"("started_unix":1764962933,"attached":0,)"
                  R"("detached_since":"2025-12-05T19:29:53Z","detached_since_unix":1764962993,)"
                  R"("stop_at":"2025-12-05T20:30:53Z","stop_at_unix":1764966653,"tty":true,)"
                  R"("worker_pid":4242,"command":["claude","--x=\"y\""],)"
                  R"("attach_socket":"/run/user/1000/lazaret/sessions/3637741f8722/attach.sock"},)"
                  R"({"id":"ffffffffffff","state":"orphaned","profile":"","workspace":"",)"
                  R"("started":null,"started_unix":0,"attached":0,"detached_since":null,)"
                  R"("detached_since_unix":0,"stop_at":null,"stop_at_unix":0,"tty":false,)"
                  R"("worker_pid":0,"command":[],"attach_socket":""}],"spares":[]})");
}

TEST(PsListingTest, SparesAreListedBesideTheSessions) {
  pb::SpareInfo ready;
  ready.set_id("0123456789ab");
  ready.set_workspace("/home/u/src/app");
  ready.set_ready(true);
  pb::SpareInfo preparing;
  preparing.set_workspace("/srv/x\"y");
  EXPECT_EQ(Json({}, {ready, preparing}),
            R"({"sessions":[],"spares":[{"id":"0123456789ab","workspace":"/home/u/src/app",)"
            R"("ready":true},{"id":"","workspace":"/srv/x\"y","ready":false}]})");
  const google::protobuf::Struct doc = Parse(Json(Rows({Live()}, {}), {ready}));
  EXPECT_EQ(doc.fields().at("sessions").list_value().values_size(), 1);
  const auto& spare = doc.fields().at("spares").list_value().values(0).struct_value().fields();
  EXPECT_EQ(spare.at("id").string_value(), "0123456789ab");
  EXPECT_TRUE(spare.at("ready").bool_value());
}

TEST(PsListingTest, JsonParsesBackToTheSameNames) {
  const google::protobuf::Struct doc = Parse(Json(Rows({Live()}, {Orphan("0a0000000000", true)})));
  const auto& sessions = doc.fields().at("sessions").list_value();
  ASSERT_EQ(sessions.values_size(), 2);
  const auto& orphan = sessions.values(0).struct_value().fields();
  EXPECT_EQ(orphan.at("state").string_value(), "orphaned");
  EXPECT_EQ(orphan.at("profile").string_value(), "default");
  EXPECT_EQ(orphan.at("started").string_value(), "2025-12-05T17:30:53Z");
  EXPECT_EQ(orphan.at("worker_pid").number_value(), 77);
  const auto& live = sessions.values(1).struct_value().fields();
  EXPECT_EQ(live.at("profile").string_value(), kOddName);
  EXPECT_EQ(live.at("command").list_value().values(1).string_value(), "--x=\"y\"");
}

TEST(PsListingTest, EveryFieldOfSessionInfoIsInTheJsonUnderItsProtoName) {
  const google::protobuf::Struct doc = Parse(Json(Rows({Live()}, {})));
  const auto& session = doc.fields().at("sessions").list_value().values(0).struct_value().fields();
  const google::protobuf::Descriptor* d = pb::SessionInfo::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    EXPECT_EQ(session.count(d->field(i)->name()), 1u)
        << "lazaret ps --json lacks SessionInfo." << d->field(i)->name();
  }
}

TEST(PsListingTest, NoSessionsIsAnEmptyList) {
  EXPECT_EQ(Json({}), R"({"sessions":[],"spares":[]})");
}

TEST(PsListingTest, TimesOutsideRfc3339AreNull) {
  EXPECT_EQ(Rfc3339Utc(0), "");
  EXPECT_EQ(Rfc3339Utc(-5), "");
  EXPECT_EQ(Rfc3339Utc(253402300799), "9999-12-31T23:59:59Z");
  EXPECT_EQ(Rfc3339Utc(253402300800), "");
  pb::SessionInfo s = Live();
  s.set_stop_at_unix(INT64_MAX);
  const google::protobuf::Struct doc = Parse(Json(Rows({s}, {})));
  const auto& f = doc.fields().at("sessions").list_value().values(0).struct_value().fields();
  EXPECT_EQ(f.at("stop_at").kind_case(), Value::kNullValue);
}

TEST(PsListingTest, TableEscapesNamesAndShowsOrphans) {
  const std::vector<std::string> lines =
      TableLines(Rows({Live()}, {Orphan("ffffffffffff", false)}), kNow);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].substr(0, 7), "SESSION");
  EXPECT_EQ(lines[1],
            "3637741f8722  a\"b\\\\c\\nd\\x01        running    2m     detached 60s, stop in 60m  "
            "/home/u/src/app");
  EXPECT_EQ(lines[2],
            "ffffffffffff  ?                    orphaned   ?      -                          -");
}

}  // namespace
}  // namespace lazaret::cli::ps
