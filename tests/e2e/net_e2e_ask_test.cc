// `egress = "ask"` end to end: a sandbox looks names up with glibc's getent
// through the router, netpolicyd holds the unlisted ones and asks brokerd,
// and a scripted remote approver (lazaret-test-approver, the approver API
// over brokerd.sock as the mode's user) decides. One session of profile
// `netask` (ask_timeout 5 s, one listed name) serves every case.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/e2e/net_e2e_fixture.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kAskProfile[] = "netask";
constexpr char kUserFileProfile[] = "netaskp";
constexpr char kImage[] = "localhost/lazaret-sandbox:trixie";

// The profile_diff of the first decided network request an approver
// printed ("" when none).
std::string ShownDiff(const std::string& output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StartsWith(line, "{\"pending\":")) continue;
    google::protobuf::Struct doc;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &doc).ok()) continue;
    const auto& pending = doc.fields().at("pending").struct_value().fields();
    auto network = pending.find("network");
    if (network == pending.end()) continue;
    const auto& fields = network->second.struct_value().fields();
    auto diff = fields.find("profile_diff");
    if (diff != fields.end()) return diff->second.string_value();
  }
  return "";
}

// Lines of `a` that `b` lacks (as multisets), sorted.
std::vector<std::string> LinesNotIn(const std::string& a, const std::string& b) {
  std::vector<std::string> la = absl::StrSplit(a, '\n'), lb = absl::StrSplit(b, '\n');
  std::sort(la.begin(), la.end());
  std::sort(lb.begin(), lb.end());
  std::vector<std::string> out;
  std::set_difference(la.begin(), la.end(), lb.begin(), lb.end(), std::back_inserter(out));
  return out;
}

// The lines a unified diff adds ('+') or removes ('-'), sorted.
std::vector<std::string> DiffLines(const std::string& diff, char sign) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(diff, '\n')) {
    if (line.empty() || line[0] != sign) continue;
    if (absl::StartsWith(line, "+++") || absl::StartsWith(line, "---")) continue;
    out.emplace_back(line.substr(1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A remote approver as a person's script would run it, as the mode's user.
class Approver {
 public:
  // `args` after "decide"; waits until the broker counts the watcher.
  static std::unique_ptr<Approver> Start(const std::string& session,
                                         const std::vector<std::string>& args,
                                         const std::string& log) {
    auto a = std::unique_ptr<Approver>(new Approver());
    a->log_ = log;
    std::vector<std::string> argv = {test::Binary("lazaret-test-approver"),
                                     "--socket=" + Env().runtime_dir + "/brokerd.sock", "decide",
                                     "--session=" + session, "--timeout=60"};
    argv.insert(argv.end(), args.begin(), args.end());
    a->pid_ = SpawnAs("/", argv, {}, log);
    a->watching_ = test::WaitFor([&] { return absl::StrContains(a->Output(), "watching"); },
                                 std::chrono::seconds(10));
    return a;
  }
  ~Approver() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGTERM);
      WaitChild(pid_, 10);
    }
  }
  bool watching() const { return watching_; }
  int Wait(int timeout_seconds) {
    done_ = true;
    return WaitChild(pid_, timeout_seconds);
  }
  std::string Output() const { return test::ReadFile(log_); }

 private:
  Approver() = default;
  std::string log_;
  pid_t pid_ = -1;
  bool watching_ = false;
  bool done_ = false;
};

