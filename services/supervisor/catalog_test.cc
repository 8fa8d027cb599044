// The service catalog (services/common/service_catalog.h) against the
// build: every binary it names is built, and the set the supervisor runs
// is exactly the catalog's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "services/common/capabilities.h"
#include "services/common/service_catalog.h"
#include "services/supervisor/supervisor.h"

namespace lazaret::supervisor {
namespace {

std::string BinDir() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string exe(self, n > 0 ? n : 0);
  return exe.substr(0, exe.rfind('/'));
}

TEST(ServiceCatalogBuildTest, EveryBinaryOfTheCatalogIsInTheBuildsBinDir) {
  for (const ServiceEntry* s : kServiceCatalog) {
    const std::string path = BinDir() + "/" + std::string(s->binary);
    EXPECT_EQ(access(path.c_str(), X_OK), 0) << path << " (service " << s->name << ") is not built";
  }
}

TEST(ServiceCatalogBuildTest, TheDefaultServiceSetIsTheCatalogButTheSupervisor) {
  const std::vector<ManagedService> set = DefaultServiceSet("/libexec");
  ASSERT_EQ(set.size(), kServiceCatalog.size() - 1);
  size_t i = 0;
  for (const ServiceEntry* s : kServiceCatalog) {
    if (s == &kSupervisorService) continue;
    const ManagedService& m = set[i++];
    SCOPED_TRACE(m.name);
    EXPECT_EQ(m.name, s->name);
    EXPECT_EQ(m.binary, "/libexec/" + std::string(s->binary));
    EXPECT_EQ(m.capabilities, caps::Names(s->capabilities));
    // Only sessiond needs what `lazaret up` had, so only it is launched.
    EXPECT_EQ(m.via_launcher, s == &kSessiondService);
    EXPECT_TRUE(m.launcher.empty());
  }
  ASSERT_EQ(set[4].name, "mount-helper");
  EXPECT_EQ(set[4].capabilities, std::vector<std::string>{"SYS_ADMIN"});
}

}  // namespace
}  // namespace lazaret::supervisor
