#include "clients/lazaret/approve/model.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1'800'000'000;

pb::PendingRequest Request(const std::string& id, const std::string& command) {
  pb::PendingRequest r;
  r.set_request_id(id);
  r.set_profile("dev");
  r.set_session_id("s-1");
  r.set_workspace("/home/u/proj");
  r.set_command(command);
  r.set_justification("need to push");
  for (absl::string_view a : absl::StrSplit(command, ' ')) r.add_argv(std::string(a));
  r.set_binary("/usr/bin/" + r.argv(0));
  r.set_cwd("/home/u/proj");
  r.set_reason_not_auto("no auto_approve entry matches");
  r.set_deadline_unix(kNow + 252);
  return r;
}

pb::PendingEvent Added(const pb::PendingRequest& r) {
  pb::PendingEvent e;
  e.set_kind(pb::PendingEvent::KIND_ADDED);
  *e.mutable_request() = r;
  return e;
}

pb::PendingEvent Resolved(const std::string& id, const std::string& how) {
  pb::PendingEvent e;
  e.set_kind(pb::PendingEvent::KIND_RESOLVED);
  e.mutable_request()->set_request_id(id);
  e.set_resolution(how);
  return e;
}

std::vector<std::string> Screen(const Model& m, size_t w = 80, size_t h = 24) {
  std::vector<std::string> out;
  for (const Line& l : m.Render(w, h)) out.push_back(PlainText(l));
  return out;
}

std::string ScreenText(const Model& m, size_t w = 80, size_t h = 24) {
  return absl::StrJoin(Screen(m, w, h), "\n");
}

void Type(Model& m, const std::u32string& s) {
  for (char32_t c : s) EXPECT_TRUE(m.OnKey(Key::Char(c)).empty());
}

class ModelTest : public ::testing::Test {
 protected:
  ModelTest() {
    m_.SetNow(kNow);
    m_.OnEvent(Added(Request("r-1", "git push origin main")));
    m_.OnEvent(Added(Request("r-2", "make install")));
  }
  Model m_;
};

TEST(ModelEmptyTest, WaitsAndQuitsOnQ) {
  Model m;
  EXPECT_THAT(ScreenText(m), HasSubstr("No pending requests"));
  const std::vector<Action> a = m.OnKey(Key::Char('q'));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kQuit);
  EXPECT_EQ(m.OnKey(Key::Ctrl('c'))[0].kind, Action::kQuit);
}

TEST_F(ModelTest, ListShowsEachRequestWithTimeLeftAndTheSelection) {
  const std::vector<std::string> s = Screen(m_);
  ASSERT_EQ(s.size(), 24u);
  EXPECT_EQ(s[0], "lazaret approve  2 pending");
  EXPECT_TRUE(absl::StartsWith(s[1], "> r-1  dev  git push origin main")) << s[1];
  EXPECT_TRUE(absl::EndsWith(s[1], "4m 12s")) << s[1];
  EXPECT_EQ(s[1].size(), 80u);
  EXPECT_TRUE(absl::StartsWith(s[2], "  r-2  dev  make install"));
  EXPECT_THAT(s[23], HasSubstr("a approve"));
  m_.OnKey(Key::Char('j'));
  EXPECT_TRUE(absl::StartsWith(Screen(m_)[2], "> r-2"));
  m_.OnKey(Key::Of(Key::kDown));  // stays on the last
  EXPECT_TRUE(absl::StartsWith(Screen(m_)[2], "> r-2"));
  m_.OnKey(Key::Of(Key::kUp));
  EXPECT_TRUE(absl::StartsWith(Screen(m_)[1], "> r-1"));
}

TEST_F(ModelTest, DetailShowsEveryField) {
  m_.OnKey(Key::Of(Key::kEnter));
  EXPECT_EQ(m_.mode(), Mode::kDetail);
  const std::string s = ScreenText(m_);
  EXPECT_THAT(s, HasSubstr("request    r-1  (1 of 2)"));
  EXPECT_THAT(s, HasSubstr("profile    dev"));
  EXPECT_THAT(s, HasSubstr("session    s-1"));
  EXPECT_THAT(s, HasSubstr("workspace  /home/u/proj"));
  EXPECT_THAT(s, HasSubstr("why        need to push"));
  EXPECT_THAT(s, HasSubstr("command    git push origin main"));
  EXPECT_THAT(s, HasSubstr("argv       [0] git\n           [1] push\n           [2] origin\n"
                           "           [3] main"));
  EXPECT_THAT(s, HasSubstr("binary     /usr/bin/git"));
  EXPECT_THAT(s, HasSubstr("cwd        /home/u/proj"));
  EXPECT_THAT(s, HasSubstr("not auto   no auto_approve entry matches"));
  EXPECT_THAT(s, HasSubstr("time left  4m 12s"));
  m_.OnKey(Key::Of(Key::kEscape));
  EXPECT_EQ(m_.mode(), Mode::kList);
}

