// lazaret-configd through its real gRPC API, started as its own process with
// a private HOME, XDG directories and runtime directory; `lazaret trust` and
// `lazaret config` are the real CLI binary. The workspace clamp is checked
// end to end: a widening workspace file is refused, accepted once trusted,
// and refused again after one byte changes.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

extern char** environ;

namespace lazaret {
namespace {

namespace pb = ::lazaret::config::v1;
using test::Binary;
using test::CommandResult;
using test::TempDir;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

void MakeDirs(const std::string& path) {
  std::string p;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      p = path.substr(0, i);
      mkdir(p.c_str(), 0700);
    }
  }
}

constexpr char kUserConfig[] = R"(
[escalation]
auto_approve = ["aws sts get-caller-identity"]

[profiles.claude-code]
image = "docker.io/library/node:22.11.0-bookworm"
persistent_dirs = ["/root"]
allow_egress = ["160.79.104.0/23"]
env = { ANTHROPIC_API_KEY = "env:ANTHROPIC_API_KEY", SECRET_LITERAL = "hunter2-literal" }
)";

class ConfigApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = dir_.path() + "/home";
    ws_ = dir_.path() + "/ws";
    run_ = dir_.path() + "/run";
    MakeDirs(home_ + "/.config/lazaret");
    MakeDirs(home_ + "/.ssh");
    MakeDirs(ws_);
    env_ = {{"HOME", home_},
            {"XDG_CONFIG_HOME", home_ + "/.config"},
            {"XDG_STATE_HOME", home_ + "/.local/state"},
            {"XDG_RUNTIME_DIR", ""},
            {"LAZARET_RUNTIME_DIR", run_},
            {"ANTHROPIC_API_KEY", "sk-never-read-by-configd"}};
    WriteFile(home_ + "/.config/lazaret/config.toml", kUserConfig);
    StartConfigd();
    stub_ = pb::ConfigService::NewStub(DialUnix(run_ + "/configd.sock"));
  }

  void TearDown() override {
    stub_.reset();  // close the channel so shutdown does not wait for it
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "lazaret-configd did not stop cleanly";
    }
  }

  void StartConfigd() {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      if (env_.count(kv.substr(0, kv.find('='))) == 0) env_storage.push_back(kv);
    }
    for (const auto& [k, v] : env_) {
      if (!v.empty()) env_storage.push_back(k + "=" + v);
    }
    std::vector<char*> envp;
    for (auto& s : env_storage) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string bin = Binary("lazaret-configd");
    std::string flag = "--runtime-dir=" + run_;
    char* argv[] = {bin.data(), flag.data(), nullptr};
    ASSERT_EQ(posix_spawn(&pid_, bin.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    const bool up = test::WaitFor([&] { return CheckHealth(run_ + "/configd.sock", 200).ok(); },
                                  std::chrono::seconds(15));
    ASSERT_TRUE(up) << "lazaret-configd did not become healthy";
  }

  pb::ConfigSelector Selector(const std::string& explicit_config = "") const {
    pb::ConfigSelector s;
    s.set_workspace_dir(ws_);
    s.set_explicit_config(explicit_config);
    return s;
  }

  grpc::Status Resolve(const std::string& profile, pb::ResolveProfileResponse* resp,
                       const std::string& explicit_config = "") {
    pb::ResolveProfileRequest req;
    *req.mutable_selector() = Selector(explicit_config);
    req.set_profile(profile);
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->ResolveProfile(&cc, req, resp);
  }

  pb::ValidateResponse Validate(const std::string& explicit_config = "") {
    pb::ValidateRequest req;
    *req.mutable_selector() = Selector(explicit_config);
    pb::ValidateResponse resp;
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    EXPECT_TRUE(stub_->Validate(&cc, req, &resp).ok());
    return resp;
  }

  // The digest lazaret-configd computes of the workspace file as it is now.
  std::string WorkspaceSha256() {
    const pb::ValidateResponse v = Validate();
    for (const pb::LayerInfo& l : v.layers()) {
      if (l.layer() == common::v1::CONFIG_LAYER_WORKSPACE) return l.sha256();
    }
    ADD_FAILURE() << "no workspace layer";
    return "";
  }

  bool WorkspaceTrusted() {
    const pb::ValidateResponse v = Validate();
    for (const pb::LayerInfo& l : v.layers()) {
      if (l.layer() == common::v1::CONFIG_LAYER_WORKSPACE) return l.trusted();
    }
    return false;
  }

  // The environment of the CLI and of configd, as an envp.
  std::vector<std::string> EnvStrings() const {
    std::vector<std::string> out;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      if (env_.count(kv.substr(0, kv.find('='))) == 0) out.push_back(kv);
    }
    for (const auto& [k, v] : env_) {
      if (!v.empty()) out.push_back(k + "=" + v);
    }
    return out;
  }

  // The real CLI, run in the workspace with this test's environment.
  CommandResult Lazaret(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "-C", ws_, Binary("lazaret")};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::Run(argv, env_);
  }

  TempDir dir_{"lcfg"};
  std::string home_;
  std::string ws_;
  std::string run_;
  std::map<std::string, std::string> env_;
  pid_t pid_ = -1;
  std::unique_ptr<pb::ConfigService::Stub> stub_;
};

TEST_F(ConfigApiTest, WithNoFilesTheEmbeddedDefaultResolves) {
  unlink((home_ + "/.config/lazaret/config.toml").c_str());
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("", &resp).ok());
  const pb::ResolvedProfile& p = resp.profile();
  EXPECT_EQ(p.name(), "default");
  EXPECT_EQ(p.image(), "localhost/lazaret-sandbox:trixie");
  EXPECT_EQ(p.data_root(), home_ + "/.local/share/lazaret");
  EXPECT_EQ(p.profile_dir(), home_ + "/.local/share/lazaret/default");
  EXPECT_EQ(p.escalation().socket_dir(), run_ + "/escalation");
  std::vector<std::string> deny;
  for (const auto& c : p.network().deny()) deny.push_back(c.cidr().prefix());
  EXPECT_THAT(deny, AllOf(Contains("169.254.0.0/16"), Contains("10.0.0.0/8"), Contains("fc00::/7"),
                          Contains("64:ff9b::/96")));
}

