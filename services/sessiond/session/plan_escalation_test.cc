// The session plan with host escalation on and off: the socket directory
// bound into the sidecar (never the sandbox) with the router's relay flag,
// the sandbox's two read-only mounts, no host-uds flag for runsc ever, the
// env, the dry run, and the broker's checked endpoint taken into the
// sandbox's command line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/session/dry_run.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/plan_test_inputs.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;
using test_plan::Has;
using test_plan::Inputs;
using test_plan::kInitMount;
using test_plan::MountFlags;
using test_plan::PlainProfile;
using test_plan::RepoGitPlan;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kClient[] = "/opt/lazaret/libexec/lazaret-escalate";
constexpr char kCerts[] = "/dev/shm/lazaret-0/0123456789ab";

PlanInputs EscalationInputs() {
  PlanInputs in = Inputs();
  in.escalate_client_host = kClient;
  in.escalation_certs_dir = kCerts;
  return in;
}

pb::ResolvedProfile EscalationProfile(bool enabled) {
  pb::ResolvedProfile p = PlainProfile();
  p.mutable_escalation()->set_enabled(enabled);
  p.mutable_escalation()->set_socket_dir("/rt/escalation");
  return p;
}

// The flags podman takes before "run": the global ones, runsc's among them.
std::vector<std::string> GlobalFlags(const std::vector<std::string>& argv) {
  auto run = std::find(argv.begin(), argv.end(), "run");
  return std::vector<std::string>(argv.begin() + 1, run);
}

TEST(RunscGlobalFlagsTest, NeverAHostUdsFlag) {
  EXPECT_THAT(RunscGlobalFlags(false), ElementsAre("--runtime-flag=network=host"));
  EXPECT_THAT(RunscGlobalFlags(true),
              ElementsAre("--runtime-flag=network=host", "--runtime-flag=ignore-cgroups"));
}

TEST(PlanSessionTest, EscalationOnBindsTheSocketDirIntoTheSidecarAndNoHostSocketIntoTheSandbox) {
  for (bool rootless : {false, true}) {
    SCOPED_TRACE(rootless ? "rootless" : "rootful");
    PlanInputs in = EscalationInputs();
    in.rootless = rootless;
    auto plan = PlanSession(in, EscalationProfile(true), RepoGitPlan());
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::vector<std::string>& a = plan->sandbox_argv;
    // runsc is started without any host-uds flag: no host socket file is
    // reachable from inside.
    EXPECT_THAT(GlobalFlags(a),
                ElementsAreArray(RunscGlobalFlags(rootless, plan->sandbox.trace_config)));
    for (const std::string& f : a) {
      EXPECT_THAT(f, Not(HasSubstr("host-uds")));
      EXPECT_THAT(f, Not(HasSubstr("/rt/escalation")));
      EXPECT_THAT(f, Not(HasSubstr("escalate.sock")));
      EXPECT_THAT(f, Not(HasSubstr("/run/lazaret/broker")));
    }
    // The sandbox's two mounts, read-only, after the session's own and
    // before the init.
    std::vector<std::string> m = MountFlags(a);
    ASSERT_GE(m.size(), 3u);
    EXPECT_THAT(
        std::vector<std::string>(m.end() - 3, m.end()),
        ElementsAre("--volume=/dev/shm/lazaret-0/0123456789ab:/run/lazaret/certs:ro,z",
                    "--volume=/opt/lazaret/libexec/lazaret-escalate:/run/lazaret/escalate:ro",
                    kInitMount));
    ASSERT_TRUE(plan->sandbox.escalation.has_value());
    EXPECT_EQ(plan->sandbox.escalation->socket_dir, "/rt/escalation/0123456789ab");
    // The sidecar binds the socket directory read-only, and its router
    // relays to the socket in it.
    const std::vector<std::string>& sc = plan->sidecar_argv;
    EXPECT_TRUE(Has(sc, "--volume=/rt/escalation/0123456789ab:/run/lazaret/broker:ro,z"));
    auto image = std::find(sc.begin(), sc.end(), "localhost/lazaret-sidecar:current");
    ASSERT_NE(image, sc.end());
    EXPECT_THAT(
        std::vector<std::string>(image + 1, sc.end()),
        ElementsAre("--runtime-dir=/run/lazaret/router", "--socket=/run/lazaret/router/router.sock",
                    "--escalation-socket=/run/lazaret/broker/escalate.sock"));
    // The sidecar gains no capability for it.
    EXPECT_TRUE(Has(sc, "--cap-drop=all"));
    EXPECT_TRUE(Has(sc, "--cap-add=NET_ADMIN"));
    // The init gets nothing for escalation; the agent can find the client.
    auto sandbox_image = std::find(a.begin(), a.end(), "localhost/lazaret-sandbox:trixie");
    ASSERT_NE(sandbox_image, a.end());
    EXPECT_THAT(std::vector<std::string>(sandbox_image + 1, a.end()),
                ElementsAre("--git-dir=/workspace/.git", "--git-shadow=/run/lazaret/git", "--",
                            "make", "test"));
    ASSERT_FALSE(plan->env.empty());
    EXPECT_EQ(plan->env.back().name, "LAZARET_ESCALATE");
    EXPECT_EQ(plan->env.back().value, "/run/lazaret/escalate");
  }
}