TEST_F(ModelTest, ApproveDecidesTheSelectedRequest) {
  m_.OnKey(Key::Char('j'));
  const std::vector<Action> a = m_.OnKey(Key::Char('a'));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kDecide);
  EXPECT_EQ(a[0].decide.request_id(), "r-2");
  EXPECT_TRUE(a[0].decide.has_approve());
  pb::DecideResponse resp;
  resp.set_binary("/usr/bin/make");
  m_.OnDecided(a[0].decide, resp);
  EXPECT_EQ(m_.pending(), 1u);
  EXPECT_THAT(m_.notice(), HasSubstr("approved r-2"));
  // Its RESOLVED event is no news.
  m_.OnEvent(Resolved("r-2", "approved by lazaret approve"));
  EXPECT_THAT(m_.notice(), Not(HasSubstr("elsewhere")));
}

TEST_F(ModelTest, DenySendsTheTypedReason) {
  EXPECT_TRUE(m_.OnKey(Key::Char('d')).empty());
  EXPECT_EQ(m_.mode(), Mode::kDenyReason);
  Type(m_, U"not now");
  EXPECT_THAT(ScreenText(m_), HasSubstr("> not now"));
  const std::optional<CursorPos> c = m_.Cursor(80, 24);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->col, 9u);
  EXPECT_EQ(Screen(m_)[c->row], "> not now");
  const std::vector<Action> a = m_.OnKey(Key::Of(Key::kEnter));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].decide.request_id(), "r-1");
  EXPECT_EQ(a[0].decide.deny().reason(), "not now");
  EXPECT_EQ(m_.mode(), Mode::kList);
}

TEST_F(ModelTest, DenyWithoutReasonAndEscapeCancels) {
  m_.OnKey(Key::Char('d'));
  EXPECT_TRUE(m_.OnKey(Key::Of(Key::kEscape)).empty());
  EXPECT_EQ(m_.mode(), Mode::kList);
  m_.OnKey(Key::Char('d'));
  const std::vector<Action> a = m_.OnKey(Key::Of(Key::kEnter));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].decide.deny().reason().empty());
}

TEST_F(ModelTest, EditParsesThenConfirmsTheNewArgv) {
  m_.OnKey(Key::Char('e'));
  EXPECT_EQ(m_.mode(), Mode::kEdit);
  EXPECT_THAT(ScreenText(m_), HasSubstr("> git push origin main"));
  m_.OnKey(Key::Ctrl('w'));
  Type(m_, U"dev");
  std::vector<Action> a = m_.OnKey(Key::Of(Key::kEnter));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kParseCommand);
  EXPECT_EQ(a[0].parse.command(), "git push origin dev");
  EXPECT_EQ(a[0].parse.session_id(), "s-1");
  EXPECT_TRUE(m_.OnKey(Key::Of(Key::kEnter)).empty());  // one check at a time
  pb::ParseCommandResponse parsed;
  parsed.set_ok(true);
  for (const char* s : {"git", "push", "origin", "dev"}) parsed.add_argv(s);
  parsed.set_binary("/usr/bin/git");
  m_.OnParsed(parsed);
  EXPECT_EQ(m_.mode(), Mode::kEditConfirm);
  const std::string s = ScreenText(m_);
  EXPECT_THAT(s, HasSubstr("new argv   [0] git"));
  EXPECT_THAT(s, HasSubstr("           [3] dev"));
  EXPECT_THAT(s, HasSubstr("Run the edited command? (y/n)"));
  a = m_.OnKey(Key::Char('y'));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kDecide);
  EXPECT_EQ(a[0].decide.request_id(), "r-1");
  EXPECT_EQ(a[0].decide.edit().command(), "git push origin dev");
}

