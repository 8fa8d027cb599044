// HostMonitor against a real kernel. main() moves the whole process into a
// network namespace of its own before any test runs (a user namespace
// too when that works; as root a plain network namespace otherwise), so
// the tests add and remove links, addresses and routes freely and the
// host's own are never touched.
#include "services/netpolicyd/host_monitor.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string* namespace_error = nullptr;  // set by main: why there is no private namespace

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f.flush());
}

// Runs before any thread exists (unshare(CLONE_NEWUSER) requires it).
std::string EnterPrivateNetwork() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    // Root inside, so that `ip` keeps its capabilities across execve.
    if (WriteFile("/proc/self/setgroups", "deny") &&
        WriteFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1")) &&
        WriteFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1"))) {
      return "";
    }
    return "cannot map the user into the new user namespace";
  }
  const int user_errno = errno;
  if (uid == 0 && unshare(CLONE_NEWNET) == 0) return "";
  return absl::StrCat(
      "no private network namespace: unshare(CLONE_NEWUSER|CLONE_NEWNET): ", strerror(user_errno),
      " (run as root, or enable unprivileged user namespaces)");
}

void Ip(const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  test::CommandResult r = test::Run(argv, {}, input);
  ASSERT_EQ(r.exit_code, 0) << "ip " << absl::StrJoin(args, " ") << ": " << r.err;
}

bool HasAddress(const HostNetworks& h, const std::string& address) {
  return std::any_of(h.addresses.begin(), h.addresses.end(),
                     [&](const HostAddress& a) { return a.address.Address() == address; });
}

bool HasNetwork(const HostNetworks& h, const std::string& cidr, const std::string& interface) {
  return std::any_of(h.on_link.begin(), h.on_link.end(), [&](const HostNetwork& n) {
    return n.prefix.ToString() == cidr && n.interface == interface;
  });
}

// Records what the monitor publishes and wakes waiters at once.
class Recorder {
 public:
  HostMonitor::Publish Callback() {
    return [this](uint64_t, std::shared_ptr<const HostNetworks> host) {
      std::lock_guard<std::mutex> lock(mu_);
      latest_ = std::move(host);
      ++published_;
      cv_.notify_all();
    };
  }
  // Waits until a published snapshot satisfies pred; the time it took, or
  // -1 ms on timeout.
  milliseconds WaitFor(const std::function<bool(const HostNetworks&)>& pred,
                       milliseconds timeout = milliseconds(3000)) {
    const Clock::time_point start = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    const bool ok = cv_.wait_for(lock, timeout, [&] { return latest_ && pred(*latest_); });
    if (!ok) return milliseconds(-1);
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  }
  int published() {
    std::lock_guard<std::mutex> lock(mu_);
    return published_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const HostNetworks> latest_;
  int published_ = 0;
};

class HostMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!namespace_error->empty()) GTEST_SKIP() << *namespace_error;
    test::Run({"ip", "link", "del", "lzm0"});
    Ip({"link", "add", "lzm0", "type", "veth", "peer", "name", "lzm1"});
    Ip({"link", "set", "lzm0", "up"});
    Ip({"link", "set", "lzm1", "up"});
  }
  void TearDown() override {
    monitor_.reset();
    if (namespace_error->empty()) test::Run({"ip", "link", "del", "lzm0"});
  }
  void StartMonitor(HostMonitor::Options options = {}) {
    absl::StatusOr<std::unique_ptr<HostMonitor>> m =
        HostMonitor::Create(options, recorder_.Callback());
    ASSERT_TRUE(m.ok()) << m.status();
    monitor_ = *std::move(m);
  }

  Recorder recorder_;
  std::unique_ptr<HostMonitor> monitor_;
};

TEST_F(HostMonitorTest, FirstSnapshotIsTakenAtCreate) {
  Ip({"addr", "add", "192.0.2.7/24", "dev", "lzm0"});
  StartMonitor();
  std::shared_ptr<const HostNetworks> h = monitor_->Current();
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(HasAddress(*h, "192.0.2.7"));
  EXPECT_TRUE(HasNetwork(*h, "192.0.2.0/24", "lzm0"));
  EXPECT_EQ(monitor_->version(), 1u);
}

