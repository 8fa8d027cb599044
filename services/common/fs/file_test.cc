#include "services/common/fs/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::fs {
namespace {

using FileTest = ScratchTest;

TEST_F(FileTest, ReadsARegularFileWithinTheBound) {
  Write("f", "hello");
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  auto got = ReadRegularFileAt(*d, "f", 5);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "hello");
  EXPECT_EQ(ReadRegularFileAt(*d, "f", 4).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadRegularFile(P("f"), 100).value_or(""), "hello");
}

TEST_F(FileTest, NeverFollowsASymlinkOrOpensAFifo) {
  Write("secret", "secret");
  ASSERT_EQ(symlink(P("secret").c_str(), P("link").c_str()), 0);
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(ReadRegularFileAt(*d, "link", 100).ok());
  // Opening the FIFO for reading would block this test forever.
  auto fifo = ReadRegularFileAt(*d, "fifo", 100);
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(fifo.status().message().find("FIFO"), std::string::npos);
  EXPECT_FALSE(ReadRegularFileAt(*d, "../x", 100).ok());
}

TEST_F(FileTest, ReadsAnOwnFileTheAgentMadeUnreadable) {
  Write("f", "x");
  ASSERT_EQ(chmod(P("f").c_str(), 0), 0);
  // Root would read a mode-000 file anyway: as root, the reading runs in a
  // child that owns the file and has become an ordinary uid.
  const uid_t user = geteuid() == 0 ? 65534 : geteuid();
  ASSERT_EQ(chown(base_.c_str(), user, user), 0);
  ASSERT_EQ(chown(P("f").c_str(), user, user), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(user) != 0 || setuid(user) != 0)) _exit(2);
    auto d = DirFd::Open(base_);
    if (!d.ok()) _exit(3);
    _exit(ReadRegularFileAt(*d, "f", 10).value_or("") == "x" ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(FileTest, HostFilesAreReadThroughSymlinksButOnlyWhenRegular) {
  Write("lib.so.1.2", "elf");
  ASSERT_EQ(symlink(P("lib.so.1.2").c_str(), P("lib.so.1").c_str()), 0);
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
  EXPECT_EQ(ReadHostFile(P("lib.so.1"), 100).value_or(""), "elf");
  EXPECT_EQ(ReadHostFile(P("fifo"), 100).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadHostFile(base_, 100).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadHostFile(P("lib.so.1"), 2).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::IsNotFound(ReadHostFile(P("missing"), 100).status()));
}

TEST_F(FileTest, AtomicWriteReplacesAndSetsTheMode) {
  Write("f", "old");
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteFileAtomicAt(*d, "f", "new", 0600).ok());
  EXPECT_EQ(Slurp("f"), "new");
  struct stat st {};
  ASSERT_EQ(stat(P("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(WriteFileAtomic(P("g"), "g", 0644).ok());
  EXPECT_EQ(Slurp("g"), "g");
}

TEST_F(FileTest, AtomicWriteReplacesASymlinkInsteadOfWritingThroughIt) {
  Write("target", "keep");
  ASSERT_EQ(symlink(P("target").c_str(), P("f").c_str()), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteFileAtomicAt(*d, "f", "new").ok());
  EXPECT_EQ(Slurp("target"), "keep");
  struct stat st {};
  ASSERT_EQ(lstat(P("f").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(FileTest, AtomicWriteNeverFollowsAPlantedTemporaryName) {
  Write("target", "keep");
  ASSERT_EQ(symlink(P("target").c_str(), P(TemporaryNameFor("f")).c_str()), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteFileAtomicAt(*d, "f", "new").ok());
  EXPECT_EQ(Slurp("target"), "keep");
  EXPECT_EQ(Slurp("f"), "new");
}

TEST_F(FileTest, NewFileIsCreatedWithExactlyTheModeAndNeverReplacesAnything) {
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  const mode_t old_umask = umask(077);
  ASSERT_TRUE(WriteNewFileAt(*d, "f", "x", 0640).ok());
  umask(old_umask);
  struct stat st {};
  ASSERT_EQ(stat(P("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(WriteNewFileAt(*d, "f", "y", 0600).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Slurp("f"), "x");
  Write("target", "keep");
  ASSERT_EQ(symlink(P("target").c_str(), P("link").c_str()), 0);
  EXPECT_FALSE(WriteNewFileAt(*d, "link", "y", 0600).ok());
  EXPECT_EQ(Slurp("target"), "keep");
}

TEST_F(FileTest, CopyReplacesTheTargetWithTheModeAndOnlyCopiesRegularFiles) {
  Write("src", "contents");
  Write("dst", "old");
  ASSERT_EQ(symlink(P("src").c_str(), P("link").c_str()), 0);
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  auto copied = CopyRegularFileAt(*d, "src", *d, "dst", 100, 0444);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(*copied, 8u);
  EXPECT_EQ(Slurp("dst"), "contents");
  struct stat st {};
  ASSERT_EQ(stat(P("dst").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  EXPECT_FALSE(CopyRegularFileAt(*d, "link", *d, "out", 100).ok());
  // Opening the FIFO for reading would block this test forever.
  EXPECT_EQ(CopyRegularFileAt(*d, "fifo", *d, "out", 100).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::IsNotFound(CopyRegularFileAt(*d, "missing", *d, "out", 100).status()));
  EXPECT_EQ(CopyRegularFileAt(*d, "src", *d, "out", 7).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(Exists("out"));
  EXPECT_FALSE(Exists(TemporaryNameFor("out")));
}

TEST_F(FileTest, ReadLinkAtGivesTheTargetTextOfALinkOrOfAnOPathDescriptor) {
  ASSERT_EQ(symlink("../../etc/passwd", P("link").c_str()), 0);
  Write("f", "x");
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ReadLinkAt(d->get(), "link", "link").value_or(""), "../../etc/passwd");
  UniqueFd path(openat(d->get(), "link", O_PATH | O_NOFOLLOW | O_CLOEXEC));
  ASSERT_TRUE(path.valid());
  EXPECT_EQ(ReadLinkAt(path.get(), "", "link").value_or(""), "../../etc/passwd");
  absl::StatusOr<std::string> not_link = ReadLinkAt(d->get(), "f", "f");
  EXPECT_FALSE(not_link.ok());
  EXPECT_NE(not_link.status().message().find("reading the symlink f"), std::string::npos);
}

TEST_F(FileTest, WriteAllWritesEverything) {
  const std::string big(1 << 20, 'x');
  const int fd = open(P("big").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(WriteAll(fd, big).ok());
  close(fd);
  EXPECT_EQ(Slurp("big").size(), big.size());
}

TEST_F(FileTest, FingerprintChangesWithAWriteAndIsNulloptForNonFiles) {
  Write("f", "a");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  const auto before = RegularFileFingerprint(*d, "f");
  ASSERT_TRUE(before.has_value());
  Write("f", "bb");
  EXPECT_NE(RegularFileFingerprint(*d, "f"), before);
  EXPECT_FALSE(RegularFileFingerprint(*d, "d").has_value());
  EXPECT_FALSE(RegularFileFingerprint(*d, "missing").has_value());
}

TEST(FileTypeNameTest, NamesEachKindOfFile) {
  EXPECT_STREQ(FileTypeName(S_IFDIR | 0755), "directory");
  EXPECT_STREQ(FileTypeName(S_IFLNK | 0777), "symlink");
  EXPECT_STREQ(FileTypeName(S_IFIFO | 0644), "FIFO");
  EXPECT_STREQ(FileTypeName(S_IFSOCK | 0755), "socket");
  EXPECT_STREQ(FileTypeName(S_IFCHR | 0600), "character device");
  EXPECT_STREQ(FileTypeName(S_IFBLK | 0600), "block device");
}

}  // namespace
}  // namespace lazaret::fs