TEST_F(ModelTest, EditShowsTheBrokersRefusalAndStaysInTheEditor) {
  m_.OnKey(Key::Char('e'));
  m_.OnKey(Key::Of(Key::kEnter));
  pb::ParseCommandResponse parsed;
  parsed.set_ok(false);
  parsed.set_error("argv[0] not on PATH");
  m_.OnParsed(parsed);
  EXPECT_EQ(m_.mode(), Mode::kEdit);
  EXPECT_THAT(m_.notice(), HasSubstr("argv[0] not on PATH"));
  // n at the confirmation goes back to editing.
  m_.OnKey(Key::Of(Key::kEnter));
  parsed.set_ok(true);
  m_.OnParsed(parsed);
  m_.OnKey(Key::Char('n'));
  EXPECT_EQ(m_.mode(), Mode::kEdit);
}

TEST_F(ModelTest, AbortAsksFirst) {
  EXPECT_TRUE(m_.OnKey(Key::Char('Q')).empty());
  EXPECT_EQ(m_.mode(), Mode::kConfirmAbort);
  EXPECT_THAT(ScreenText(m_), HasSubstr("stop its sandbox? (y/n)"));
  EXPECT_TRUE(m_.OnKey(Key::Char('n')).empty());
  EXPECT_EQ(m_.mode(), Mode::kList);
  m_.OnKey(Key::Char('Q'));
  const std::vector<Action> a = m_.OnKey(Key::Char('y'));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].decide.has_abort());
  EXPECT_EQ(a[0].decide.request_id(), "r-1");
}

TEST_F(ModelTest, ResolvedElsewhereLeavesWithANotice) {
  m_.OnKey(Key::Char('d'));  // deny open on r-1
  m_.OnEvent(Resolved("r-1", "approved by ci-script"));
  EXPECT_EQ(m_.pending(), 1u);
  EXPECT_EQ(m_.mode(), Mode::kList);
  EXPECT_EQ(Screen(m_)[22], "r-1 decided elsewhere: approved by ci-script");
  EXPECT_TRUE(absl::StartsWith(Screen(m_)[1], "> r-2"));
}

TEST_F(ModelTest, LostRaceShowsWhoDecided) {
  const std::vector<Action> a = m_.OnKey(Key::Char('a'));
  m_.OnDecided(a[0].decide,
               absl::FailedPreconditionError("already decided: denied by lazaret run"));
  EXPECT_THAT(m_.notice(), HasSubstr("already decided: denied by lazaret run"));
  EXPECT_EQ(m_.pending(), 2u);
  m_.OnEvent(Resolved("r-1", "denied by lazaret run"));
  EXPECT_THAT(m_.notice(), HasSubstr("decided elsewhere"));
}

TEST_F(ModelTest, OutputOfTheLastApproved) {
  EXPECT_TRUE(m_.OnKey(Key::Char('o')).empty());
  EXPECT_THAT(m_.notice(), HasSubstr("no approved request"));
  std::vector<Action> a = m_.OnKey(Key::Char('a'));
  m_.OnDecided(a[0].decide, pb::DecideResponse());
  a = m_.OnKey(Key::Char('o'));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kGetRequest);
  EXPECT_EQ(a[0].request_id, "r-1");
  pb::RequestState st;
  st.set_phase(pb::RequestState::PHASE_DONE);
  st.mutable_request()->set_request_id("r-1");
  st.mutable_record()->set_ran(true);
  st.mutable_record()->set_exit_code(0);
  st.set_stdout("Everything up-to-date\n\x1b[31mred\n");
  st.set_stderr("warn\n");
  m_.OnRequestState(st);
  EXPECT_EQ(m_.mode(), Mode::kOutput);
  const std::string s = ScreenText(m_);
  EXPECT_THAT(s, HasSubstr("phase      done, exit 0"));
  EXPECT_THAT(s, HasSubstr("-- stdout\nEverything up-to-date\n\\x1b[31mred\n-- stderr\nwarn"));
  m_.OnKey(Key::Of(Key::kEscape));
  EXPECT_EQ(m_.mode(), Mode::kList);
}

