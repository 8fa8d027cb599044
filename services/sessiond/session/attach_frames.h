// The attach protocol over a plain Unix stream socket: the same AttachInput
// and AttachOutput messages as AttachService (protos/lazaret/session/v1/
// session.proto), each one frame of the escalation wire (services/wire/
// frame.h: a 4-byte big-endian length, then the serialized message). A
// session's worker serves it on <session dir>/attach-frames.sock beside its
// gRPC attach.sock; `lazaret run` and `lazaret attach` use it for a
// terminal, where every key and its echo cross it: one syscall each way
// and no RPC machinery between the developer's keys and the sandbox's pty
// (tests/bench/pty_bench measures the difference). AttachService stays for
// scripts (grpcurl) and for stream sessions.
//
// Both ends are processes of the same user (the listener checks the peer's
// uid with SO_PEERCRED; the session directory is 0700). A peer is still
// held to the protocol: a frame over the reader's limit or a message that
// does not parse ends the connection.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_FRAMES_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_FRAMES_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message_lite.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::session {

// The framed socket's name in the session directory (the service
// catalog's).
inline constexpr const auto& kAttachFramesSocketName = ::lazaret::kAttachFramesSocketName;

// The largest frame either side reads: an AttachOutput carries at most the
// pump's read burst, an AttachInput a read of keys or stdin.
inline constexpr size_t kMaxAttachFrame = 4 << 20;

// One connection. Read is called by one thread; Write, TrySend and
// FlushRest by one other at a time; Shutdown from any thread.
class FramedChannel {
 public:
  explicit FramedChannel(int fd) : fd_(fd) {}  // takes ownership
  ~FramedChannel();
  FramedChannel(const FramedChannel&) = delete;
  FramedChannel& operator=(const FramedChannel&) = delete;

  // Blocks for the next message. False at the end of the stream, on an
  // error, or on a frame that is too long or does not parse.
  bool Read(google::protobuf::MessageLite* message);
  // Writes one whole message; false when the connection is gone.
  // Precondition: no frame TrySend began is left (FlushRest).
  bool Write(const google::protobuf::MessageLite& message);
  // Without blocking: sends what the socket takes of the message's frame
  // now. nullopt when it took nothing (full, or gone); otherwise how many
  // bytes are left for FlushRest.
  std::optional<size_t> TrySend(const google::protobuf::MessageLite& message);
  // Blocking: the rest of the frame TrySend began; false when gone.
  bool FlushRest();
  // No more writes: the peer reads the end of the stream.
  void ShutdownWrite();
  // Both directions: a Read blocked here returns false.
  void Shutdown();

 private:
  const int fd_;
  std::string rest_;  // of a frame TrySend began
};

// Connects to a framed attach socket.
absl::StatusOr<std::unique_ptr<FramedChannel>> ConnectFramed(const std::string& path);

// Accepts connections of `uid` on `path` and runs `serve` for each on a
// thread of its own; when `serve` returns, the connection is shut down.
class FramedListener {
 public:
  using Serve = std::function<void(FramedChannel*)>;
  static absl::StatusOr<std::unique_ptr<FramedListener>> Start(const std::string& path, uid_t uid,
                                                               Serve serve);
  // Stops accepting, shuts every live connection down and joins its thread.
  ~FramedListener();
  FramedListener(const FramedListener&) = delete;
  FramedListener& operator=(const FramedListener&) = delete;

 private:
  FramedListener(std::unique_ptr<UnixListener> listener, uid_t uid, Serve serve);
  void AcceptLoop();

  std::unique_ptr<UnixListener> listener_;
  const uid_t uid_;
  const Serve serve_;
  int wake_[2] = {-1, -1};
  std::thread acceptor_;
  struct Connection {
    std::shared_ptr<FramedChannel> channel;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };
  absl::Mutex mu_;
  // Live connections; finished ones are joined at the next accept.
  std::vector<Connection> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_ATTACH_FRAMES_H_
