// Plan inputs shared by the session plan's tests (plan_test.cc,
// plan_escalation_test.cc): a rootful session on /home/dev/proj, plain and
// volume-carrying profiles, a Git Shadow plan of each mount kind, and
// helpers to pick flags out of a command line. Test code only; runs in the
// test process and trusts everything.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_PLAN_TEST_INPUTS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_PLAN_TEST_INPUTS_H_

#include <algorithm>
#include <string>
#include <vector>

#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/session/plan.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session::test_plan {

namespace pb = ::lazaret::config::v1;

inline bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every --volume and --mount argument of `argv`, in order: the complete
// mount list of a container.
inline std::vector<std::string> MountFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const auto& a : argv) {
    if (a.rfind("--volume=", 0) == 0 || a.rfind("--mount=", 0) == 0) out.push_back(a);
  }
  return out;
}

inline constexpr char kInit[] = "/opt/lazaret/libexec/lazaret-sandbox-init";
inline constexpr char kInitMount[] =
    "--volume=/opt/lazaret/libexec/lazaret-sandbox-init:/run/lazaret/bin/lazaret-sandbox-init:ro";

inline PlanInputs Inputs(const std::string& workspace = "/home/dev/proj") {
  PlanInputs in;
  in.session_id = "0123456789ab";
  in.runtime_dir = "/rt";
  in.workspace_dir = workspace;
  in.runsc_path = "/usr/bin/runsc";
  in.runc_path = "/usr/bin/runc";
  in.rootless = false;
  in.sandbox_init_host = kInit;
  in.command = {"make", "test"};
  return in;
}

inline pb::ResolvedProfile PlainProfile() {
  pb::ResolvedProfile p;
  p.set_name("p1");
  p.set_image("localhost/lazaret-sandbox:trixie");
  p.set_profile_dir("/data/p1");
  return p;
}

// A profile with one read-only and one read-write volume (SELinux private)
// and two persistent directories.
inline pb::ResolvedProfile ProfileWithVolumes() {
  pb::ResolvedProfile p = PlainProfile();
  pb::Volume* ro = p.add_volumes();
  ro->set_host("/srv/datasets");
  ro->set_container("/data");
  ro->set_access(pb::MOUNT_ACCESS_READ_ONLY);
  ro->set_selinux(pb::SELINUX_LABEL_SHARED);
  pb::Volume* rw = p.add_volumes();
  rw->set_host("/home/dev/cache");
  rw->set_container("/cache");
  rw->set_access(pb::MOUNT_ACCESS_READ_WRITE);
  rw->set_selinux(pb::SELINUX_LABEL_PRIVATE);
  p.add_persistent_dirs("/root/.cache");
  p.add_persistent_dirs("/opt/tools");
  return p;
}

// The shape of a Git Shadow plan for a repository (gitshadow/plan.h), with
// mounts of each kind it makes.
inline gitshadow::GitShadowPlan RepoGitPlan() {
  gitshadow::GitShadowPlan g;
  g.has_repo = true;
  g.mounts = {TmpfsMount{"/workspace/.git", "0755"},
              BindMount{"/home/dev/proj/.git", "/run/lazaret/git", true, true},
              BindMount{"/data/p1/git/k/session", "/run/lazaret/git-session", false, true},
              BindMount{"/data/p1/git/k/objects", "/workspace/.git/objects", false, true}};
  g.env = {{"GIT_CONFIG_COUNT", "1", false}};
  g.init_args = {"--git-dir=/workspace/.git", "--git-shadow=/run/lazaret/git"};
  return g;
}

}  // namespace lazaret::cli::session::test_plan

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_PLAN_TEST_INPUTS_H_
