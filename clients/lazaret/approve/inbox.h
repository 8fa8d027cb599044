// The hand-over from a terminal approver's WatchPending reader thread to
// its UI thread: events queue here and a byte on a pipe wakes the UI's
// poll. Runs in the `lazaret` CLI (lazaret approve, the inline prompt of
// lazaret run). The events are the broker's; their text is the sandbox's
// and is shown only through display_text.h.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_INBOX_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_INBOX_H_

#include <unistd.h>

#include <deque>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::cli::approve {

class Inbox {
 public:
  // `wake_fd`: the write end of the UI's nonblocking pipe (not owned).
  explicit Inbox(int wake_fd) : wake_fd_(wake_fd) {}

  void Push(const ::lazaret::approver::v1::PendingEvent& event) {
    {
      std::lock_guard<std::mutex> l(mu_);
      events_.push_back(event);
    }
    Wake();
  }
  // The stream ended with `status`.
  void End(const absl::Status& status) {
    {
      std::lock_guard<std::mutex> l(mu_);
      ended_ = status;
    }
    Wake();
  }
  // Everything so far; `*ended` set when the stream ended since.
  std::deque<::lazaret::approver::v1::PendingEvent> Take(std::optional<absl::Status>* ended) {
    std::lock_guard<std::mutex> l(mu_);
    std::deque<::lazaret::approver::v1::PendingEvent> out;
    out.swap(events_);
    if (ended_.has_value()) {
      *ended = ended_;
      ended_.reset();
    }
    return out;
  }

 private:
  void Wake() {
    const char c = 'e';
    [[maybe_unused]] ssize_t n = write(wake_fd_, &c, 1);
  }

  const int wake_fd_;
  std::mutex mu_;
  std::deque<::lazaret::approver::v1::PendingEvent> events_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_INBOX_H_