TEST_F(ConfigApiTest, WorkspaceAutoApproveIsRefusedUntilTrustedAndAgainAfterOneByteChanges) {
  const std::string file = ws_ + "/lazaret.toml";
  const std::string content = "[escalation]\nauto_approve = [\"date\"]\n";
  WriteFile(file, content);

  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("claude-code", &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(file + ":2:17: escalation.auto_approve[0]"));
  EXPECT_THAT(s.error_message(), HasSubstr("lazaret trust " + file));
  CommandResult check = Lazaret({"config", "check"});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_THAT(check.err, HasSubstr("escalation.auto_approve[0]"));

  CommandResult trust = Lazaret({"trust", "--sha256", WorkspaceSha256()});
  ASSERT_EQ(trust.exit_code, 0) << trust.out << trust.err;
  EXPECT_THAT(trust.out, HasSubstr("auto-approves \"date\""));
  EXPECT_THAT(trust.out, HasSubstr("Trusted " + file));

  resp.Clear();
  s = Resolve("claude-code", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.profile().escalation().auto_approve_size(), 1);
  EXPECT_EQ(resp.profile().escalation().auto_approve(0).argv(0), "date");
  bool saw_trusted_workspace = false;
  for (const auto& l : resp.layers()) {
    if (l.layer() == common::v1::CONFIG_LAYER_WORKSPACE) saw_trusted_workspace = l.trusted();
  }
  EXPECT_TRUE(saw_trusted_workspace);
  check = Lazaret({"config", "check"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("trusted (lazaret trust)"));

  // One byte: "date" -> "datE" is another command and another digest.
  WriteFile(file, "[escalation]\nauto_approve = [\"datE\"]\n");
  s = Resolve("claude-code", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  // Even a trailing space is one byte too many.
  WriteFile(file, content + " ");
  s = Resolve("claude-code", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  // Back to the trusted bytes: trusted again.
  WriteFile(file, content);
  EXPECT_TRUE(Resolve("claude-code", &resp).ok());
}

TEST_F(ConfigApiTest, WorkspaceAllowEgressIsRefusedUntilTrustedAndAfterRevoke) {
  const std::string file = ws_ + "/lazaret.toml";
  WriteFile(file,
            "[profiles.claude-code]\nallow_egress = [\"160.79.104.0/23\", \"93.184.216.0/24\"]\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("claude-code", &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("profiles.claude-code.allow_egress[1]: allows egress to "
                                           "\"93.184.216.0/24\""));
  pb::ValidateResponse v = Validate();
  EXPECT_FALSE(v.ok());
  ASSERT_EQ(v.errors_size(), 1);
  EXPECT_EQ(v.errors(0).file(), file);
  EXPECT_EQ(v.errors(0).key_path(), "profiles.claude-code.allow_egress[1]");
  EXPECT_EQ(v.errors(0).line(), 2u);
  EXPECT_EQ(v.errors(0).column(), 36u);
  EXPECT_TRUE(v.errors(0).widening());

  ASSERT_EQ(Lazaret({"trust", "--sha256", WorkspaceSha256(), file}).exit_code, 0);
  resp.Clear();
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  std::vector<std::string> allow;
  for (const auto& c : resp.profile().network().allow()) allow.push_back(c.cidr().prefix());
  EXPECT_THAT(allow, Contains("93.184.216.0/24"));

  CommandResult revoke = Lazaret({"trust", "--revoke"});
  ASSERT_EQ(revoke.exit_code, 0) << revoke.out << revoke.err;
  EXPECT_EQ(Resolve("claude-code", &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(ConfigApiTest, ANarrowingWorkspaceFileNeedsNoTrust) {
  WriteFile(ws_ + "/lazaret.toml",
            "[escalation]\nenabled = false\nauto_approve = []\n"
            "[profiles.claude-code]\nallow_egress = []\nenv = { RUST_BACKTRACE = \"1\" }\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("claude-code", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.profile().escalation().enabled());
  EXPECT_EQ(resp.profile().escalation().auto_approve_size(), 0);
  ASSERT_EQ(resp.profile().env_size(), 1);
  EXPECT_EQ(resp.profile().env(0).source(), common::v1::CONFIG_LAYER_WORKSPACE);
}

TEST_F(ConfigApiTest, ABrokenWorkspaceFileFailsAndNamesFileLineAndKey) {
  WriteFile(ws_ + "/lazaret.toml", "[network]\ndefault_deny = [\"10.0.0.1/8\"]\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("claude-code", &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr(ws_ + "/lazaret.toml:2:17: network.default_deny[0]: \"10.0.0.1/8\" has "
                              "host bits set; did you mean \"10.0.0.0/8\"?"));
  pb::ListProfilesRequest req;
  *req.mutable_selector() = Selector();
  pb::ListProfilesResponse lresp;
  grpc::ClientContext cc;
  EXPECT_FALSE(stub_->ListProfiles(&cc, req, &lresp).ok());
}

TEST_F(ConfigApiTest, ASymlinkToSshUsedAsAVolumeIsRejectedShowingItsCanonicalTarget) {
  ASSERT_EQ(symlink((home_ + "/.ssh").c_str(), (ws_ + "/innocent").c_str()), 0);
  const std::string mine = dir_.path() + "/mine.toml";
  WriteFile(mine,
            "[profiles.default]\nvolumes = [{ host = \"{workspace_dir}/innocent\", container = "
            "\"/keys\" }]\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("", &resp, mine);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("profiles.default.volumes[0].host"));
  EXPECT_THAT(s.error_message(), HasSubstr("resolves to \"" + home_ + "/.ssh\""));
  EXPECT_THAT(s.error_message(), HasSubstr("~/.ssh (ssh keys)"));
}

constexpr char kNetworkConfig[] = R"(
[network]
default_allow_domains = ["registry.npmjs.org", "*.pypi.org"]
dns_upstream = ["192.0.2.53", "[2001:db8::53]:5353"]

[profiles.names-only]
image = "docker.io/library/node:22.11.0-bookworm"
default_allow = []
allow_egress = ["198.51.100.7/32"]
allow_domains = [
  "API.Example.COM.",
  "*.example.net",
  "registry.npmjs.org",
]
)";

TEST_F(ConfigApiTest, NetworkEntriesNamesAndResolversComeWithTheirSources) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg, kNetworkConfig);
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("names-only", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const pb::NetworkPolicy& n = resp.profile().network();
  // default_allow = [] replaces the whole-internet default: only allow_egress.
  ASSERT_EQ(n.allow_size(), 1);
  EXPECT_EQ(n.allow(0).cidr().prefix(), "198.51.100.7/32");
  EXPECT_EQ(n.allow(0).source().layer(), common::v1::CONFIG_LAYER_USER);
  EXPECT_EQ(n.allow(0).source().file(), cfg);
  EXPECT_EQ(n.allow(0).source().line(), 9u);
  EXPECT_EQ(n.allow(0).source().key_path(), "profiles.names-only.allow_egress[0]");
  // Network-wide names first, then the profile's; the repeat is dropped.
  std::vector<std::string> names;
  for (const pb::DomainEntry& d : n.allow_domains()) {
    names.push_back(d.pattern() + "@" + std::to_string(d.source().line()) + ":" +
                    d.source().key_path());
    EXPECT_EQ(d.source().file(), cfg);
    EXPECT_EQ(d.source().layer(), common::v1::CONFIG_LAYER_USER);
  }
  EXPECT_THAT(names,
              ::testing::ElementsAre("registry.npmjs.org@3:network.default_allow_domains[0]",
                                     "*.pypi.org@3:network.default_allow_domains[1]",
                                     "api.example.com@11:profiles.names-only.allow_domains[0]",
                                     "*.example.net@12:profiles.names-only.allow_domains[1]"));
  EXPECT_THAT(n.dns_upstream(), ::testing::ElementsAre("192.0.2.53:53", "[2001:db8::53]:5353"));
  ASSERT_GT(n.deny_size(), 0);
  for (const pb::CidrEntry& d : n.deny()) {
    EXPECT_EQ(d.source().layer(), common::v1::CONFIG_LAYER_EMBEDDED_DEFAULT);
    EXPECT_GT(d.source().line(), 0u);
  }

  // A bad name is refused with its position and how to fix it.
  WriteFile(cfg, "[network]\ndefault_allow_domains = [\"*.com\"]\n");
  s = Resolve("", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr(cfg + ":2:26: network.default_allow_domains[0]: \"*.com\" is not a valid "
                              "name"));
  WriteFile(cfg, "[network]\ndns_upstream = [\"dns.google\"]\n");
  s = Resolve("", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("not by name"));
}

TEST_F(ConfigApiTest, AWorkspaceAddingANameOrAResolverIsRefusedUntilTrusted) {
  WriteFile(home_ + "/.config/lazaret/config.toml", kNetworkConfig);
  const std::string file = ws_ + "/lazaret.toml";
  // Narrowing: a name below a granted wildcard, fewer names, the same resolvers.
  WriteFile(file,
            "[network]\ndns_upstream = [\"192.0.2.53:53\", \"[2001:db8::53]:5353\"]\n"
            "[profiles.names-only]\nallow_domains = [\"a.example.net\"]\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("names-only", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.profile().network().allow_domains_size(), 3);
  EXPECT_EQ(resp.profile().network().allow_domains(2).pattern(), "a.example.net");
  EXPECT_EQ(resp.profile().network().allow_domains(2).source().layer(),
            common::v1::CONFIG_LAYER_WORKSPACE);

  WriteFile(file,
            "[network]\ndns_upstream = [\"192.0.2.99\"]\n"
            "[profiles.names-only]\nallow_domains = [\"example.net\", \"exfil.example\"]\n");
  s = Resolve("names-only", &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(file + ":4:18: profiles.names-only.allow_domains[0]: "
                                                  "allows the name \"example.net\""));
  EXPECT_THAT(s.error_message(), HasSubstr("allows the name \"exfil.example\""));
  EXPECT_THAT(s.error_message(), HasSubstr(file + ":2:16: network.dns_upstream: sets the "
                                                  "resolvers asked for the sandbox's names"));
  pb::ValidateResponse v = Validate();
  EXPECT_FALSE(v.ok());
  int widenings = 0;
  for (const pb::Diagnostic& d : v.errors()) widenings += d.widening() ? 1 : 0;
  EXPECT_EQ(widenings, 3);

  CommandResult trust = Lazaret({"trust", "--sha256", WorkspaceSha256()});
  ASSERT_EQ(trust.exit_code, 0) << trust.out << trust.err;
  s = Resolve("names-only", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(resp.profile().network().dns_upstream(), ::testing::ElementsAre("192.0.2.99:53"));
}

TEST_F(ConfigApiTest, ConfigShowPrintsEachNetworkEntryWithItsFileAndLine) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg, kNetworkConfig);
  CommandResult r = Lazaret({"config", "show", "--profile", "names-only"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The line that shows `value`, up to its end.
  auto line_of = [&](const std::string& value) {
    const size_t at = r.out.find(" " + value + " ");
    if (at == std::string::npos) return std::string();
    const size_t begin = r.out.rfind('\n', at) + 1;
    return r.out.substr(begin, r.out.find('\n', at) - begin);
  };
  EXPECT_THAT(line_of("198.51.100.7/32"),
              AllOf(HasSubstr("network allow"), HasSubstr("[user: " + cfg + ":9]")))
      << r.out;
  EXPECT_THAT(line_of("api.example.com"), HasSubstr("[user: " + cfg + ":11]")) << r.out;
  EXPECT_THAT(line_of("registry.npmjs.org"),
              AllOf(HasSubstr("allow_domains"), HasSubstr("[user: " + cfg + ":3]")))
      << r.out;
  EXPECT_THAT(line_of("10.0.0.0/8"), HasSubstr("[embedded default]")) << r.out;
  EXPECT_THAT(line_of("192.0.2.53:53"),
              AllOf(HasSubstr("dns_upstream"), HasSubstr("[user: " + cfg + "]")))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("[2001:db8::53]:5353"));
  CommandResult json = Lazaret({"config", "show", "--profile", "names-only", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"*.example.net\""));
  EXPECT_THAT(json.out, HasSubstr("\"dns_upstream\""));
  // With nothing of the user's: the host's resolvers, the built-in
  // developer hosts.
  unlink(cfg.c_str());
  r = Lazaret({"config", "show"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(line_of("registry.npmjs.org"), HasSubstr("[embedded default]")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("dns_upstream     (the host's resolvers, /etc/resolv.conf)"));
}

TEST_F(ConfigApiTest, ResolvedEscalationCarriesEntryFormsTimeoutsAndTheirSources) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg, R"(
[escalation]
auto_approve = ["gh pr view", { exact = "cat /etc/os-release" },
                { prefix = "gh pr list", options = ["--json", "--limit"] }]
command_timeout = 90
approval_timeout = 120
approver = "remote"
[profiles.claude-code]
image = "docker.io/library/node:22.11.0-bookworm"
command_timeout = 15
)");
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  const pb::EscalationPolicy& esc = resp.profile().escalation();
  ASSERT_EQ(esc.auto_approve_size(), 3);
  EXPECT_FALSE(esc.auto_approve(0).exact());
  EXPECT_EQ(esc.auto_approve(0).text(), "gh pr view");
  EXPECT_EQ(esc.auto_approve(0).source(), common::v1::CONFIG_LAYER_USER);
  EXPECT_TRUE(esc.auto_approve(1).exact());
  EXPECT_THAT(esc.auto_approve(1).argv(), ::testing::ElementsAre("cat", "/etc/os-release"));
  EXPECT_THAT(esc.auto_approve(2).options(), ::testing::ElementsAre("--json", "--limit"));
  EXPECT_EQ(esc.command_timeout_seconds(), 15u);
  EXPECT_EQ(esc.approval_timeout_seconds(), 120u);
  resp.Clear();
  ASSERT_TRUE(Resolve("default", &resp).ok());
  EXPECT_EQ(resp.profile().escalation().command_timeout_seconds(), 90u);

  CommandResult r = Lazaret({"config", "show", "--profile", "claude-code"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("prefix:  gh pr view ..."));
  EXPECT_THAT(r.out, HasSubstr("prefix:  gh pr list ... (options --json --limit)"));
  EXPECT_THAT(r.out, HasSubstr("exactly: cat /etc/os-release"));
  EXPECT_THAT(r.out, HasSubstr("command_timeout  15 s   [user: " + cfg + "]"));
  EXPECT_THAT(r.out, HasSubstr("approval_timeout 120 s   [user: " + cfg + "]"));
  EXPECT_THAT(r.out, HasSubstr("approver         remote (never inline)   [user: " + cfg + "]"));
  EXPECT_EQ(esc.approver(), pb::EscalationPolicy::APPROVER_REMOTE);

  // A workspace may lower a timeout, never raise it.
  WriteFile(ws_ + "/lazaret.toml", "[profiles.claude-code]\ncommand_timeout = 10\n");
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  EXPECT_EQ(resp.profile().escalation().command_timeout_seconds(), 10u);
  WriteFile(ws_ + "/lazaret.toml", "[escalation]\napproval_timeout = 121\n");
  grpc::Status s = Resolve("claude-code", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("escalation.approval_timeout: raises the timeout"));
}

TEST_F(ConfigApiTest, ConfigCheckRefusesEntriesThatHandTheHostOverNamingTheirClass) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg,
            "[escalation]\nauto_approve = [\"cat\", { exact = \"cat notes.txt\" }, \"source\"]\n");
  CommandResult r = Lazaret({"config", "check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(cfg + ":2:17: escalation.auto_approve[0]: \"cat\" is refused: "
                                     "'cat' is a reader of arbitrary paths"));
  EXPECT_THAT(r.err, HasSubstr("escalation.auto_approve[1].exact: \"cat notes.txt\" is refused: "
                               "'notes.txt' is not an absolute path"));
  EXPECT_THAT(r.err, HasSubstr("escalation.auto_approve[2]: \"source\" is refused: 'source' is "
                               "a shell builtin"));
}

TEST_F(ConfigApiTest, ExampleTomlPassesConfigCheckAndResolvesEveryProfile) {
  const std::string example = std::string(LAZARET_SOURCE_DIR) + "/example.toml";
  CommandResult check = Lazaret({"config", "check", "--config", example});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("The configuration is valid."));
  EXPECT_THAT(check.out, Not(HasSubstr("warning:")));
  for (const char* profile : {"claude-code", "codex", "gemini-cli", "aider", "opencode"}) {
    pb::ResolveProfileResponse resp;
    grpc::Status s = Resolve(profile, &resp, example);
    ASSERT_TRUE(s.ok()) << profile << ": " << s.error_message();
    EXPECT_EQ(resp.warnings_size(), 0) << profile << ": images are pinned";
    EXPECT_GT(resp.profile().env_size(), 0) << profile;
    EXPECT_GT(resp.profile().persistent_dirs_size(), 0) << profile;
  }
}

TEST_F(ConfigApiTest, PersistentCapResolvesWithItsDefaultAndAWorkspaceMayOnlyLowerIt) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg, std::string(kUserConfig) + "persistent_cap = \"8GiB\"\n");
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  EXPECT_EQ(resp.profile().persistent_cap_bytes(), uint64_t{8} << 30);
  resp.Clear();
  ASSERT_TRUE(Resolve("default", &resp).ok());
  EXPECT_EQ(resp.profile().persistent_cap_bytes(), uint64_t{4} << 30) << "the default applies";

  CommandResult r = Lazaret({"config", "show", "--profile", "claude-code"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("persistent_cap   8GiB   [user: " + cfg + "]"));
  r = Lazaret({"config", "show", "--profile", "default"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("persistent_cap   4GiB   [built-in default]"));
  r = Lazaret({"config", "show", "--profile", "claude-code", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"persistent_cap_bytes\":\"8589934592\""));

  // A workspace may lower the cap; raising it is refused until trusted.
  WriteFile(ws_ + "/lazaret.toml", "[profiles.claude-code]\npersistent_cap = \"512MiB\"\n");
  resp.Clear();
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  EXPECT_EQ(resp.profile().persistent_cap_bytes(), uint64_t{512} << 20);
  WriteFile(ws_ + "/lazaret.toml", "[profiles.claude-code]\npersistent_cap = \"9GiB\"\n");
  grpc::Status s = Resolve("claude-code", &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr(ws_ + "/lazaret.toml:2:18: profiles.claude-code.persistent_cap: raises "
                              "the persistent data cap to \"9GiB\"; "
                              "profiles.claude-code.persistent_cap of your configuration is "
                              "\"8GiB\""));
  CommandResult trust = Lazaret({"trust", "--sha256", WorkspaceSha256()});
  ASSERT_EQ(trust.exit_code, 0) << trust.out << trust.err;
  resp.Clear();
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  EXPECT_EQ(resp.profile().persistent_cap_bytes(), uint64_t{9} << 30);

  // A value that is not a size is an error naming the key and the fix.
  WriteFile(ws_ + "/lazaret.toml", "");
  WriteFile(cfg, std::string(kUserConfig) + "persistent_cap = \"4GB\"\n");
  r = Lazaret({"config", "check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("profiles.claude-code.persistent_cap: \"4GB\" is not a size: "
                               "write a whole number with KiB, MiB, GiB or TiB (powers of 1024), "
                               "e.g. \"4GiB\""));
}

TEST_F(ConfigApiTest, ConfigCheckWarnsAboutAPackageManagerPersistedWithoutItsDatabase) {
  const std::string file = dir_.path() + "/apt.toml";
  WriteFile(file, R"([profiles.half-apt]
image = "localhost/lazaret-sandbox:trixie"
persistent_dirs = ["/usr", "/root"]
[profiles.db-only]
image = "localhost/lazaret-sandbox:trixie"
persistent_dirs = ["/var/lib/dpkg"]
[profiles.npm-half]
image = "localhost/lazaret-sandbox:trixie"
persistent_dirs = ["/usr/local/lib/node_modules"]
[profiles.apt]
image = "localhost/lazaret-sandbox:trixie"
persistent_dirs = ["/usr", "/var/lib/dpkg", "/var/lib/apt"]
)");
  CommandResult r = Lazaret({"config", "check", "--config", file});
  EXPECT_EQ(r.exit_code, 0) << "a warning, not an error\n" << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("The configuration is valid."));
  EXPECT_THAT(r.out, HasSubstr("warning: " + file +
                               ":3:19: profiles.half-apt.persistent_dirs: persists the files dpkg "
                               "and apt install (\"/usr\") without dpkg's database of installed "
                               "packages \"/var/lib/dpkg\""));
  EXPECT_THAT(r.out, HasSubstr("fix: add \"/var/lib/dpkg\" and \"/var/lib/apt\" to "
                               "persistent_dirs"));
  EXPECT_THAT(r.out, HasSubstr(":6:19: profiles.db-only.persistent_dirs: persists dpkg's database "
                               "of installed packages (\"/var/lib/dpkg\") without the files"));
  EXPECT_THAT(r.out, HasSubstr(":9:19: profiles.npm-half.persistent_dirs: persists the packages "
                               "`npm install -g` installs"));
  EXPECT_THAT(r.out, HasSubstr("fix: persist \"/usr/local\" instead: it holds both"));
  EXPECT_THAT(r.out, Not(HasSubstr("profiles.apt.persistent_dirs")));
  EXPECT_THAT(r.out, Not(HasSubstr("profiles.claude-code.persistent_dirs")));

  // The run path sees the same advice with the profile it resolves.
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("half-apt", &resp, file).ok());
  bool warned = false;
  for (const pb::Diagnostic& d : resp.warnings()) {
    warned |= d.key_path() == "profiles.half-apt.persistent_dirs";
  }
  EXPECT_TRUE(warned);
}

TEST_F(ConfigApiTest, ConfigShowPrintsEnvNamesAndSourcesButNeverValues) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"config", "show", "--profile", "claude-code"},
        std::vector<std::string>{"config", "show", "--profile", "claude-code", "--json"}}) {
    CommandResult r = Lazaret(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("SECRET_LITERAL"));
    EXPECT_THAT(r.out, HasSubstr("ANTHROPIC_API_KEY"));
    EXPECT_THAT(r.out, Not(HasSubstr("hunter2-literal")));
    EXPECT_THAT(r.out, Not(HasSubstr("sk-never-read-by-configd")));
  }
}

