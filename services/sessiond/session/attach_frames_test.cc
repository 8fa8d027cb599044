#include "services/sessiond/session/attach_frames.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lazaret/session/v1/session.pb.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

std::string TempSocket() {
  char dir[] = "/tmp/lz-frames-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return std::string(dir) + "/" + kAttachFramesSocketName;
}

TEST(AttachFramesTest, MessagesCrossInOrderBothWays) {
  const std::string path = TempSocket();
  absl::StatusOr<std::unique_ptr<FramedListener>> listener =
      FramedListener::Start(path, getuid(), [](FramedChannel* c) {
        sv1::AttachInput in;
        while (c->Read(&in)) {
          sv1::AttachOutput out;
          out.set_terminal(absl::StrCat("echo:", in.stdin()));
          if (!c->Write(out)) return;
        }
      });
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<std::unique_ptr<FramedChannel>> c = ConnectFramed(path);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<std::string> keys = {"a", std::string(1, '\0'), std::string(100000, 'x')};
  for (const std::string& key : keys) {
    sv1::AttachInput in;
    in.set_stdin(key);
    ASSERT_TRUE((*c)->Write(in));
    sv1::AttachOutput out;
    ASSERT_TRUE((*c)->Read(&out));
    EXPECT_EQ(out.terminal(), "echo:" + key);
  }
  // No more input: the server's loop ends and closes, the client reads the end.
  (*c)->ShutdownWrite();
  sv1::AttachOutput out;
  EXPECT_FALSE((*c)->Read(&out));
}

TEST(AttachFramesTest, AFrameOverTheLimitOrNotAMessageEndsTheConnection) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  FramedChannel reader(fds[0]);
  // A length one past the limit: refused before any body is read.
  const uint32_t too_long = kMaxAttachFrame + 1;
  const unsigned char header[4] = {static_cast<unsigned char>(too_long >> 24),
                                   static_cast<unsigned char>(too_long >> 16),
                                   static_cast<unsigned char>(too_long >> 8),
                                   static_cast<unsigned char>(too_long)};
  ASSERT_EQ(write(fds[1], header, 4), 4);
  sv1::AttachInput in;
  EXPECT_FALSE(reader.Read(&in));

  int fds2[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds2), 0);
  FramedChannel reader2(fds2[0]);
  // A frame whose body is not an AttachInput (a truncated varint field).
  const unsigned char bad[] = {0, 0, 0, 2, 0x12, 0xff};
  ASSERT_EQ(write(fds2[1], bad, sizeof(bad)), static_cast<ssize_t>(sizeof(bad)));
  EXPECT_FALSE(reader2.Read(&in));
  close(fds[1]);
  close(fds2[1]);
}

TEST(AttachFramesTest, ATrySendTheSocketTakesOnlyInPartIsFinishedByFlushRestWhole) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const int small = 4096;
  ASSERT_EQ(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  FramedChannel writer(fds[0]);
  FramedChannel reader(fds[1]);
  std::vector<std::string> sent;
  sv1::AttachOutput out;
  // Until the socket is full: every message went whole or in part.
  std::optional<size_t> left;
  for (int i = 0; i < 1000; ++i) {
    out.set_terminal(std::string(100000, static_cast<char>('a' + i % 26)));
    left = writer.TrySend(out);
    if (!left.has_value()) break;
    sent.push_back(out.terminal());
    if (*left > 0) break;
  }
  ASSERT_TRUE(left.has_value() && *left > 0) << "the socket took every message whole";
  // Begun: nothing else may start before the rest.
  EXPECT_FALSE(writer.TrySend(out).has_value());
  std::thread flush([&] {
    EXPECT_TRUE(writer.FlushRest());
    out.set_terminal("last");
    EXPECT_TRUE(writer.Write(out));
  });
  sent.push_back("last");
  for (const std::string& want : sent) {
    sv1::AttachOutput got;
    ASSERT_TRUE(reader.Read(&got));
    EXPECT_EQ(got.terminal(), want);
  }
  flush.join();
}

TEST(AttachFramesTest, ShutdownReleasesABlockedReadAndTheListenerJoinsItsConnections) {
  const std::string path = TempSocket();
  std::atomic<bool> entered{false};
  std::atomic<bool> served{false};
  auto listener = FramedListener::Start(path, getuid(), [&](FramedChannel* c) {
    entered = true;
    sv1::AttachInput in;
    while (c->Read(&in)) {
    }
    served = true;
  });
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<std::unique_ptr<FramedChannel>> c = ConnectFramed(path);
  ASSERT_TRUE(c.ok()) << c.status();
  // A connection the listener has not accepted yet has no handler to join:
  // wait until it runs (connect returns once the kernel queued it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!entered && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(entered) << "the listener never accepted the connection";
  std::thread blocked([&] {
    sv1::AttachOutput out;
    EXPECT_FALSE((*c)->Read(&out));
  });
  (*c)->Shutdown();
  blocked.join();
  // The listener's end shuts its live connections down and joins them.
  listener->reset();
  EXPECT_TRUE(served);
  EXPECT_FALSE(ConnectFramed(path).ok());
}

}  // namespace
}  // namespace lazaret::cli::session
