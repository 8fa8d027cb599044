#include "services/netpolicyd/held_names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace na = ::lazaret::netapproval::v1;

pb::LogEntry Entry(pb::LogKind kind, const std::string& name, const std::string& query_type,
                   const std::vector<std::string>& addresses, const std::string& detail) {
  pb::LogEntry e;
  e.set_kind(kind);
  e.set_name(name);
  e.set_query_type(query_type);
  for (const std::string& a : addresses) e.add_addresses(a);
  e.set_detail(detail);
  return e;
}

// Who decided, for the log: "lazaret approve on /dev/pts/3 (pid 412)".
std::string ApproverText(const lazaret::approver::v1::Approver& a) {
  if (a.name().empty() && a.tty().empty()) return "";
  std::string text = a.name().empty() ? "an approver" : a.name();
  if (!a.tty().empty()) absl::StrAppend(&text, " on ", a.tty());
  if (a.pid() > 0) absl::StrAppend(&text, " (pid ", a.pid(), ")");
  return text;
}

HeldNamesOptions WithClock(HeldNamesOptions options) {
  if (!options.now) options.now = [] { return std::chrono::steady_clock::now(); };
  return options;
}

// The decision as one stable word for `net log --json` readers.
std::string DecisionWord(const absl::StatusOr<na::AskResponse>& response, bool allowed) {
  if (!response.ok()) return "error";
  switch (response->outcome()) {
    case na::AskResponse::OUTCOME_ONCE:
      return "once";
    case na::AskResponse::OUTCOME_SESSION:
      return allowed ? "session" : "error";
    case na::AskResponse::OUTCOME_PROFILE:
      return allowed ? "profile" : "error";
    case na::AskResponse::OUTCOME_DENIED:
      return "denied";
    case na::AskResponse::OUTCOME_EXPIRED:
      return "expired";
    case na::AskResponse::OUTCOME_NO_APPROVER:
      return "no-approver";
    case na::AskResponse::OUTCOME_SESSION_ENDED:
      return "session-ended";
    default:
      return "error";
  }
}

}  // namespace

std::atomic<int> HeldNames::askers_{0};

HeldNames::HeldNames(std::string session_id, HeldNamesHost* host,
                     std::shared_ptr<ApprovalClient> client, HeldNamesOptions options)
    : session_id_(std::move(session_id)),
      host_(host),
      client_(std::move(client)),
      options_(WithClock(std::move(options))),
      tokens_(options_.burst),
      refilled_(options_.now()) {}

HeldNames::~HeldNames() { Stop(); }

bool HeldNames::TakeToken() {
  const auto now = Now();
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  tokens_ = std::min(options_.burst, tokens_ + std::max(0.0, elapsed) * options_.names_per_second);
  refilled_ = now;
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

void HeldNames::Refuse(Waiter& waiter, const std::string& why) {
  if (!why.empty()) {
    host_->Log(Entry(pb::LOG_KIND_NAME_REFUSED, dns::NameText(waiter.query.question.name),
                     dns::TypeName(waiter.query.question.qtype), {}, why));
  }
  waiter.responder->Answer(dns::BuildAnswer(waiter.query, dns::Rcode::kRefused, {}, waiter.udp));
}

void HeldNames::Hold(const std::string& name, const dns::Query& query, bool udp,
                     std::unique_ptr<DnsResponder> responder, AskSettings settings) {
  ReapThreads();
  Waiter waiter{query, udp, std::move(responder)};
  std::string refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(name);
    if (stopping_) {
      refused = "the session is detaching: refused";
    } else if (it != pending_.end()) {
      PendingName& pending = *it->second;
      if (pending.waiters.size() >= options_.max_waiters) {
        refused = "too many queries wait for this name: refused";
      } else {
        // Retransmissions and the other type join the one question.
        if (pending.hold_ms > 0) waiter.responder->Hold(pending.hold_ms);
        pending.waiters.push_back(std::move(waiter));
        return;
      }
    } else if (denied_.contains(name)) {
      refused = "denied earlier in this session";
    } else if (auto r = recent_.find(name); r != recent_.end() && r->second > Now()) {
      refused = "refused a moment ago (no decision): refused again without asking";
    } else if (pending_.size() >= options_.max_pending) {
      refused = absl::StrCat("too many names wait for an approver (", options_.max_pending,
                             " at most): refused");
    } else if (!TakeToken()) {
      refused = "too many new names asked for (rate limit): refused";
    } else if (askers_.fetch_add(1) >= kMaxAskers) {
      askers_.fetch_sub(1);
      refused = "lazaret-netpolicyd asks about too many names at once: refused";
    } else {
      auto pending = std::make_shared<PendingName>();
      pending->name = name;
      pending->waiters.push_back(std::move(waiter));
      pending_[name] = pending;
      const uint64_t serial = ++next_serial_;
      threads_[serial] =
          std::thread([this, pending, settings, serial] { Ask(pending, settings, serial); });
      return;
    }
  }
  Refuse(waiter, refused);
}

