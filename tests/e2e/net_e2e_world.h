// What the network end-to-end tests share, built once per test process (a
// gtest environment) and torn down at its end: the test hosts, a listener
// on every host address (bound to 0.0.0.0 and [::]), the test DNS server
// (the upstream netpolicyd asks, network.dns_upstream in the mode user's
// configuration), the --config file with the test profiles, and one
// long-lived session per profile shape, started on first use. Runs in the
// test process as root.
#ifndef LAZARET_TESTS_E2E_NET_E2E_WORLD_H_
#define LAZARET_TESTS_E2E_NET_E2E_WORLD_H_

#include <map>
#include <memory>
#include <string>

#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/net_test_hosts.h"
#include "tests/e2e/run_e2e_support.h"
#include "tests/support/test_dns_server.h"

namespace lazaret::test::e2e::net {

// Profiles of the --config file:
//  netpub   egress "open": every name, every public address (the built-in
//           default_allow) but the host's own networks, the default
//           deny list plus "172.20.99.0/24", allow_egress
//           ["10.204.0.0/24", "10.203.0.3/32", "172.20.99.0/24"];
//  netkill  the same, for the session whose sidecar is killed;
//  netnames egress "names": nothing by address (default_allow = []),
//           listed names only.
inline constexpr char kPubProfile[] = "netpub";
inline constexpr char kKillProfile[] = "netkill";
inline constexpr char kNamesProfile[] = "netnames";

// Names the test DNS server knows (it answers each; which ones the
// sandbox may have answered is the profile's business).
inline constexpr char kNameOk[] = "ok.lzt.test";              // A kPublicV4, AAAA kPublicV6
inline constexpr char kNameWild[] = "x.wild.lzt.test";        // A 198.51.100.4, listed by *.wild
inline constexpr char kNameWildApex[] = "wild.lzt.test";      // not covered by *.wild.lzt.test
inline constexpr char kNameChain[] = "chain.lzt.test";        // CNAME hop -> CNAME end -> A .3
inline constexpr char kNamePrivate[] = "private.lzt.test";    // listed, answers 10.203.0.2
inline constexpr char kNameHostAddr[] = "hostaddr.lzt.test";  // listed, answers 198.51.100.1
inline constexpr char kNameSecret[] = "secret.lzt.test";      // unlisted
inline constexpr char kNameLate[] = "late.lzt.test";          // unlisted; allowed live
inline constexpr char kNameFree[] = "free.lzt.test";          // netpub: every name resolves
inline constexpr char kNameBypass[] = "bypass.lzt.test";      // sent around the router
// The egress proxy's names (net_e2e_egress_test.cc), each A kPublicV4 (the
// fake vendor API's TLS server): a secret's host, a host with an HTTP rule
// and no secret, and a name neither names (never intercepted).
inline constexpr char kNameEgressApi[] = "api.egress.lzt.test";
inline constexpr char kNameEgressOther[] = "other.egress.lzt.test";
inline constexpr char kNameEgressPlain[] = "plain.egress.lzt.test";

class NetWorld {
 public:
  // The one world of this process; error() says why it could not be built.
  static NetWorld& Get();
  static void Destroy();

  const std::string& error() const { return error_; }
  const TestHosts& hosts() const { return *hosts_; }
  const TestHost& host(const std::string& name) const { return *hosts_->Find(name); }
  const Listeners& host_listener() const { return *host_listener_; }
  const TestDnsServer& dns() const { return *dns_; }
  const std::string& config() const { return config_; }

  // The shared sessions, started on first use; nullptr (and a test
  // failure) when they cannot start.
  NetSession* Pub();
  NetSession* Names();
  // Why a shared session did not start ("" when it did or was not tried).
  std::string SessionError(const std::string& profile) const {
    if (auto it = extra_errors_.find(profile); it != extra_errors_.end()) return it->second;
    return profile == kPubProfile ? pub_error_ : names_error_;
  }
  // A session of its own (in a workspace of its own).
  absl::StatusOr<std::unique_ptr<NetSession>> StartSession(const std::string& profile);
  // Adds profile `name` to the --config file, for sessions started after
  // it: `body` is the profile table's keys ("egress = \"open\"\n"); the
  // image and the probe's volume are added. The profile gets a workspace of
  // its own. A name already there is an error.
  absl::Status AddProfile(const std::string& name, const std::string& body);
  // The shared session of a profile AddProfile added, started on first use
  // and ended with the world; nullptr (and why in SessionError) when it
  // cannot start.
  NetSession* SharedSession(const std::string& profile);
  // The host directory a session's /workspace is.
  std::string Workspace(const std::string& profile) const;

 private:
  NetWorld() = default;
  ~NetWorld();
  void Build();
  NetSession* Shared(const std::string& profile, std::unique_ptr<NetSession>* slot);

  std::string error_;
  std::unique_ptr<TestHosts> hosts_;
  std::unique_ptr<Listeners> host_listener_;
  std::unique_ptr<TestDnsServer> dns_;
  std::unique_ptr<UserDir> probe_dir_;
  std::unique_ptr<UserDir> config_dir_;
  std::unique_ptr<UserDir> ws_pub_, ws_names_, ws_kill_;
  std::string config_;
  std::string config_text_;
  std::map<std::string, std::unique_ptr<UserDir>> extra_workspaces_;
  std::map<std::string, std::unique_ptr<NetSession>> extra_sessions_;
  std::map<std::string, std::string> extra_errors_;
  std::unique_ptr<UserConfig> user_config_;
  std::unique_ptr<NetSession> pub_, names_;
  std::string pub_error_, names_error_;
};

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_WORLD_H_
