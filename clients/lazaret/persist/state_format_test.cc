#include "clients/lazaret/persist/state_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::persist {
namespace {

namespace pb = ::lazaret::mounthelper::v1;
using ::testing::HasSubstr;
using ::testing::Not;

pb::DescribeStateResponse State() {
  pb::DescribeStateResponse s;
  s.set_profile("p1");
  s.set_profile_dir("/d/p1");
  pb::DirectoryState* usr = s.add_directories();
  usr->set_directory("/usr");
  usr->set_changes("/d/p1/usr_changes");
  usr->set_bytes(3 * 1024 * 1024 / 2);
  usr->set_files(340);
  usr->add_changed("bin/hello");
  usr->add_changed("evil\x1b[2Jname");
  usr->set_changed_total(25);
  usr->add_deleted("share/doc");
  usr->set_deleted_total(1);
  usr->set_mounted(true);
  usr->add_sessions("0123456789ab");
  usr->add_sessions("ba9876543210");
  pb::DirectoryState* etc = s.add_directories();
  etc->set_directory("/etc");
  etc->set_changes("/d/p1/etc_changes");
  return s;
}

TEST(HumanBytesTest, BinaryUnits) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{5} << 30), "5.0 GiB");
}

TEST(StateTextTest, EachDirectoryWithSizesSamplesAndSessions) {
  const std::string t = StateText(State());
  EXPECT_THAT(t, HasSubstr("Profile p1 (/d/p1)\n"));
  EXPECT_THAT(t, HasSubstr("  /usr: 1.5 MiB, 340 files changed in /d/p1/usr_changes\n"));
  EXPECT_THAT(t, HasSubstr("    changed (25, first 2): bin/hello evil\\x1b[2Jname\n"));
  EXPECT_THAT(t, HasSubstr("    deleted (1): share/doc\n"));
  EXPECT_THAT(t, HasSubstr("    mounted by sessions 0123456789ab, ba9876543210\n"));
  EXPECT_THAT(t, HasSubstr("  /etc: 0 B, 0 files changed in /d/p1/etc_changes\n"
                           "    no changes: the image's own content\n    not mounted\n"));
  EXPECT_THAT(t, Not(HasSubstr("\x1b")));
}

TEST(StateTextTest, ALimitIsShownLoudlyAndNeverAsNoChanges) {
  pb::DescribeStateResponse s = State();
  s.mutable_directories(1)->set_limit("directories deeper than 4096 levels were not walked\n");
  const std::string t = StateText(s);
  EXPECT_THAT(t, HasSubstr("  /etc: 0 B, 0 files changed in /d/p1/etc_changes\n"
                           "    NOT WALKED IN FULL, the counts are lower bounds: directories "
                           "deeper than 4096 levels were not walked\\n\n"));
  EXPECT_THAT(t, Not(HasSubstr("no changes")));
}

TEST(StateTextTest, UsageAgainstTheCapAndHowItIsHeld) {
  pb::DescribeStateResponse s = State();
  pb::PersistentUsage* u = s.mutable_usage();
  u->set_exists(true);
  u->set_cap_bytes(uint64_t{4} << 30);
  u->set_size_bytes(uint64_t{4} << 30);
  u->set_used_bytes(uint64_t{1288490189});
  u->set_free_bytes(uint64_t{3} << 30);
  u->set_inodes_used(1234);
  u->set_inodes_total(262144);
  u->set_held_by("loop-mounted ext4 image");
  const std::string t = StateText(s);
  EXPECT_THAT(t, HasSubstr("Profile p1 (/d/p1)\n  persistent data: 1.2 GiB used of the 4.0 GiB "
                           "cap (3.0 GiB free, 1,234 of 262,144 inodes), loop-mounted ext4 "
                           "image\n  /usr:"));
  EXPECT_THAT(t, Not(HasSubstr("made for a cap")));
  u->set_cap_bytes(uint64_t{8} << 30);
  EXPECT_THAT(StateText(s), HasSubstr("made for a cap of 4.0 GiB; persistent_cap 8.0 GiB applies "
                                      "when the next session mounts it"));
}

TEST(StateTextTest, NoImageYetOrNoLook) {
  pb::DescribeStateResponse s = State();
  s.mutable_usage()->set_cap_bytes(uint64_t{64} << 20);
  EXPECT_THAT(StateText(s), HasSubstr("  persistent data: none yet (cap 64.0 MiB, preallocated at "
                                      "the profile's first session)\n"));
  s.mutable_usage()->set_exists(true);
  s.mutable_usage()->set_note("the image could not be mounted for a look: busy\x1b");
  EXPECT_THAT(StateText(s), HasSubstr("  persistent data: cap 64.0 MiB; usage unknown: the image "
                                      "could not be mounted for a look: busy\\x1b\n"));
}

TEST(StateTextTest, ALayerFromBeforeTheCapIsNamedWithTheFix) {
  pb::DescribeStateResponse s = State();
  s.mutable_directories(1)->set_uncapped_changes("/d/p1/etc_changes");
  EXPECT_THAT(StateText(s),
              HasSubstr("    A LAYER FROM BEFORE persistent_cap is at /d/p1/etc_changes: never "
                        "mounted again. Copy what you need from it, then `lazaret state reset "
                        "p1` removes it\n"));
}

TEST(StateTextTest, NoPersistentDirectories) {
  pb::DescribeStateResponse s;
  s.set_profile("p2");
  EXPECT_THAT(StateText(s), HasSubstr("no persistent directories"));
}

TEST(StateJsonTest, ProtoFieldNamesAndZeros) {
  absl::StatusOr<std::string> j = StateJson(State());
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_THAT(*j, HasSubstr("\"profile_dir\": \"/d/p1\""));
  EXPECT_THAT(*j, HasSubstr("\"changed_total\": \"25\""));
  EXPECT_THAT(*j, HasSubstr("\"mounted\": false"));
}

TEST(ResetQuestionTest, NamesWhatIsDropped) {
  EXPECT_EQ(ResetQuestion(State(), "/usr"),
            "drop every change the sandbox made to /usr (1.5 MiB, 340 files) of profile p1; the "
            "next session starts from the image's content");
  EXPECT_THAT(ResetQuestion(State(), ""),
              HasSubstr("/usr (1.5 MiB, 340 files), /etc (0 B, 0 files)"));
  EXPECT_THAT(ResetQuestion(State(), "/opt"), HasSubstr("has no persistent directory /opt"));
  pb::DescribeStateResponse s = State();
  s.mutable_usage()->set_exists(true);
  s.mutable_usage()->set_cap_bytes(uint64_t{4} << 30);
  EXPECT_THAT(ResetQuestion(s, ""),
              HasSubstr("of profile p1 and delete its persistent data image (4.0 GiB cap); "));
  EXPECT_THAT(ResetQuestion(s, "/usr"), Not(HasSubstr("delete")));
}

TEST(CleanupTextTest, OneLinePerOverlay) {
  pb::CleanupResponse c;
  pb::OverlayMount* m = c.add_unmounted();
  m->set_profile("p1");
  m->set_directory("/usr");
  m->set_merged("/d/p1/usr_merged");
  EXPECT_EQ(CleanupText(c),
            "unmounted the overlay of /usr of profile p1 (/d/p1/usr_merged; no live session held "
            "it)\n");
}

}  // namespace
}  // namespace lazaret::cli::persist
