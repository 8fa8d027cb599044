// The reaping thread against a stand-in for lazaret-sessiond's Reap: what
// is retried, for how long, and that a shutdown never waits on a reap
// beyond its bound.
#include "services/supervisor/session_reaping.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lazaret::supervisor {
namespace {

using std::chrono::milliseconds;

// Answers each Reap with the next scripted status (the last one forever);
// records the ids it was asked for. With `block`, a call waits for Cancel.
class ScriptedReaper final : public SessionReaper {
 public:
  struct Shared {
    std::mutex mu;
    std::vector<std::string> calls;
    std::deque<absl::StatusCode> script;
    bool block = false;
    bool cancelled = false;
  };

  explicit ScriptedReaper(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  absl::StatusOr<std::vector<std::string>> Reap(const std::string& id) override {
    std::unique_lock<std::mutex> lock(shared_->mu);
    shared_->calls.push_back(id);
    if (shared_->block) {
      while (!shared_->cancelled) {
        lock.unlock();
        usleep(5000);
        lock.lock();
      }
    }
    if (shared_->cancelled) return absl::CancelledError("cancelled");
    absl::StatusCode code = shared_->script.front();
    if (shared_->script.size() > 1) shared_->script.pop_front();
    if (code == absl::StatusCode::kOk) return std::vector<std::string>{"containers removed"};
    return absl::Status(code, "scripted");
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->cancelled = true;
  }

 private:
  std::shared_ptr<Shared> shared_;
};

class SessionReapingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-reaping-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    rt_ = tmpl;
    ASSERT_EQ(mkdir((rt_ + "/sessions").c_str(), 0700), 0);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    registry_ = std::make_unique<SessionRegistry>(rt_, wake_);
    shared_ = std::make_shared<ScriptedReaper::Shared>();
  }

  void TearDown() override {
    reaping_.reset();
    registry_.reset();
    close(wake_);
    rmdir((rt_ + "/sessions/" + kId).c_str());
    rmdir((rt_ + "/sessions").c_str());
    rmdir(rt_.c_str());
  }

  // A session directory left behind, and the reaping thread over it.
  void StartWithLeftover(ReapPolicy policy) {
    ASSERT_EQ(mkdir((rt_ + "/sessions/" + kId).c_str(), 0700), 0);
    reaping_ = std::make_unique<SessionReaping>(
        rt_, registry_.get(), std::make_unique<ScriptedReaper>(shared_), policy);
    reaping_->ReapLeftoverSessions();
  }

  size_t Calls() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->calls.size();
  }

  static ReapPolicy Fast() {
    ReapPolicy p;
    p.first_retry = milliseconds(10);
    p.max_retry = milliseconds(20);
    p.give_up_after = milliseconds(5000);
    p.drain_timeout = milliseconds(5000);
    return p;
  }

  static constexpr char kId[] = "0123456789ab";
  std::string rt_;
  int wake_ = -1;
  std::unique_ptr<SessionRegistry> registry_;
  std::shared_ptr<ScriptedReaper::Shared> shared_;
  std::unique_ptr<SessionReaping> reaping_;
};

TEST_F(SessionReapingTest, AnUnavailableSessiondIsAskedAgainUntilItAnswers) {
  shared_->script = {absl::StatusCode::kUnavailable, absl::StatusCode::kUnavailable,
                     absl::StatusCode::kOk};
  StartWithLeftover(Fast());
  reaping_->Drain(milliseconds(5000));
  EXPECT_EQ(Calls(), 3u);
  EXPECT_EQ(shared_->calls.front(), kId);
}

TEST_F(SessionReapingTest, ALiveOwnerOfALeftoverSessionIsLeftAloneAtOnce) {
  shared_->script = {absl::StatusCode::kFailedPrecondition};
  StartWithLeftover(Fast());
  reaping_->Drain(milliseconds(5000));
  EXPECT_EQ(Calls(), 1u);
}

TEST_F(SessionReapingTest, AFailedReapIsNotRepeated) {
  shared_->script = {absl::StatusCode::kInternal};
  StartWithLeftover(Fast());
  reaping_->Drain(milliseconds(5000));
  EXPECT_EQ(Calls(), 1u);
}

TEST_F(SessionReapingTest, AskingAnUnavailableSessiondEndsAfterTheBound) {
  shared_->script = {absl::StatusCode::kUnavailable};
  ReapPolicy p = Fast();
  p.give_up_after = milliseconds(200);
  StartWithLeftover(p);
  const auto t0 = std::chrono::steady_clock::now();
  reaping_->Drain(milliseconds(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2000));
  EXPECT_GT(Calls(), 2u);
  EXPECT_LT(Calls(), 40u);
}

TEST_F(SessionReapingTest, AShutdownCancelsAReapThatOutlivesTheDrain) {
  shared_->block = true;
  StartWithLeftover(Fast());
  while (Calls() == 0) usleep(1000);
  const auto t0 = std::chrono::steady_clock::now();
  reaping_->Drain(milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2000));
  std::lock_guard<std::mutex> lock(shared_->mu);
  EXPECT_TRUE(shared_->cancelled);
}

}  // namespace
}  // namespace lazaret::supervisor
