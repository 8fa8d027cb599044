#include "services/sessiond/session/listing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::cli::session {
namespace {

using ::testing::HasSubstr;

FoundSession Dir(const std::string& id, bool alive) {
  FoundSession d;
  d.id = id;
  d.path = "/rt/sessions/" + id;
  d.owner_alive = alive;
  d.has_record = true;
  d.record.id = id;
  d.record.profile = "p-" + id.substr(0, 2);
  d.record.workspace = "/ws/" + id.substr(0, 2);
  return d;
}

TEST(ChooseLiveSessionTest, TheOnlyLiveOneOrTheOneAUniquePrefixNames) {
  const std::vector<FoundSession> dirs = {Dir("aa0000000001", true), Dir("ab0000000002", false)};
  EXPECT_EQ(*ChooseLiveSession(dirs, ""), "aa0000000001");
  EXPECT_EQ(*ChooseLiveSession(dirs, "a"), "aa0000000001");  // the dead one does not count
  EXPECT_EQ(*ChooseLiveSession(dirs, "aa0000000001"), "aa0000000001");
  absl::StatusOr<std::string> dead = ChooseLiveSession(dirs, "ab");
  EXPECT_TRUE(absl::IsNotFound(dead.status()));
  EXPECT_THAT(dead.status().message(), HasSubstr("no live session 'ab' (see: lazaret ps)"));
}

TEST(ChooseLiveSessionTest, NoneOrSeveralIsAnErrorThatListsThem) {
  EXPECT_THAT(ChooseLiveSession({}, "").status().message(), HasSubstr("no live session"));
  const std::vector<FoundSession> dirs = {Dir("aa0000000001", true), Dir("ab0000000002", true)};
  absl::StatusOr<std::string> several = ChooseLiveSession(dirs, "");
  EXPECT_FALSE(several.ok());
  EXPECT_THAT(several.status().message(), HasSubstr("several sessions are live; name one"));
  EXPECT_THAT(several.status().message(), HasSubstr("\n  aa0000000001  profile p-aa  /ws/aa"));
  EXPECT_THAT(several.status().message(), HasSubstr("\n  ab0000000002  profile p-ab  /ws/ab"));
  EXPECT_THAT(ChooseLiveSession(dirs, "a").status().message(),
              HasSubstr("'a' matches several live sessions; give more of the id"));
  EXPECT_EQ(*ChooseLiveSession(dirs, "ab"), "ab0000000002");
}

}  // namespace
}  // namespace lazaret::cli::session
