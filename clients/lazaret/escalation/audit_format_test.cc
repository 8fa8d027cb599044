#include "clients/lazaret/escalation/audit_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/util/json_util.h"

namespace lazaret::cli::escalation {
namespace {

namespace apb = ::lazaret::approver::v1;
using ::testing::HasSubstr;
using ::testing::Not;

apb::AuditRecord Ran(apb::AuditRecord::Decision d) {
  apb::AuditRecord r;
  r.set_time("2026-12-01T17:00:00Z");
  r.set_session_id("0123456789ab");
  r.set_decision(d);
  r.add_argv("git");
  r.add_argv("status");
  *r.mutable_ran_argv() = r.argv();
  r.set_ran(true);
  r.set_exit_code(0);
  r.set_duration_ms(12);
  return r;
}

TEST(AuditFormatTest, AutoApprovedLineHasEveryField) {
  apb::AuditRecord r = Ran(apb::AuditRecord::DECISION_AUTO_APPROVED);
  r.set_auto_approve_entry("git status");
  EXPECT_EQ(AuditTextLine(r),
            "2026-12-01T17:00:00Z  0123456789ab  auto:git status  git status  exit 0  12 ms\n");
}

TEST(AuditFormatTest, EachDecisionSaysHowAndByWhom) {
  apb::AuditRecord r = Ran(apb::AuditRecord::DECISION_APPROVED);
  r.mutable_approver()->set_name("lazaret approve");
  r.mutable_approver()->set_tty("/dev/pts/3");
  EXPECT_EQ(DecisionText(r), "approved by lazaret approve@/dev/pts/3");
  r.mutable_approver()->clear_tty();
  EXPECT_EQ(DecisionText(r), "approved by lazaret approve");

  r.set_decision(apb::AuditRecord::DECISION_EDITED);
  r.mutable_approver()->set_name("ci");
  r.clear_ran_argv();
  r.add_ran_argv("git");
  r.add_ran_argv("status");
  r.add_ran_argv("--short");
  EXPECT_EQ(DecisionText(r), "edited by ci (asked: git status)");
  EXPECT_EQ(ArgvText(r), "git status --short");

  apb::AuditRecord d;
  d.set_decision(apb::AuditRecord::DECISION_DENIED);
  d.set_reason("not today");
  EXPECT_EQ(DecisionText(d), "denied: not today");
  d.set_decision(apb::AuditRecord::DECISION_ABORTED);
  EXPECT_EQ(DecisionText(d), "aborted: not today");
  d.set_decision(apb::AuditRecord::DECISION_REFUSED);
  d.set_reason("replayed request_id");
  EXPECT_EQ(DecisionText(d), "refused: replayed request_id");
  d.set_decision(apb::AuditRecord::DECISION_EXPIRED);
  d.clear_reason();
  EXPECT_EQ(DecisionText(d), "expired");
}

TEST(AuditFormatTest, NotRunTimedOutAndTruncatedAreMarked) {
  apb::AuditRecord denied;
  denied.set_decision(apb::AuditRecord::DECISION_DENIED);
  denied.set_command("rm -rf /");
  EXPECT_THAT(AuditTextLine(denied), HasSubstr("  rm -rf /  not run  0 ms\n"));

  apb::AuditRecord r = Ran(apb::AuditRecord::DECISION_APPROVED);
  r.set_timed_out(true);
  r.set_exit_code(-15);
  r.set_duration_ms(61500);
  r.set_stdout_truncated(true);
  r.set_stdout_bytes(5000000);
  r.set_stderr_truncated(true);
  r.set_stderr_bytes(2000000);
  EXPECT_THAT(AuditTextLine(r),
              HasSubstr("  timed out (exit -15)  1 min 1 s  stdout truncated (5000000 bytes)  "
                        "stderr truncated (2000000 bytes)\n"));
}

TEST(AuditFormatTest, ArgvIsShellQuotedAndNoRawControlOrNonAsciiByteReachesTheTerminal) {
  apb::AuditRecord r = Ran(apb::AuditRecord::DECISION_APPROVED);
  r.clear_ran_argv();
  r.add_ran_argv("echo");
  r.add_ran_argv("two words");
  r.add_ran_argv("it's");
  r.add_ran_argv("\x1b[2Jcleared");
  r.add_ran_argv("a\u202eb");  // a bidi override
  r.mutable_approver()->set_name("evil\rname");
  r.set_session_id("\x1b]0;title\x07");
  const std::string line = AuditTextLine(r);
  EXPECT_THAT(line,
              HasSubstr("echo 'two words' 'it'\\\\''s' '\\x1b[2Jcleared' 'a\\u{202E}b'"));
  EXPECT_THAT(line, HasSubstr("approved by evil\\rname"));
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << i << " of " << line;
  }
  EXPECT_EQ(line.back(), '\n');
}

TEST(AuditFormatTest, DurationsReadNaturally) {
  EXPECT_EQ(DurationText(0), "0 ms");
  EXPECT_EQ(DurationText(999), "999 ms");
  EXPECT_EQ(DurationText(3450), "3.4 s");
  EXPECT_EQ(DurationText(125000), "2 min 5 s");
}

TEST(AuditFormatTest, JsonLineUsesTheProtoFieldNamesAndParsesBack) {
  apb::AuditRecord r = Ran(apb::AuditRecord::DECISION_AUTO_APPROVED);
  r.set_stdout_truncated(true);
  absl::StatusOr<std::string> line = AuditJsonLine(r);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_THAT(*line, HasSubstr("\"session_id\":\"0123456789ab\""));
  EXPECT_THAT(*line, HasSubstr("\"stdout_truncated\":true"));
  EXPECT_THAT(*line, Not(HasSubstr("sessionId")));
  EXPECT_EQ(line->back(), '\n');
  EXPECT_EQ(line->find('\n'), line->size() - 1);
  apb::AuditRecord back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*line, &back).ok());
  EXPECT_EQ(back.SerializeAsString(), r.SerializeAsString());
}

TEST(AuditFormatTest, AStartRecordAndCutFieldsAreMarked) {
  apb::AuditRecord r;
  r.set_time("2026-12-01T17:00:00Z");
  r.set_session_id("0123456789ab");
  r.set_decision(apb::AuditRecord::DECISION_APPROVED);
  r.add_ran_argv("make");
  r.set_phase(apb::AuditRecord::PHASE_STARTED);
  (*r.mutable_truncated_bytes())["justification"] = 1048576;
  (*r.mutable_truncated_bytes())["argv[]"] = 5000;
  const std::string line = AuditTextLine(r);
  EXPECT_THAT(line, HasSubstr("  started"));
  EXPECT_THAT(line, Not(HasSubstr("not run")));
  EXPECT_THAT(line, HasSubstr("cut to fit the log: argv[] (words dropped: 5000), "
                              "justification (bytes: 1048576)"));
}

}  // namespace
}  // namespace lazaret::cli::escalation
