#include "services/common/service_environment.h"

#include <gtest/gtest.h>

namespace lazaret {
namespace {

TEST(ServiceEnvironmentTest, OnlyNamedVariablesPass) {
  char a[] = "HOME=/home/u", b[] = "LAZARET_CANARY=secret", c[] = "XDG_RUNTIME_DIR=/run/user/1",
       d[] = "LD_PRELOAD=/tmp/x.so", e[] = "LC_MESSAGES=C", f[] = "AWS_SECRET_ACCESS_KEY=k",
       g[] = "PATH=/bin";
  char* envp[] = {a, b, c, d, e, f, g, nullptr};
  EXPECT_EQ(ServiceEnvironment(envp),
            (std::vector<std::string>{"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1",
                                      "LC_MESSAGES=C", "PATH=/bin"}));
}

TEST(ServiceEnvironmentTest, PathGetsADefaultWhenUnset) {
  char a[] = "HOME=/h";
  char* envp[] = {a, nullptr};
  const auto env = ServiceEnvironment(envp);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[1].rfind("PATH=/usr/local/bin:", 0), 0u);
}

}  // namespace
}  // namespace lazaret
