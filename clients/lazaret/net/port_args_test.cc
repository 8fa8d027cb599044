// `lazaret port` and `lazaret run -p` arguments: the forward syntax, the
// refusal of privileged host ports, an explicit non-loopback address.
#include "clients/lazaret/net/port_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::net {
namespace {

using ::testing::HasSubstr;

TEST(PortArgsTest, SpecsParse) {
  absl::StatusOr<lazaret::common::v1::PortForward> p = ParsePortSpec("3000");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host_address(), "");
  EXPECT_EQ(p->host_port(), 3000u);
  EXPECT_EQ(p->sandbox_port(), 3000u);
  p = ParsePortSpec("8080:3000");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host_port(), 8080u);
  EXPECT_EQ(p->sandbox_port(), 3000u);
  p = ParsePortSpec("127.0.0.1:1455");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host_address(), "127.0.0.1");
  EXPECT_EQ(p->sandbox_port(), 1455u);
  p = ParsePortSpec("[::1]:5173:5173");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host_address(), "::1");
}

TEST(PortArgsTest, PrivilegedAndMalformedRefused) {
  EXPECT_THAT(ParsePortSpec("80").status().message(), HasSubstr("below 1024"));
  EXPECT_THAT(ParsePortSpec("80:3000").status().message(), HasSubstr("below 1024"));
  EXPECT_FALSE(ParsePortSpec("3000:70000").ok());
  EXPECT_FALSE(ParsePortSpec("localhost:3000").ok());
  EXPECT_FALSE(ParsePortSpec("::1:3000").ok());
  EXPECT_FALSE(ParsePortSpec("").ok());
}

TEST(PortArgsTest, ExplicitNonLoopbackIsKeptAsWritten) {
  absl::StatusOr<lazaret::common::v1::PortForward> p = ParsePortSpec("0.0.0.0:8080:3000");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host_address(), "0.0.0.0");
  EXPECT_EQ(FormatPorts({*p}), "0.0.0.0 port 8080 -> sandbox port 3000\n");
}

TEST(PortArgsTest, Commands) {
  absl::StatusOr<PortArgs> a = ParsePortArgs({"0123", "add", "8080:3000"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, PortVerb::kAdd);
  EXPECT_EQ(a->session, "0123");
  EXPECT_EQ(a->port.sandbox_port(), 3000u);
  a = ParsePortArgs({"0123", "rm", "8080"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->verb, PortVerb::kRemove);
  EXPECT_EQ(a->port.host_port(), 8080u);
  a = ParsePortArgs({"0123", "ls"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->verb, PortVerb::kList);
  EXPECT_FALSE(ParsePortArgs({"0123"}).ok());
  EXPECT_FALSE(ParsePortArgs({"0123", "open", "3000"}).ok());
  EXPECT_FALSE(ParsePortArgs({"0123", "rm", "x"}).ok());
  EXPECT_EQ(ParsePortArgs({}).value().verb, PortVerb::kHelp);
}

}  // namespace
}  // namespace lazaret::cli::net