TEST(PlanSessionTest, EscalationOffMeansNoSocketNoMountNoFlag) {
  for (bool rootless : {false, true}) {
    PlanInputs in = EscalationInputs();
    in.rootless = rootless;
    auto plan = PlanSession(in, EscalationProfile(false), RepoGitPlan());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(plan->sandbox.escalation.has_value());
    for (const std::string& a : plan->sandbox_argv) {
      EXPECT_THAT(a, Not(HasSubstr("host-uds")));
      EXPECT_THAT(a, Not(HasSubstr("/run/lazaret/broker")));
      EXPECT_THAT(a, Not(HasSubstr("/run/lazaret/certs")));
      EXPECT_THAT(a, Not(HasSubstr("escalat")));
    }
    for (const std::string& a : plan->sidecar_argv) {
      EXPECT_THAT(a, Not(HasSubstr("/run/lazaret/broker")));
      EXPECT_THAT(a, Not(HasSubstr("escalat")));
    }
    for (const auto& e : plan->env) EXPECT_NE(e.name, "LAZARET_ESCALATE");
  }
}

TEST(PlanSessionTest, EscalationNeedsASocketDirWhoseSocketPathFits) {
  pb::ResolvedProfile none = EscalationProfile(true);
  none.mutable_escalation()->clear_socket_dir();
  auto plan = PlanSession(EscalationInputs(), none, gitshadow::GitShadowPlan{});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("enabled = false"));
  pb::ResolvedProfile deep = EscalationProfile(true);
  deep.mutable_escalation()->set_socket_dir("/" + std::string(90, 's'));
  plan = PlanSession(EscalationInputs(), deep, gitshadow::GitShadowPlan{});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("shorter [escalation] socket_dir"));
  pb::ResolvedProfile colon = EscalationProfile(true);
  colon.mutable_escalation()->set_socket_dir("/rt/a:b");
  EXPECT_FALSE(PlanSession(EscalationInputs(), colon, gitshadow::GitShadowPlan{}).ok());
}