class NetAskTest : public NetE2eTest {
 protected:
  static void SetUpTestSuite() {
    NetWorld& w = NetWorld::Get();
    if (!w.error().empty()) return;
    absl::Status added = w.AddProfile(
        kAskProfile, absl::StrCat("egress = \"ask\"\nask_timeout = 5\nask_unattended = \"deny\"\n"
                                  "default_allow = []\nallow_domains = [\"",
                                  kNameOk, "\"]\n"));
    if (!added.ok()) {
      error_ = new std::string(added.ToString());
      return;
    }
    absl::StatusOr<std::unique_ptr<NetSession>> s = w.StartSession(kAskProfile);
    if (!s.ok()) {
      error_ = new std::string(s.status().ToString());
      return;
    }
    session_ = s->release();
  }
  static void TearDownTestSuite() {
    delete session_;
    session_ = nullptr;
    delete error_;
    error_ = nullptr;
  }
  void SetUp() override {
    NetE2eTest::SetUp();
    ASSERT_NE(session_, nullptr) << (error_ != nullptr ? *error_ : "no session");
    ASSERT_TRUE(session_->resolv_conf_is_router()) << "resolv.conf inside is not the router's";
  }
  static NetSession& S() { return *session_; }
  static std::unique_ptr<Approver> StartApprover(const std::string& what,
                                                 const std::vector<std::string>& args) {
    return Approver::Start(S().id(), args, W().config() + "." + what + ".log");
  }
  // getent ahosts NAME inside, timed.
  static CommandResult Lookup(const std::string& name, double* seconds) {
    const auto start = Clock::now();
    CommandResult r = S().Getent({"ahosts", name});
    *seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  }

  static NetSession* session_;
  static std::string* error_;
};
NetSession* NetAskTest::session_ = nullptr;
std::string* NetAskTest::error_ = nullptr;

TEST_F(NetAskTest, ListedNameIsNotAsked) {
  std::unique_ptr<Approver> a =
      StartApprover("listed", {"--network-name=" + std::string(kNameOk), "--watch-only"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNameOk, &took);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, kPublicV4)) << r.out;
  EXPECT_LT(took, 2.0);
  EXPECT_FALSE(absl::StrContains(a->Output(), "\"pending\"")) << a->Output();
}

TEST_F(NetAskTest, UnattendedRefusesAtOnce) {
  // Nobody watches this session: ask_unattended = "deny" answers at once.
  double took = 0;
  CommandResult r = Lookup(kNameWildApex, &took);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_LT(took, 1.0) << "refused within a second when nobody is attached";
}

TEST_F(NetAskTest, OnceAnswersAfterTheDecisionAndTheNextLookupAsksAgain) {
  std::unique_ptr<Approver> a = StartApprover(
      "once", {"--network-name=" + std::string(kNameWild), "--allow-name=once", "--delay-ms=1500"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNameWild, &took);
  EXPECT_EQ(a->Wait(30), 0) << a->Output();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "198.51.100.4")) << r.out;
  EXPECT_GE(took, 1.4) << "the answer waited for the decision";
  const std::string seen = a->Output();
  EXPECT_TRUE(absl::StrContains(seen, absl::StrCat("\"name\":\"", kNameWild, "\""))) << seen;
  EXPECT_TRUE(absl::StrContains(seen, "\"address\":\"198.51.100.4\"")) << seen;
  // Once: not remembered. With nobody watching now, the next lookup is
  // refused.
  CommandResult again = Lookup(kNameWild, &took);
  EXPECT_EQ(again.exit_code, 2) << again.out;
}

TEST_F(NetAskTest, SessionScopeIsRememberedAndShownByNetShow) {
  std::unique_ptr<Approver> a = StartApprover(
      "session", {"--network-name=" + std::string(kNameLate), "--allow-name=session"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNameLate, &took);
  EXPECT_EQ(a->Wait(30), 0) << a->Output();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "198.51.100.5")) << r.out;
  // Remembered: answered with nobody watching.
  CommandResult again = Lookup(kNameLate, &took);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  CommandResult show = LazaretNet({"show", S().id()});
  EXPECT_TRUE(absl::StrContains(show.out, kNameLate)) << show.out << show.err;
  // The profile was never offered for a --config profile (only the user's
  // own file is ever written).
  EXPECT_FALSE(absl::StrContains(a->Output(), "\"profile_diff\"")) << a->Output();
}

