// `egress = "ask"`: DNS queries for a name no list allows, held while the
// session's approvers decide. One HeldNames per session, in
// lazaret-netpolicyd (unprivileged). The queries come from the sandbox:
// only a plain name of class IN and type A or AAAA reaches here (the
// session checks), and everything a sandbox can make grow is bounded - at
// most max_pending names waiting per session, a new name at most
// names_per_second (burst `burst`), max_waiters queries per name, and
// kMaxAskers asking threads in the whole process. Past any bound: REFUSED.
//
// For a new name, on its own asker thread (the DNS worker threads never wait
// for a human): the name's A and AAAA are asked upstream (the name leaks to
// the upstream before approval: the price of showing the addresses), each
// address is judged by the session's policy, and when none would be allowed
// the queries are REFUSED without asking anyone. Otherwise every query of the
// name is held at the router and brokerd is asked; the decision ends them
// all. Fail closed: an error anywhere, a cancelled ask, an answer outside
// the known outcomes - REFUSED, and no route is installed before a
// decision allowed the name.
#ifndef LAZARET_SERVICES_NETPOLICYD_HELD_NAMES_H_
#define LAZARET_SERVICES_NETPOLICYD_HELD_NAMES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "services/netpolicyd/approval_client.h"
#include "services/netpolicyd/dns_message.h"

namespace lazaret::netpolicyd {

// Where the answer to one relayed query goes. Answer is called at most
// once; Hold any number of times before it.
class DnsResponder {
 public:
  virtual ~DnsResponder() = default;
  // The answer as sent to the asker (empty: none at all).
  virtual void Answer(const std::string& message) = 0;
  // Not answered yet: the router keeps the query pending for `ms` more.
  virtual void Hold(uint32_t ms) = 0;
};

// A name's A and AAAA as the upstream answered them, and every address
// judged by the session's policy.
struct ResolvedName {
  std::map<uint16_t, absl::StatusOr<dns::Response>> responses;  // by query type
  std::vector<lazaret::approver::v1::NetworkRequest::Address> addresses;
};

// What HeldNames needs of its session.
class HeldNamesHost {
 public:
  virtual ~HeldNamesHost() = default;
  // Asks the upstream for A and AAAA of `question`'s name; judges each
  // address.
  virtual ResolvedName Resolve(const dns::Question& question) = 0;
  // The answer to `query` from `resolved`, through the session's normal
  // path (address filter, name routes installed before it returns).
  virtual std::string AnswerFrom(const dns::Query& query, bool udp,
                                 const ResolvedName& resolved) = 0;
  // A live name allow / deny of exactly `name` (as `lazaret net allow`).
  virtual absl::Status AllowName(const std::string& name) = 0;
  virtual absl::Status DenyName(const std::string& name) = 0;
  // An entry of the session's egress log (time, seq and session filled
  // by the log).
  virtual void Log(lazaret::netpolicy::v1::LogEntry entry) = 0;
};

// The profile's `ask` settings for one name.
struct AskSettings {
  uint32_t timeout_seconds = 60;
  bool unattended_wait = false;  // ask_unattended = "wait"
};

struct HeldNamesOptions {
  size_t max_pending = 8;
  size_t max_waiters = 32;
  double names_per_second = 1.0;
  double burst = 10.0;
  // The router holds a query at most this long (it caps it there too).
  std::chrono::milliseconds max_hold{300000};
  // Beyond the ask timeout, how long brokerd gets to answer EXPIRED.
  std::chrono::milliseconds ask_slack{5000};
  // A name refused without a deny (timeout, nobody attached, an error) is
  // refused unasked this long: glibc tries a REFUSED name again at once
  // (attempts:4), and each try must not be a new prompt.
  std::chrono::milliseconds recent_refusal{3000};
  // Tests move it (the rate limit).
  std::function<std::chrono::steady_clock::time_point()> now;
};

class HeldNames {
 public:
  // Threads asking in the whole process (each blocked on one Ask).
  static constexpr int kMaxAskers = 64;

  // `host` must outlive this object (the session owns it).
  HeldNames(std::string session_id, HeldNamesHost* host, std::shared_ptr<ApprovalClient> client,
            HeldNamesOptions options);
  ~HeldNames();  // Stop()
  HeldNames(const HeldNames&) = delete;
  HeldNames& operator=(const HeldNames&) = delete;

  // One query for `name` (PlainName of the question; class IN, type A or
  // AAAA, not listed, not denied by a pattern). Joins the name's pending
  // ask, or starts one; the responder gets the answer (or a hold first).
  void Hold(const std::string& name, const dns::Query& query, bool udp,
            std::unique_ptr<DnsResponder> responder, AskSettings settings);

  // Every pending ask is cancelled (its queries REFUSED) and its thread
  // joined; later queries are REFUSED. Idempotent.
  void Stop();

  size_t pending() const;
  // Waits until no name is pending; false at the timeout.
  bool WaitIdle(std::chrono::milliseconds timeout) const;

 private:
  struct Waiter {
    dns::Query query;
    bool udp = true;
    std::unique_ptr<DnsResponder> responder;
  };
  struct PendingName {
    std::string name;
    std::vector<Waiter> waiters;
    uint32_t hold_ms = 0;  // 0 until the ask went out
    AskCall call;
  };
  std::chrono::steady_clock::time_point Now() const { return options_.now(); }
  // Takes a token of the rate limit; false when none is left.
  bool TakeToken() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Refuse(Waiter& waiter, const std::string& why);
  // The asker thread of one name.
  void Ask(std::shared_ptr<PendingName> pending, AskSettings settings, uint64_t serial);
  // Ends the name: takes its waiters out of the book (later queries start
  // afresh) and answers each with `answer(waiter)`.
  void Finish(const std::shared_ptr<PendingName>& pending,
              const std::function<std::string(const Waiter&)>& answer);
  void ReapThreads() ABSL_LOCKS_EXCLUDED(mu_);
  void RememberRefusal(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string session_id_;
  HeldNamesHost* const host_;
  const std::shared_ptr<ApprovalClient> client_;
  const HeldNamesOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable idle_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<PendingName>> pending_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> denied_ ABSL_GUARDED_BY(mu_);
  // Names refused without a deny, until when (bounded: see Hold).
  std::map<std::string, std::chrono::steady_clock::time_point> recent_ ABSL_GUARDED_BY(mu_);
  int answering_ ABSL_GUARDED_BY(mu_) = 0;  // Finish calls still answering
  double tokens_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point refilled_ ABSL_GUARDED_BY(mu_);
  uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_threads_ ABSL_GUARDED_BY(mu_);

  static std::atomic<int> askers_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HELD_NAMES_H_