void HeldNames::Ask(std::shared_ptr<PendingName> pending, AskSettings settings, uint64_t serial) {
  dns::Question question;
  {
    std::lock_guard<std::mutex> lock(mu_);
    question = pending->waiters.front().query.question;
  }
  const std::string& name = pending->name;
  ResolvedName resolved = host_->Resolve(question);
  std::vector<std::string> addresses;
  std::string first_refusal;
  bool any_allowed = false;
  for (const auto& a : resolved.addresses) {
    addresses.push_back(a.address());
    if (a.allowed()) {
      any_allowed = true;
    } else if (first_refusal.empty()) {
      first_refusal = a.rule_text();
    }
  }
  auto refuse = [](const Waiter& w) {
    return dns::BuildAnswer(w.query, dns::Rcode::kRefused, {}, w.udp);
  };
  if (!any_allowed) {
    // Nothing an approver could allow: no question is asked.
    host_->Log(Entry(
        addresses.empty() ? pb::LOG_KIND_NAME_REFUSED : pb::LOG_KIND_ADDRESS_DROPPED, name, "",
        addresses,
        addresses.empty()
            ? "not listed; the upstream gave no address: nothing to ask about, refused"
            : absl::StrCat("not listed; every address stays refused (", first_refusal,
                           "): nothing to ask about, refused")));
    RememberRefusal(name);
    Finish(pending, refuse);
  } else {
    const uint32_t timeout = std::max<uint32_t>(settings.timeout_seconds, 1);
    const auto hold = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(timeout) + options_.ask_slack, options_.max_hold);
    na::AskRequest request;
    request.set_session_id(session_id_);
    request.set_name(name);
    request.set_timeout_seconds(timeout);
    request.set_unattended_wait(settings.unattended_wait);
    request.mutable_addresses()->Assign(resolved.addresses.begin(), resolved.addresses.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending->hold_ms = static_cast<uint32_t>(hold.count());
      bool a = false, aaaa = false;
      for (Waiter& w : pending->waiters) {
        w.responder->Hold(pending->hold_ms);
        (w.query.question.qtype == dns::kTypeA ? a : aaaa) = true;
      }
      if (a) request.add_query_types("A");
      if (aaaa) request.add_query_types("AAAA");
    }
    host_->Log(Entry(
        pb::LOG_KIND_NAME_HELD, name, absl::StrJoin(request.query_types(), ","), addresses,
        absl::StrCat("not listed: held, asking the session's approvers (", timeout, " s at most)")));
    absl::StatusOr<na::AskResponse> response =
        client_ == nullptr
            ? absl::UnavailableError("no approval service is configured")
            : client_->Ask(request, std::chrono::system_clock::now() + hold, pending->call);
    bool allowed = false;
    std::string decision;
    if (!response.ok()) {
      decision = absl::StrCat("refused: no decision (", response.status().message(), ")");
    } else {
      switch (response->outcome()) {
        case na::AskResponse::OUTCOME_ONCE:
          allowed = true;
          decision = "allowed once";
          break;
        case na::AskResponse::OUTCOME_SESSION:
        case na::AskResponse::OUTCOME_PROFILE: {
          absl::Status s = host_->AllowName(name);
          allowed = s.ok();
          decision =
              !s.ok() ? absl::StrCat("refused: the allowance was not applied (", s.message(), ")")
              : response->outcome() == na::AskResponse::OUTCOME_PROFILE
                  ? "allowed for this session and written to the profile"
                  : "allowed for this session";
          break;
        }
        case na::AskResponse::OUTCOME_DENIED: {
          {
            std::lock_guard<std::mutex> lock(mu_);
            denied_.insert(name);
          }
          absl::Status s = host_->DenyName(name);
          decision =
              s.ok() ? "denied for this session"
                     : absl::StrCat("denied (the live deny was not applied: ", s.message(), ")");
          break;
        }
        case na::AskResponse::OUTCOME_EXPIRED:
          decision = "nobody answered in time: refused";
          break;
        case na::AskResponse::OUTCOME_NO_APPROVER:
          decision = "no approver attached: refused (ask_unattended = deny)";
          break;
        case na::AskResponse::OUTCOME_SESSION_ENDED:
          decision = "the session ended: refused";
          break;
        default:
          decision = "refused: lazaret-brokerd gave no known outcome";
          break;
      }
      if (!response->resolution().empty()) {
        absl::StrAppend(&decision, " - ", response->resolution());
      }
    }
    pb::LogEntry entry = Entry(pb::LOG_KIND_NAME_DECIDED, name,
                               absl::StrJoin(request.query_types(), ","), addresses, decision);
    entry.set_decision(DecisionWord(response, allowed));
    if (response.ok()) entry.set_approver(ApproverText(response->approver()));
    host_->Log(std::move(entry));
    if (allowed) {
      Finish(pending, [&](const Waiter& w) { return host_->AnswerFrom(w.query, w.udp, resolved); });
    } else {
      RememberRefusal(name);
      Finish(pending, refuse);
    }
  }
  askers_.fetch_sub(1);
  std::lock_guard<std::mutex> lock(mu_);
  finished_threads_.push_back(serial);
  idle_cv_.notify_all();
}