TEST_F(ModelTest, HiddenCharactersAreShownEscapedAndMarked) {
  pb::PendingRequest r = Request("r-3", "echo x");
  r.set_command("echo \x1b[2J\xE2\x80\xAEtxt\xE2\x80\x8B");
  r.set_justification("\x1b]0;pwned\x07");
  r.set_had_invisible(true);
  m_.OnEvent(Added(r));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Of(Key::kEnter));
  const std::vector<Line> screen = m_.Render(80, 24);
  bool found = false;
  for (const Line& l : screen) {
    for (const approve::Run& run : l) {
      for (unsigned char c : run.text) ASSERT_GE(c, 0x20);
      if (run.text == "\\u{202E}") {
        EXPECT_TRUE(run.marked);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
  const std::string s = ScreenText(m_);
  EXPECT_THAT(s, HasSubstr("command    echo \\x1b[2J\\u{202E}txt\\u{200B}"));
  EXPECT_THAT(s, HasSubstr("why        \\x1b]0;pwned\\x07"));
  EXPECT_THAT(s, HasSubstr("! hidden or control characters"));
}

TEST_F(ModelTest, RendersWithinAnySize) {
  pb::PendingRequest r = Request("r-3", "echo");
  r.set_command(std::string(10000, 'x'));
  m_.OnEvent(Added(r));
  for (Mode want : {Mode::kList, Mode::kDetail}) {
    if (want == Mode::kDetail) m_.OnKey(Key::Of(Key::kEnter));
    for (size_t w : {1u, 10u, 40u, 80u, 100u, 200u}) {
      for (size_t h : {1u, 3u, 5u, 24u, 30u}) {
        const std::vector<Line> s = m_.Render(w, h);
        EXPECT_LE(s.size(), h);
        for (const Line& l : s) EXPECT_LE(LineWidth(l), w) << w << "x" << h;
      }
    }
  }
  const std::vector<std::string> s = Screen(m_, 100, 30);
  EXPECT_EQ(s.size(), 30u);
}

TEST_F(ModelTest, LongDetailIsCutWithARowCount) {
  pb::PendingRequest r = Request("r-3", "echo");
  for (int i = 0; i < 40; ++i) r.add_argv("arg");
  m_.OnEvent(Added(r));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Of(Key::kEnter));
  const std::vector<std::string> s = Screen(m_);
  EXPECT_THAT(s[21], HasSubstr("more rows"));
  for (int i = 0; i < 10; ++i) {
    m_.OnKey(Key::Of(Key::kPageDown));
    Screen(m_);
  }
  const std::string scrolled = ScreenText(m_);
  EXPECT_THAT(scrolled, Not(HasSubstr("request    r-3")));
  EXPECT_THAT(scrolled, HasSubstr("[40] arg"));
  EXPECT_THAT(scrolled, HasSubstr("time left"));
  EXPECT_THAT(scrolled, Not(HasSubstr("more rows")));
  for (int i = 0; i < 3; ++i) m_.OnKey(Key::Of(Key::kPageUp));  // scrolling stopped at the end
  EXPECT_THAT(ScreenText(m_), HasSubstr("request    r-3"));
}

TEST_F(ModelTest, EscapeThenAKeyTypedFastIsBothKeys) {
  m_.OnKey(Key::Of(Key::kEnter));
  const std::vector<Action> a = m_.OnKey(Key::Alt('q'));  // Esc q
  EXPECT_EQ(m_.mode(), Mode::kList);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kQuit);
}

TEST_F(ModelTest, HelpAndBack) {
  m_.OnKey(Key::Char('?'));
  EXPECT_EQ(m_.mode(), Mode::kHelp);
  EXPECT_THAT(ScreenText(m_), HasSubstr("undo Ctrl-_ or Ctrl-Z"));
  m_.OnKey(Key::Char('x'));
  EXPECT_EQ(m_.mode(), Mode::kList);
}

TEST_F(ModelTest, ArgvRequestIsEditedAsAQuotedLine) {
  pb::PendingRequest r = Request("r-3", "x");
  r.clear_command();
  r.clear_argv();
  r.add_argv("echo");
  r.add_argv("it's here");
  m_.OnEvent(Added(r));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Char('j'));
  m_.OnKey(Key::Char('e'));
  const std::vector<Action> a = m_.OnKey(Key::Of(Key::kEnter));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].parse.command(), "echo 'it'\\''s here'");
}

}  // namespace
}  // namespace lazaret::cli::approve
