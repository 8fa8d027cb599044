// The gtest fixture of the network end-to-end tests (net_e2e_*_test.cc):
// every test needs root and the shared world (net_e2e_world.h), and reads
// probe results with the helpers below. Runs in the test process as root.
#ifndef LAZARET_TESTS_E2E_NET_E2E_FIXTURE_H_
#define LAZARET_TESTS_E2E_NET_E2E_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/e2e/net_e2e_hosts.h"
#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/net_e2e_world.h"

namespace lazaret::test::e2e::net {

inline const std::string kPort = std::to_string(kTestPort);

class NetE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ASSERT_TRUE(W().error().empty()) << W().error();
  }
  static NetWorld& W() { return NetWorld::Get(); }
  // The shared sessions; a test ASSERTs they are not null.
  static NetSession* Pub() { return W().Pub(); }
  static NetSession* Names() { return W().Names(); }
  static std::string PubError() { return W().SessionError(kPubProfile); }
  static std::string NamesError() { return W().SessionError(kNamesProfile); }
};

// EACCES within a second: what a prohibit route answers.
#define EXPECT_REFUSED_FAST(result, what) \
  EXPECT_TRUE((result).refused_fast()) << (what) << ": " << (result).line
#define EXPECT_CONNECTS(result, what) EXPECT_TRUE((result).ok) << (what) << ": " << (result).line

// True when a dns line carries `answer` ("198.51.100.2", "cname:x.test").
inline bool HasAnswer(const ProbeResult& r, const std::string& answer) {
  for (const auto& a : r.answers) {
    if (a == answer) return true;
  }
  return false;
}

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_FIXTURE_H_