void HeldNames::RememberRefusal(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Now();
  std::erase_if(recent_, [&](const auto& e) { return e.second <= now; });
  // Bounded by the rate limit (a few names a second live a few seconds);
  // the cap is a backstop.
  if (recent_.size() < 1024) recent_[name] = now + options_.recent_refusal;
}

void HeldNames::Finish(const std::shared_ptr<PendingName>& pending,
                       const std::function<std::string(const Waiter&)>& answer) {
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(pending->name);
    if (it != pending_.end() && it->second == pending) pending_.erase(it);
    waiters.swap(pending->waiters);
    ++answering_;
  }
  for (Waiter& w : waiters) w.responder->Answer(answer(w));
  std::lock_guard<std::mutex> lock(mu_);
  --answering_;
  idle_cv_.notify_all();
}

void HeldNames::ReapThreads() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t serial : finished_threads_) {
      auto it = threads_.find(serial);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_threads_.clear();
  }
  for (auto& t : done) t.join();
}

void HeldNames::Stop() {
  std::map<uint64_t, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [name, pending] : pending_) pending->call.Cancel();
    threads.swap(threads_);
    finished_threads_.clear();
  }
  for (auto& [serial, t] : threads) t.join();
}

size_t HeldNames::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

bool HeldNames::WaitIdle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [this] { return pending_.empty() && answering_ == 0; });
}

}  // namespace lazaret::netpolicyd