TEST_F(ConfigApiTest, HostVariablesAreNamedNotResolvedByTheService) {
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("claude-code", &resp).ok());
  bool found = false;
  for (const auto& e : resp.profile().env()) {
    if (e.name() == "ANTHROPIC_API_KEY") {
      found = true;
      EXPECT_EQ(e.host_var(), "ANTHROPIC_API_KEY");
      EXPECT_FALSE(e.has_literal());
    }
  }
  EXPECT_TRUE(found);
  EXPECT_THAT(resp.DebugString(), Not(HasSubstr("sk-never-read-by-configd")));
}

TEST_F(ConfigApiTest, BadRequestsAreRefused) {
  pb::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir("relative/ws");
  pb::ResolveProfileResponse resp;
  grpc::ClientContext cc;
  EXPECT_EQ(stub_->ResolveProfile(&cc, req, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Resolve("../../etc", &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Resolve("no-such-profile", &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

// D1: the user's config.toml is a symlink into the directory Lazaret runs
// in (or reaches it through a chain of links, a symlinked directory, or is
// a --config file there): the agent could rewrite the trusted layer, so
// configd refuses to load anything.
TEST_F(ConfigApiTest, AUserConfigThatResolvesIntoTheWorkspaceIsRefused) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  const std::string dotfiles = home_ + "/dotfiles";
  MakeDirs(dotfiles);
  WriteFile(dotfiles + "/lazaret.toml", kUserConfig);
  ASSERT_EQ(unlink(cfg.c_str()), 0);
  ASSERT_EQ(symlink((dotfiles + "/lazaret.toml").c_str(), cfg.c_str()), 0);

  // From ~/dotfiles, the workspace, it is refused.
  pb::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir(dotfiles);
  req.set_profile("claude-code");
  pb::ResolveProfileResponse resp;
  grpc::ClientContext cc;
  grpc::Status s = stub_->ResolveProfile(&cc, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr("your configuration file " + cfg + " resolves to " + dotfiles +
                        "/lazaret.toml, which is inside the workspace"));
  EXPECT_THAT(s.error_message(), HasSubstr("replace a symlink into such a directory"));
  // From elsewhere it is the user's own file and loads.
  EXPECT_TRUE(Resolve("claude-code", &resp).ok());

  // A chain of links ending in the workspace.
  ASSERT_EQ(unlink(cfg.c_str()), 0);
  WriteFile(ws_ + "/real.toml", kUserConfig);
  ASSERT_EQ(symlink((ws_ + "/real.toml").c_str(), (home_ + "/hop").c_str()), 0);
  ASSERT_EQ(symlink((home_ + "/hop").c_str(), cfg.c_str()), 0);
  s = Resolve("claude-code", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("resolves to " + ws_ + "/real.toml"));

  // The directory itself a symlink into the workspace.
  ASSERT_EQ(unlink(cfg.c_str()), 0);
  ASSERT_EQ(rmdir((home_ + "/.config/lazaret").c_str()), 0);
  MakeDirs(ws_ + "/cfg");
  WriteFile(ws_ + "/cfg/config.toml", kUserConfig);
  ASSERT_EQ(symlink((ws_ + "/cfg").c_str(), (home_ + "/.config/lazaret").c_str()), 0);
  s = Resolve("claude-code", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("your Lazaret configuration directory " + home_ +
                                           "/.config/lazaret resolves to " + ws_ + "/cfg"));
  ASSERT_EQ(unlink((home_ + "/.config/lazaret").c_str()), 0);

  // A --config file inside the workspace.
  WriteFile(ws_ + "/dev.toml", kUserConfig);
  s = Resolve("claude-code", &resp, ws_ + "/dev.toml");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr("the --config file " + ws_ + "/dev.toml is inside the workspace"));
  CommandResult check = Lazaret({"config", "check", "--config", ws_ + "/dev.toml"});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_THAT(check.err, HasSubstr("is inside the workspace"));
}

// D4: a session does not mount what lazaret-configd returns on its word.
// Here configd runs with another home than lazaret-sessiond (as a configd
// that resolves paths wrongly would): it accepts a volume that, for the
// user the session runs as, is ~/.ssh. The session worker refuses before
// anything starts, and `lazaret run` says so.
TEST_F(ConfigApiTest, LazaretRunRechecksTheResolvedProfileBeforeStartingAnything) {
  const std::string other_home = dir_.path() + "/home2";
  MakeDirs(other_home + "/.ssh");
  WriteFile(home_ + "/.config/lazaret/config.toml", "[profiles.default]\nvolumes = [{ host = \"" +
                                                        other_home +
                                                        "/.ssh\", container = \"/keys\" }]\n");
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("", &resp).ok());  // configd's home is not home2
  ASSERT_EQ(resp.profile().volumes_size(), 1);

  std::map<std::string, std::string> env = env_;
  env["HOME"] = other_home;
  // lazaret-sessiond, whose home is home2, runs the session.
  std::vector<std::string> env_storage;
  for (const std::string& kv : EnvStrings()) {
    if (kv.rfind("HOME=", 0) != 0) env_storage.push_back(kv);
  }
  env_storage.push_back("HOME=" + other_home);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bin = Binary("lazaret-sessiond");
  std::string flag = "--runtime-dir=" + run_;
  char* argv[] = {bin.data(), flag.data(), nullptr};
  pid_t sessiond = -1;
  ASSERT_EQ(posix_spawn(&sessiond, bin.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  const bool up = test::WaitFor([&] { return CheckHealth(run_ + "/sessiond.sock", 200).ok(); },
                                std::chrono::seconds(15));
  auto stop_sessiond = [&] {
    kill(sessiond, SIGTERM);
    waitpid(sessiond, nullptr, 0);
  };
  if (!up) stop_sessiond();
  ASSERT_TRUE(up) << "lazaret-sessiond did not become healthy";
  CommandResult r =
      test::Run({"env", "-C", ws_, Binary("lazaret"), "run", "--dry-run", "--", "true"}, env);
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("refusing the profile lazaret-configd returned: volume " +
                               other_home + "/.ssh -> /keys"));
  EXPECT_THAT(r.err, HasSubstr("~/.ssh (ssh keys)"));
  EXPECT_THAT(r.err, HasSubstr("Nothing was started"));
  EXPECT_THAT(r.out, Not(HasSubstr("podman")));  // not even a dry-run plan
  stop_sessiond();
  // The profile directory was not created from the refused profile.
  struct stat st {};
  EXPECT_NE(stat((home_ + "/.local/share/lazaret/default").c_str(), &st), 0);
}

// D2, without a terminal: the hash to pass is named, a wrong one is
// refused, nothing is recorded unless it matches the bytes read.
TEST_F(ConfigApiTest, TrustWithoutATerminalNeedsTheExactSha256) {
  const std::string file = ws_ + "/lazaret.toml";
  WriteFile(file, "[escalation]\nauto_approve = [\"date\"]\n");
  const std::string digest = WorkspaceSha256();
  ASSERT_EQ(digest.size(), 64u);

  CommandResult r = Lazaret({"trust"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("sha256 " + digest));
  EXPECT_THAT(r.out, HasSubstr("line 2: auto_approve = [\"date\"]"));
  EXPECT_THAT(r.out, HasSubstr("escalation.auto_approve[0]: auto-approves \"date\""));
  EXPECT_THAT(r.err, HasSubstr("standard input is not a terminal"));
  EXPECT_THAT(r.err, HasSubstr("lazaret trust --sha256 " + digest + " " + file));
  EXPECT_FALSE(WorkspaceTrusted());

  const std::string wrong(64, 'a');
  r = Lazaret({"trust", "--sha256", wrong});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("has sha256 " + digest + ", not the " + wrong));
  EXPECT_FALSE(WorkspaceTrusted());

  r = Lazaret({"trust", "--sha256", "123"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_FALSE(WorkspaceTrusted());

  // The digest of the content the developer reviewed, after the agent
  // changed one byte: refused.
  WriteFile(file, "[escalation]\nauto_approve = [\"datE\"]\n");
  r = Lazaret({"trust", "--sha256", digest});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(WorkspaceTrusted());

  WriteFile(file, "[escalation]\nauto_approve = [\"date\"]\n");
  r = Lazaret({"trust", "--sha256=" + digest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(WorkspaceTrusted());
  // Already trusted: the listing is of the bytes, not of the trust store.
  r = Lazaret({"trust"});
  EXPECT_THAT(r.out, HasSubstr("auto-approves \"date\""));
}

// What the agent wrote is shown escaped: no escape sequence, bidi override
// or other control reaches the developer's terminal.
TEST_F(ConfigApiTest, TrustShowsAgentTextEscaped) {
  WriteFile(ws_ + "/lazaret.toml",
            "[escalation]\nauto_approve = [\"date\"]\n"
            "[profiles.claude-code]\nimage = \"evil\\u001b[2J\\u202e:1\"\n");
  CommandResult r = Lazaret({"trust"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_THAT(all, HasSubstr("\\x1b"));  // shown, as text
  EXPECT_EQ(all.find('\x1b'), std::string::npos) << all;
  EXPECT_EQ(all.find("\xe2\x80\xae"), std::string::npos) << all;
}

// The interactive path, on a real pseudo-terminal.
class TrustOnATerminalTest : public ConfigApiTest {
 protected:
  // Starts `lazaret trust` in the workspace with a pty as its controlling
  // terminal and stdin/stdout/stderr.
  void Start() {
    std::vector<std::string> env = EnvStrings();
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string bin = Binary("lazaret");
    std::string trust = "trust";
    char* argv[] = {bin.data(), trust.data(), nullptr};
    const std::string& ws = ws_;
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      if (chdir(ws.c_str()) != 0) _exit(126);
      execve(argv[0], argv, envp.data());
      _exit(127);
    }
  }

  // Reads the terminal until `text` appeared or the process ended.
  bool ReadUntil(const std::string& text, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (screen_.find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t n = read(master_, buf, sizeof(buf));
      if (n <= 0) return false;  // EIO: the child closed the terminal
      screen_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void Type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  int Wait() {
    ReadUntil("\x01never", std::chrono::seconds(10));  // drain until the child closes
    int status = 0;
    waitpid(pid_, &status, 0);
    close(master_);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    ConfigApiTest::TearDown();
  }

  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
};

TEST_F(TrustOnATerminalTest, YesTrustsTheContentShown) {
  WriteFile(ws_ + "/lazaret.toml", "[escalation]\nauto_approve = [\"date\"]\n");
  const std::string digest = WorkspaceSha256();
  Start();
  ASSERT_TRUE(ReadUntil("[y/N]", std::chrono::seconds(20))) << screen_;
  EXPECT_THAT(screen_, HasSubstr("sha256 " + digest));
  EXPECT_THAT(screen_, HasSubstr("auto-approves \"date\""));
  EXPECT_FALSE(WorkspaceTrusted());  // not before the answer
  Type("y\n");
  EXPECT_EQ(Wait(), 0) << screen_;
  EXPECT_THAT(screen_, HasSubstr("Trusted " + ws_ + "/lazaret.toml"));
  EXPECT_TRUE(WorkspaceTrusted());
}

TEST_F(TrustOnATerminalTest, AnythingButYesTrustsNothing) {
  WriteFile(ws_ + "/lazaret.toml", "[escalation]\nauto_approve = [\"date\"]\n");
  Start();
  ASSERT_TRUE(ReadUntil("[y/N]", std::chrono::seconds(20))) << screen_;
  Type("\n");
  EXPECT_EQ(Wait(), 1) << screen_;
  EXPECT_THAT(screen_, HasSubstr("Not trusted."));
  EXPECT_FALSE(WorkspaceTrusted());
}

TEST_F(TrustOnATerminalTest, AFileSwappedBetweenShowAndConfirmIsNotTrusted) {
  const std::string file = ws_ + "/lazaret.toml";
  const std::string reviewed = "[escalation]\nauto_approve = [\"gh pr list\"]\n";
  const std::string swapped = "[escalation]\nauto_approve = [\"uname\"]\n";
  WriteFile(file, reviewed);
  Start();
  ASSERT_TRUE(ReadUntil("[y/N]", std::chrono::seconds(20))) << screen_;
  EXPECT_THAT(screen_, HasSubstr("gh pr list"));
  EXPECT_THAT(screen_, Not(HasSubstr("uname")));
  // The agent swaps the file while the developer reads the prompt.
  WriteFile(file, swapped);
  Type("y\n");
  EXPECT_EQ(Wait(), 1) << screen_;
  EXPECT_THAT(screen_, HasSubstr("changed after it was shown; nothing was trusted"));
  EXPECT_FALSE(WorkspaceTrusted());
  pb::ResolveProfileResponse resp;
  EXPECT_EQ(Resolve("claude-code", &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Nor was the reviewed content recorded behind the developer's back.
  WriteFile(file, reviewed);
  EXPECT_FALSE(WorkspaceTrusted());
}

TEST_F(ConfigApiTest, TheCliSaysToRunLazaretUpWhenTheServiceIsDown) {
  std::map<std::string, std::string> env = env_;
  env["LAZARET_RUNTIME_DIR"] = dir_.path() + "/no-service";
  CommandResult r = test::Run({Binary("lazaret"), "config", "check"}, env);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("run: lazaret up"));
  // `lazaret trust` cannot show what a file widens without the service:
  // it trusts nothing (the old code recorded the digest unseen).
  WriteFile(ws_ + "/lazaret.toml", "[escalation]\nauto_approve = [\"date\"]\n");
  std::vector<std::string> argv = {
      "env", "-C", ws_, Binary("lazaret"), "trust", "--sha256", WorkspaceSha256()};
  r = test::Run(argv, env);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("nothing was trusted"));
  EXPECT_FALSE(WorkspaceTrusted());
}


TEST_F(ConfigApiTest, NameAllowForAProfileEditsOnlyTheUsersFileAfterThePreview) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  const std::string before =
      "# mine\n[profiles.dev]\nimage = \"localhost/x:1\"  # pinned\nallow_domains = "
      "[\"a.example.com\"]\n";
  WriteFile(cfg, before);
  pb::NameAllowRequest req;
  *req.mutable_selector() = Selector("");
  req.set_profile("dev");
  req.set_name("b.example.com");
  pb::NameAllowPreview preview;
  {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status s = stub_->PreviewNameAllow(&cc, req, &preview);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(preview.file(), cfg);
  EXPECT_THAT(preview.diff(), HasSubstr("-allow_domains = [\"a.example.com\"]\n+allow_domains = "
                                        "[\"a.example.com\", \"b.example.com\"]\n"));
  EXPECT_EQ(test::ReadFile(cfg), before) << "a preview writes nothing";
  // A stale hash is refused and changes nothing.
  req.set_before_sha256(std::string(64, '0'));
  pb::NameAllowPreview applied;
  {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    EXPECT_EQ(stub_->ApplyNameAllow(&cc, req, &applied).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  EXPECT_EQ(test::ReadFile(cfg), before);
  req.set_before_sha256(preview.before_sha256());
  {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status s = stub_->ApplyNameAllow(&cc, req, &applied);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(test::ReadFile(cfg),
            "# mine\n[profiles.dev]\nimage = \"localhost/x:1\"  # pinned\nallow_domains = "
            "[\"a.example.com\", \"b.example.com\"]\n");
  pb::ResolveProfileResponse resp;
  ASSERT_TRUE(Resolve("dev", &resp).ok());
  const auto& names = resp.profile().network().allow_domains();
  ASSERT_GT(names.size(), 0);
  EXPECT_EQ(names[names.size() - 1].pattern(), "b.example.com");
  // A wildcard never comes from an approval.
  req.set_name("*.example.com");
  {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    EXPECT_EQ(stub_->PreviewNameAllow(&cc, req, &preview).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(ConfigApiTest, ConfigShowPrintsTheEgressSettingsAndPorts) {
  const std::string cfg = home_ + "/.config/lazaret/config.toml";
  WriteFile(cfg,
            "[profiles.dev]\nimage = \"localhost/x:1\"\negress = \"names\"\n"
            "ports = [\"8080:3000\"]\n");
  CommandResult r = Lazaret({"config", "show", "--profile", "dev"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("egress           names (only the listed ones)   [user: " + cfg));
  EXPECT_THAT(r.out, HasSubstr("ask_timeout      120 s   [embedded default]"));
  EXPECT_THAT(r.out, HasSubstr("ask_unattended   deny (refuse at once)   [embedded default]"));
  EXPECT_THAT(r.out, HasSubstr("ports            host 127.0.0.1 and ::1 port 8080 -> sandbox "
                               "port 3000"));
  r = Lazaret({"config", "show", "--profile", "default", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"egress\":\"EGRESS_MODE_ASK\""));
  EXPECT_THAT(r.out, HasSubstr("\"ask_timeout_seconds\":120"));
}


TEST_F(ConfigApiTest, AWorkspaceFileMayNotOpenPortsEvenWhenTrusted) {
  WriteFile(home_ + "/.config/lazaret/config.toml",
            "[profiles.dev]\nimage = \"localhost/x:1\"\nports = [\"3000\"]\n");
  WriteFile(ws_ + "/lazaret.toml", "[profiles.dev]\nports = [\"0.0.0.0:8080:3000\"]\n");
  pb::ResolveProfileResponse resp;
  grpc::Status s = Resolve("dev", &resp);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error_message(), HasSubstr("a workspace file may not open ports"));
  // Not a widening that trust could accept: an error, which lazaret trust
  // refuses to trust (NetworkNarrowingTest covers a trusted file).
  CommandResult trust = Lazaret({"trust", "--sha256", WorkspaceSha256()});
  EXPECT_NE(trust.exit_code, 0) << trust.out << trust.err;
  EXPECT_THAT(trust.err, HasSubstr("a workspace file may not open ports"));
  s = Resolve("dev", &resp);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace lazaret
