// The DNS relay's host side: one RelayDns call per session to the session's
// router, whose queries (from the sandbox, relayed as received) are
// answered by Session::AnswerDns on a small shared worker pool. Runs in
// lazaret-netpolicyd, unprivileged. Bounded: a session has at most
// kMaxInFlight queries being answered; beyond that, and when the pool's
// queue is full, a query gets SERVFAIL at once. A query held for an
// approver leaves that count when the hold is sent (held names have their
// own bounds, held_names.h), so held names never starve the others. The call is re-opened
// (after a pause) when it ends while the session is attached.
#ifndef LAZARET_SERVICES_NETPOLICYD_RELAY_H_
#define LAZARET_SERVICES_NETPOLICYD_RELAY_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "services/netpolicyd/session.h"

namespace lazaret::netpolicyd {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queue);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when the queue is full (the task is not run).
  bool TrySubmit(std::function<void()> task);

 private:
  void Work();
  const size_t max_queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

class DnsRelay {
 public:
  static constexpr int kMaxInFlight = 64;

  // Starts the relay thread; the call opens in the background.
  DnsRelay(std::shared_ptr<Session> session, WorkerPool* pool);
  ~DnsRelay();  // Stop()
  DnsRelay(const DnsRelay&) = delete;
  DnsRelay& operator=(const DnsRelay&) = delete;

  // Waits until a RelayDns call is open. The router confirms that it took
  // the call by sending the call's initial metadata; a router that sends
  // none before its first query is waited for at most kUnconfirmedWait
  // after the call went out. False when no call opened within `timeout`.
  bool WaitOpen(std::chrono::milliseconds timeout);
  static constexpr std::chrono::milliseconds kUnconfirmedWait{100};
  // Ends the call and the thread; answers still being computed are dropped.
  void Stop();

 private:
  // What outlives a call: answers computed on the pool write through it.
  struct Stream {
    std::mutex mu;
    grpc::ClientReaderWriter<lazaret::netrouter::v1::DnsAnswer, lazaret::netrouter::v1::DnsQuery>*
        call ABSL_GUARDED_BY(mu) = nullptr;
    std::atomic<int> in_flight{0};
    // An answer, or (empty message, hold_ms > 0) a hold.
    void Write(uint64_t id, const std::string& message, uint32_t hold_ms = 0);
  };
  class Responder;
  void Run();
  void Serve(const std::shared_ptr<Stream>& stream, const lazaret::netrouter::v1::DnsQuery& query);

  const std::shared_ptr<Session> session_;
  WorkerPool* const pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;       // the call went out
  bool confirmed_ ABSL_GUARDED_BY(mu_) = false;  // the router sent its metadata
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_RELAY_H_