TEST_F(NetAskTest, DenyRefusesAndIsRemembered) {
  std::unique_ptr<Approver> a =
      StartApprover("deny", {"--network-name=" + std::string(kNameFree), "--deny=no"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNameFree, &took);
  EXPECT_EQ(a->Wait(30), 0) << a->Output();
  EXPECT_EQ(r.exit_code, 2) << r.out;
  // Remembered as a live deny: refused without asking anyone.
  std::unique_ptr<Approver> watcher =
      StartApprover("deny-again", {"--network-name=" + std::string(kNameFree), "--watch-only"});
  ASSERT_TRUE(watcher->watching()) << watcher->Output();
  CommandResult again = Lookup(kNameFree, &took);
  EXPECT_EQ(again.exit_code, 2) << again.out;
  EXPECT_LT(took, 1.0);
  EXPECT_FALSE(absl::StrContains(watcher->Output(), "\"pending\"")) << watcher->Output();
}

TEST_F(NetAskTest, NobodyDecidingRefusesAtTheAskTimeout) {
  std::unique_ptr<Approver> a =
      StartApprover("timeout", {"--network-name=" + std::string(kNameSecret), "--watch-only"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNameSecret, &took);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_GE(took, 4.5) << "held until ask_timeout (5 s)";
  EXPECT_LT(took, 20.0);
  EXPECT_TRUE(absl::StrContains(a->Output(), "\"pending\"")) << a->Output();
}

TEST_F(NetAskTest, AnAnswerOfOnlyPrivateAddressesIsRefusedUnasked) {
  std::unique_ptr<Approver> a =
      StartApprover("private", {"--network-name=" + std::string(kNamePrivate), "--watch-only"});
  ASSERT_TRUE(a->watching()) << a->Output();
  double took = 0;
  CommandResult r = Lookup(kNamePrivate, &took);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_LT(took, 2.0);
  EXPECT_FALSE(absl::StrContains(a->Output(), "\"pending\"")) << a->Output();
}

TEST_F(NetAskTest, ProfileScopeChangesTheUsersFileByExactlyTheDiffShown) {
  // Only the user's own file is ever written, so this profile lives there.
  const std::string path = Env().home + "/.config/lazaret/config.toml";
  const std::string before = test::ReadFile(path);
  struct Restore {
    std::string path, text;
    ~Restore() { std::ofstream(path) << text; }
  } restore{path, before};
  std::ofstream(path, std::ios::app) << "\n[profiles." << kUserFileProfile << "]\nimage = \""
                                     << kImage << "\"\negress = \"ask\"\nask_timeout = 10\n";
  const std::string with_profile = test::ReadFile(path);
  UserDir workspace("netws-askp");
  absl::StatusOr<std::unique_ptr<NetSession>> s = NetSession::Start(
      workspace.path(), W().config(), kUserFileProfile, W().config() + ".netaskp.log");
  ASSERT_TRUE(s.ok()) << s.status();
  std::unique_ptr<Approver> a = Approver::Start(
      (*s)->id(), {"--network-name=" + std::string(kNameWild), "--allow-name=profile"},
      W().config() + ".profile.log");
  ASSERT_TRUE(a->watching()) << a->Output();
  CommandResult r = (*s)->Getent({"ahosts", kNameWild});
  EXPECT_EQ(a->Wait(30), 0) << a->Output();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string diff = ShownDiff(a->Output());
  ASSERT_FALSE(diff.empty()) << "no profile change was shown: " << a->Output();
  const std::string after = test::ReadFile(path);
  EXPECT_EQ(LinesNotIn(after, with_profile), DiffLines(diff, '+')) << diff << "\n---\n" << after;
  EXPECT_EQ(LinesNotIn(with_profile, after), DiffLines(diff, '-')) << diff;
  EXPECT_TRUE(absl::StrContains(after, kNameWild)) << after;
  // Allowed for the session too: answered with nobody watching.
  CommandResult again = (*s)->Getent({"ahosts", kNameWild});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
}

}  // namespace
}  // namespace lazaret::test::e2e::net