TEST(DryRunTest, ShowsTheEscalationAttachBeforeTheSidecarAndTheRelay) {
  auto plan = PlanSession(EscalationInputs(), EscalationProfile(true), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = DryRunText(*plan, "/rt", [](const std::string&) { return false; });
  const size_t policy = text.find("# egress policy:");
  const size_t attach = text.find(
      "# host escalation: EscalationEndpointService.AttachSession{0123456789ab} on "
      "/rt/brokerd.sock (at most 10 s)");
  const size_t sidecar = text.find("podman run --detach --name=lazaret-0123456789ab-sidecar");
  const size_t sandbox = text.find("podman --runtime-flag=network=host --runtime-flag=pod-init-config=");
  const size_t detach = text.find("# then EscalationEndpointService.DetachSession{0123456789ab}");
  ASSERT_NE(attach, std::string::npos) << text;
  ASSERT_NE(sidecar, std::string::npos) << text;
  ASSERT_NE(sandbox, std::string::npos) << text;
  ASSERT_NE(detach, std::string::npos) << text;
  // The socket directory exists before the sidecar that binds it.
  EXPECT_LT(attach, sidecar);
  EXPECT_LT(sidecar, policy);
  EXPECT_LT(policy, sandbox);
  EXPECT_LT(sandbox, detach);
  EXPECT_THAT(text, Not(HasSubstr("host-uds")));
  EXPECT_THAT(text, HasSubstr("/rt/escalation/0123456789ab -> /run/lazaret/broker in the sidecar"));
  EXPECT_THAT(text, HasSubstr("relays 127.0.0.1:7457"));
  EXPECT_THAT(text,
              HasSubstr("--volume=/opt/lazaret/libexec/lazaret-escalate:/run/lazaret/escalate:ro"));

  auto off = PlanSession(EscalationInputs(), EscalationProfile(false), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(off.ok()) << off.status();
  const std::string off_text = DryRunText(*off, "/rt", [](const std::string&) { return false; });
  EXPECT_THAT(off_text, HasSubstr("# host escalation: disabled for this profile"));
  EXPECT_THAT(off_text, Not(HasSubstr("AttachSession{0123456789ab} on /rt/brokerd.sock")));
  EXPECT_THAT(off_text, Not(HasSubstr("host-uds=open")));
}

// A real endpoint as the broker makes it: the certificate directory it
// names replaces the expected one in the sandbox's command line.
TEST(UseEscalationEndpointTest, TheBrokersCheckedCertificateDirectoryIsWhatIsMounted) {
  test::TempDir tmp("laz-plan-ep");
  const std::string root = tmp.path() + "/escalation";
  const std::string sock_dir = root + "/0123456789ab";
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(sock_dir.c_str(), 0700), 0);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = sock_dir + "/escalate.sock";
  std::memcpy(addr.sun_path, sock.c_str(), sock.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  char tmpl[] = "/dev/shm/laz-plan-ep-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string certs = std::string(tmpl) + "/0123456789ab";
  ASSERT_EQ(mkdir(certs.c_str(), 0700), 0);
  for (const char* f : escalation::kCertificateFiles) {
    std::ofstream(certs + "/" + f) << "x";
    ASSERT_EQ(chmod((certs + "/" + f).c_str(), 0600), 0);
  }
  ::lazaret::broker::v1::Endpoint answer;
  answer.set_session_id("0123456789ab");
  answer.set_socket_dir(sock_dir);
  answer.set_certs_dir(certs);
  auto endpoint = escalation::CheckEndpoint(answer, "0123456789ab", sock_dir, geteuid());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();

  pb::ResolvedProfile profile = EscalationProfile(true);
  profile.mutable_escalation()->set_socket_dir(root);
  auto plan = PlanSession(EscalationInputs(), profile, gitshadow::GitShadowPlan{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(
      Has(plan->sandbox_argv, absl::StrCat("--volume=", kCerts, ":/run/lazaret/certs:ro,z")));
  ASSERT_TRUE(UseEscalationEndpoint(*endpoint, &*plan).ok());
  EXPECT_TRUE(
      Has(plan->sandbox_argv, absl::StrCat("--volume=", certs, ":/run/lazaret/certs:ro,z")));
  EXPECT_FALSE(
      Has(plan->sandbox_argv, absl::StrCat("--volume=", kCerts, ":/run/lazaret/certs:ro,z")));
  EXPECT_FALSE(
      Has(plan->sandbox_argv, absl::StrCat("--volume=", sock_dir, ":/run/lazaret/broker:ro,z")));
  EXPECT_TRUE(
      Has(plan->sidecar_argv, absl::StrCat("--volume=", sock_dir, ":/run/lazaret/broker:ro,z")));

  // A plan without escalation, or for another socket directory, takes none.
  auto off = PlanSession(EscalationInputs(), EscalationProfile(false), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(UseEscalationEndpoint(*endpoint, &*off).ok());
  auto other = PlanSession(EscalationInputs(), EscalationProfile(true), gitshadow::GitShadowPlan{});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(UseEscalationEndpoint(*endpoint, &*other).ok());
  (void)!system((std::string("rm -rf ") + tmpl).c_str());
}

}  // namespace
}  // namespace lazaret::cli::session