TEST_F(HostMonitorTest, AddedAddressIsPublishedWithin200ms) {
  StartMonitor();
  ASSERT_FALSE(HasAddress(*monitor_->Current(), "198.51.100.9"));
  const Clock::time_point start = Clock::now();
  Ip({"addr", "add", "198.51.100.9/24", "dev", "lzm0"});
  ASSERT_GE(recorder_
                .WaitFor([](const HostNetworks& h) {
                  return HasAddress(h, "198.51.100.9") && HasNetwork(h, "198.51.100.0/24", "lzm0");
                })
                .count(),
            0);
  EXPECT_LT(Clock::now() - start, milliseconds(200));
  // An IPv6 address is published while still tentative.
  Ip({"addr", "add", "2001:db8:23::9/64", "dev", "lzm0"});
  EXPECT_GE(recorder_
                .WaitFor([](const HostNetworks& h) {
                  return HasAddress(h, "2001:db8:23::9") &&
                         HasNetwork(h, "2001:db8:23::/64", "lzm0");
                })
                .count(),
            0);
}

TEST_F(HostMonitorTest, RemovedPrefixIsPublished) {
  StartMonitor();
  Ip({"route", "add", "203.0.113.0/24", "dev", "lzm0", "table", "51820"});
  ASSERT_GE(
      recorder_
          .WaitFor([](const HostNetworks& h) { return HasNetwork(h, "203.0.113.0/24", "lzm0"); })
          .count(),
      0);
  Ip({"route", "del", "203.0.113.0/24", "dev", "lzm0", "table", "51820"});
  EXPECT_GE(
      recorder_
          .WaitFor([](const HostNetworks& h) { return !HasNetwork(h, "203.0.113.0/24", "lzm0"); })
          .count(),
      0);
  // A route through a gateway is no host network.
  Ip({"addr", "add", "192.0.2.1/24", "dev", "lzm0"});
  Ip({"route", "add", "198.18.0.0/24", "via", "192.0.2.2"});
  ASSERT_GE(
      recorder_.WaitFor([](const HostNetworks& h) { return HasNetwork(h, "192.0.2.0/24", "lzm0"); })
          .count(),
      0);
  EXPECT_FALSE(HasNetwork(*monitor_->Current(), "198.18.0.0/24", "lzm0"));
}

std::string Batch(int n, const char* verb) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&out, "addr ", verb, " 10.77.", i / 250, ".", i % 250 + 1, "/32 dev lzm0\n");
  }
  return out;
}

TEST_F(HostMonitorTest, BurstOf1000EventsCoalesces) {
  StartMonitor();
  const uint64_t dumps = monitor_->dumps();
  Ip({"-batch", "-"}, Batch(1000, "add"));
  ASSERT_GE(recorder_
                .WaitFor([](const HostNetworks& h) {
                  return HasAddress(h, "10.77.3.250") && HasAddress(h, "10.77.0.1");
                })
                .count(),
            0);
  // Every address made it, in far fewer dumps than events.
  EXPECT_EQ(std::count_if(
                monitor_->Current()->addresses.begin(), monitor_->Current()->addresses.end(),
                [](const HostAddress& a) { return a.address.Address().rfind("10.77.", 0) == 0; }),
            1000);
  EXPECT_LT(monitor_->dumps() - dumps, 100u);
}

TEST_F(HostMonitorTest, OverrunTriggersResync) {
  HostMonitor::Options options;
  options.receive_buffer = 1;  // the kernel's minimum: a burst overruns it
  StartMonitor(options);
  for (int round = 0; round < 5 && monitor_->overruns() == 0; ++round) {
    Ip({"-batch", "-"}, Batch(1000, "add"));
    Ip({"-batch", "-"}, Batch(1000, "del"));
  }
  EXPECT_GT(monitor_->overruns(), 0u);
  Ip({"-batch", "-"}, Batch(300, "add"));
  // Whatever was lost, the published state ends equal to the kernel's.
  EXPECT_GE(recorder_
                .WaitFor([](const HostNetworks& h) {
                  return std::count_if(h.addresses.begin(), h.addresses.end(),
                                       [](const HostAddress& a) {
                                         return a.address.Address().rfind("10.77.", 0) == 0;
                                       }) == 300;
                })
                .count(),
            0);
  absl::StatusOr<HostNetworks> now = ReadHostNetworks();
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(*now, *monitor_->Current());
}

}  // namespace
}  // namespace lazaret::netpolicyd

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  static std::string error;
  // Listing the tests (gtest_discover_tests at build time) needs no
  // namespace.
  if (!::testing::GTEST_FLAG(list_tests)) error = lazaret::netpolicyd::EnterPrivateNetwork();
  lazaret::netpolicyd::namespace_error = &error;
  return RUN_ALL_TESTS();
}
