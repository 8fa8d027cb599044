#include "services/common/service_catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "services/common/runtime_dir.h"

namespace lazaret {
namespace {

TEST(ServiceCatalogTest, EveryNameSocketAndBinaryIsUnique) {
  std::set<std::string> names, sockets, binaries;
  for (const ServiceEntry* s : kServiceCatalog) {
    EXPECT_TRUE(names.insert(s->name).second) << s->name;
    EXPECT_TRUE(sockets.insert(s->socket).second) << s->socket;
    EXPECT_TRUE(binaries.insert(s->binary).second) << s->binary;
  }
  // A session's own sockets live in its own directories, but a reader of a
  // runtime directory listing must still never mistake one for a service.
  EXPECT_EQ(sockets.count(kEscalationSocketName), 0u);
  EXPECT_EQ(sockets.count(kAttachSocketName), 0u);
}

TEST(ServiceCatalogTest, EverySocketIsAPlainFileNameOfTheService) {
  for (const ServiceEntry* s : kServiceCatalog) {
    SCOPED_TRACE(std::string(s->name));
    const std::string socket = s->socket, binary = s->binary, does = s->does;
    EXPECT_EQ(socket, std::string(s->name) + ".sock");
    EXPECT_EQ(socket.find('/'), std::string::npos);
    EXPECT_EQ(binary.rfind("lazaret-", 0), 0u);
    EXPECT_FALSE(does.empty());
  }
}

TEST(ServiceCatalogTest, SocketPathsComeFromTheCatalog) {
  EXPECT_EQ(ServiceSocketPath("/rt", kSessiondService), "/rt/sessiond.sock");
  EXPECT_EQ(SocketPath("/rt", "mount-helper"), "/rt/mount-helper.sock");
  ASSERT_NE(FindService("brokerd"), nullptr);
  EXPECT_EQ(FindService("brokerd"), &kBrokerdService);
  EXPECT_EQ(FindService("lazaret-brokerd"), nullptr);
  EXPECT_EQ(FindService(""), nullptr);
}

}  // namespace
}  // namespace lazaret
