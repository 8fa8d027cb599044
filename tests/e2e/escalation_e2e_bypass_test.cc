// The auto-approve bypass corpus from inside a real sandbox: wrappers,
// paths instead of bare names, VAR=value, shell syntax, invisible and
// confusable characters, shortened or lengthened listed entries. None may
// be auto-approved: each either reaches the scripted approver as pending
// (it denies, and says it saw it) or is refused outright; the audit must
// agree. A request that only adds arguments to a prefix entry is
// auto-approved (the positive control). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

struct Bypass {
  std::string label;
  std::vector<std::string> argv;  // sent as argv when not empty
  std::string command;            // sent as command otherwise
};

std::vector<Bypass> Corpus() {
  const std::string zwsp = "\xe2\x80\x8b";       // U+200B zero width space
  const std::string rlo = "\xe2\x80\xae";        // U+202E right-to-left override
  const std::string fullwidth = "\xef\xbd\x95";  // U+FF55 fullwidth small u
  return {
      {"env-wrapper", {"env", "uname", "-s"}, ""},
      {"timeout-wrapper", {"timeout", "5", "uname", "-s"}, ""},
      {"xargs-wrapper", {"xargs", "uname", "-s"}, ""},
      {"dot-slash", {"./uname", "-s"}, ""},
      {"absolute-path", {"/usr/bin/uname", "-s"}, ""},
      {"var-assignment", {}, "VAR=x uname -s"},
      {"semicolon", {}, "uname -s; id"},
      {"substitution", {}, "uname -s $(id)"},
      {"zero-width-command", {}, "uname -s" + zwsp},
      {"zero-width-argv", {"uname", "-s" + zwsp}, ""},
      {"bidi-override", {}, "uname -s" + rlo},
      {"fullwidth", {}, fullwidth + "name -s"},
      {"tab", {}, "uname\t-s"},
      {"quoted", {}, "'uname' -s"},
      {"shorter-than-entry", {"test", "-e"}, ""},
      {"unlisted-option", {"uname", "-a"}, ""},
      {"bundled-options", {"uname", "-sn"}, ""},
      {"longer-exact", {"test", "-e", "/nonexistent-lazaret-e2e", "-o", "-e", "/etc/passwd"}, ""},
  };
}

TEST_F(EscE2eTest, BypassCorpusIsNeverAutoApproved) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::vector<Bypass> corpus = Corpus();
  auto approver =
      ScriptedApprover::Start({"--session=" + a->id(), "--deny=bypass corpus",
                               "--count=" + std::to_string(corpus.size()), "--timeout=300"});
  std::vector<std::string> ids;
  std::vector<RawExchange> exchanges;
  for (const auto& b : corpus) {
    const std::string id = NewId("bypass-");
    ids.push_back(id);
    const std::string payload = b.argv.empty() ? CommandRequestJson(id, kProfile, b.command)
                                               : RequestJson(id, kProfile, b.argv);
    CommandResult r = Raw(*a, {"send", "--payload-json", payload});
    exchanges.push_back(ParseRawExchange(r.out));
    EXPECT_TRUE(exchanges.back().bad_lines.empty()) << b.label << ": " << r.out << r.err;
  }
  approver->Stop();
  ASSERT_AUDIT(records, a->id());
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string& label = corpus[i].label;
    const RawExchange& x = exchanges[i];
    ASSERT_EQ(x.results(), 1) << label << ": " << x.end;
    const EscalateResponse res = x.result();
    EXPECT_FALSE(res.approved()) << label << " ran: " << res.ShortDebugString();
    EXPECT_EQ(res.stdout(), "") << label;
    std::vector<AuditRecord> rec = ByRequestId(records, ids[i]);
    ASSERT_EQ(rec.size(), 1u) << label << ": one audit record per request";
    EXPECT_FALSE(rec[0].ran()) << label;
    const std::string d = DecisionName(rec[0]);
    if (d == "DECISION_DENIED") {
      // It went to a human: the script saw it pending and denied it.
      EXPECT_TRUE(approver->Saw(ids[i])) << label;
      EXPECT_TRUE(x.pending_seen()) << label;
      EXPECT_EQ(rec[0].reason(), "bypass corpus") << label;
    } else {
      EXPECT_EQ(d, "DECISION_REFUSED") << label << " was neither pending nor refused";
      EXPECT_FALSE(approver->Saw(ids[i])) << label;
    }
    EXPECT_TRUE(rec[0].auto_approve_entry().empty()) << label;
  }
}

TEST_F(EscE2eTest, ListedOptionsAfterAPrefixEntryAreAutoApproved) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string argv_id = NewId("prefix-");
  const std::string cmd_id = NewId("prefix-");
  RawExchange x1 = ParseRawExchange(
      Raw(*a, {"send", "--payload-json", RequestJson(argv_id, kProfile, {"uname", "-s", "-n"})})
          .out);
  RawExchange x2 = ParseRawExchange(
      Raw(*a, {"send", "--payload-json", CommandRequestJson(cmd_id, kProfile, "uname -s -n")}).out);
  for (const RawExchange* x : {&x1, &x2}) {
    ASSERT_EQ(x->results(), 1) << x->end;
    EXPECT_FALSE(x->pending_seen());
    EXPECT_TRUE(x->result().approved()) << x->result().ShortDebugString();
    EXPECT_EQ(x->result().exit_code(), 0);
    EXPECT_EQ(x->result().stdout().rfind("Linux ", 0), 0u) << x->result().stdout();
  }
  ASSERT_AUDIT(records, a->id());
  for (const std::string& id : {argv_id, cmd_id}) {
    std::vector<AuditRecord> rec = ByRequestId(records, id);
    ASSERT_EQ(rec.size(), 1u);
    EXPECT_EQ(DecisionName(rec[0]), "DECISION_AUTO_APPROVED");
    EXPECT_EQ(rec[0].auto_approve_entry(), "uname");
  }
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
