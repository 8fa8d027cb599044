#include "services/common/profile_paths/profile_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;
using testing::Scratch;
namespace pb = ::lazaret::config::v1;

// A profile as lazaret-configd would return it for the scratch host, with
// one good read-write volume.
pb::ResolvedProfile GoodProfile(const Scratch& s) {
  pb::ResolvedProfile p;
  p.set_name("default");
  p.set_image("localhost/lazaret-sandbox:trixie");
  p.set_data_root(s.Path("home/.local/share/lazaret"));
  p.set_profile_dir(s.Path("home/.local/share/lazaret/default"));
  p.mutable_escalation()->set_socket_dir(s.Path("run/escalation"));
  pb::Volume* v = p.add_volumes();
  v->set_host(s.Dir("home/src"));
  v->set_container("/src");
  v->set_access(pb::MOUNT_ACCESS_READ_WRITE);
  return p;
}

struct ForgedCase {
  const char* name;
  std::function<void(const Scratch&, pb::ResolvedProfile&)> forge;
  const char* refusal;
};

TEST(ProfileCheckTest, AProfileConfigdWouldReturnPasses) {
  Scratch s;
  const HostContext host = s.Host();
  EXPECT_TRUE(CheckResolvedProfileHostPaths(GoodProfile(s), host, s.workspace(), "").ok());
  pb::ResolvedProfile ro_dotfiles = GoodProfile(s);
  s.File("home/dotfiles/lazaret.toml", "");
  s.Dir("home/.config/lazaret");
  s.Symlink(s.Path("home/dotfiles/lazaret.toml"), "home/.config/lazaret/config.toml");
  pb::Volume* v = ro_dotfiles.add_volumes();
  v->set_host(s.Path("home/dotfiles"));
  v->set_container("/dotfiles");
  v->set_access(pb::MOUNT_ACCESS_READ_ONLY);
  EXPECT_TRUE(CheckResolvedProfileHostPaths(ro_dotfiles, host, s.workspace(), "").ok());
}

TEST(ProfileCheckTest, ForgedHostPathsAreRefusedBeforeAnythingIsMounted) {
  // A volume host below the scratch directory, or one used verbatim.
  auto volume = [](const std::string& rel) {
    return [rel](const Scratch& s, pb::ResolvedProfile& p) {
      p.mutable_volumes(0)->set_host(s.Path(rel));
    };
  };
  auto raw = [](const std::string& host) {
    return [host](const Scratch&, pb::ResolvedProfile& p) { p.mutable_volumes(0)->set_host(host); };
  };
  const std::vector<ForgedCase> cases = {
      {"~/.ssh as a volume", volume("home/.ssh"), "(ssh keys)"},
      {"below ~/.ssh",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Dir("home/.ssh/k"));
       },
       "(ssh keys)"},
      {"home, which contains ~/.ssh", volume("home"), "which contains ~/.ssh"},
      {"a symlink component",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         s.Dir("home/src/sub");
         s.Symlink(s.Path("home/src"), "home/link");
         p.mutable_volumes(0)->set_host(s.Path("home/link/sub"));
       },
       "home/link is a symlink"},
      {"a symlink to ~/.ssh as the last component",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         s.Symlink(s.Path("home/.ssh"), "home/keys");
         p.mutable_volumes(0)->set_host(s.Path("home/keys"));
       },
       "home/keys is a symlink"},
      {"a relative path", raw("src"), "is not an absolute path"},
      {"a '..' segment",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Path("home/src/../.ssh"));
       },
       "is not a clean path"},
      {"a trailing slash",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Path("home/src/"));
       },
       "is not a clean path"},
      {"a path that does not exist", volume("home/nowhere"), "home/nowhere does not exist"},
      {"the workspace's .git",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Dir("ws/.git"));
       },
       "the workspace's .git"},
      {"Lazaret's configuration directory",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Dir("home/.config/lazaret"));
       },
       "Lazaret's configuration directory"},
      {"Lazaret's state directory",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Dir("home/.local/state/lazaret"));
       },
       "Lazaret's state directory"},
      {"Lazaret's runtime directory", volume("run"), "Lazaret's runtime directory"},
      {"/proc", raw("/proc/1"), "/proc (host system interface)"},
      {"another profile's data",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_host(s.Dir("home/.local/share/lazaret/other"));
       },
       "inside another profile's data"},
      {"a container path under /workspace",
       [](const Scratch&, pb::ResolvedProfile& p) {
         p.mutable_volumes(0)->set_container("/workspace/.git");
       },
       "is inside /workspace"},
      {"profile_dir elsewhere",
       [](const Scratch& s, pb::ResolvedProfile& p) { p.set_profile_dir(s.Path("home/.ssh")); },
       "is not " /* <data_root>/default */},
      {"data_root ~/.ssh",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.set_data_root(s.Path("home/.ssh"));
         p.set_profile_dir(s.Path("home/.ssh/default"));
       },
       "(ssh keys)"},
      {"data_root through a symlink",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         s.Dir("home/real-data");
         s.Symlink(s.Path("home/real-data"), "home/data");
         p.set_data_root(s.Path("home/data"));
         p.set_profile_dir(s.Path("home/data/default"));
       },
       "home/data is a symlink"},
      {"data_root inside the workspace",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.set_data_root(s.Path("ws/data"));
         p.set_profile_dir(s.Path("ws/data/default"));
       },
       "is inside the workspace"},
      {"a profile name with a slash",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.set_name("a/b");
         p.set_profile_dir(s.Path("home/.local/share/lazaret/a/b"));
       },
       "is not a single path component"},
      {"socket_dir inside the workspace",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         p.mutable_escalation()->set_socket_dir(s.Path("ws/sockets"));
       },
       "escalation.socket_dir"},
      {"a read-write volume holding the user's configuration (symlinked)",
       [](const Scratch& s, pb::ResolvedProfile& p) {
         s.File("home/dotfiles/lazaret.toml", "");
         s.Dir("home/.config/lazaret");
         s.Symlink(s.Path("home/dotfiles/lazaret.toml"), "home/.config/lazaret/config.toml");
         p.mutable_volumes(0)->set_host(s.Path("home/dotfiles"));
       },
       "your configuration file"},
  };
  for (const ForgedCase& c : cases) {
    Scratch s;
    const HostContext host = s.Host();
    pb::ResolvedProfile p = GoodProfile(s);
    c.forge(s, p);
    absl::Status st = CheckResolvedProfileHostPaths(p, host, s.workspace(), "");
    EXPECT_FALSE(st.ok()) << c.name;
    EXPECT_THAT(st.message(), HasSubstr(c.refusal)) << c.name;
    EXPECT_THAT(st.message(), HasSubstr("Nothing was started")) << c.name;
  }
}

TEST(ProfileCheckTest, AConfigFileInsideAReadWriteVolumeIsRefused) {
  Scratch s;
  const HostContext host = s.Host();
  pb::ResolvedProfile p = GoodProfile(s);
  const std::string explicit_config = s.File("home/src/dev.toml", "");
  absl::Status st = CheckResolvedProfileHostPaths(p, host, s.workspace(), explicit_config);
  EXPECT_THAT(st.message(), HasSubstr("the --config file"));
  p.mutable_volumes(0)->set_access(pb::MOUNT_ACCESS_READ_ONLY);
  EXPECT_TRUE(CheckResolvedProfileHostPaths(p, host, s.workspace(), explicit_config).ok());
}

}  // namespace
}  // namespace lazaret::config
