#include "sidecar/namespace_guard.h"

#include <linux/fib_rules.h>
#include <net/if.h>
// Spelled with libnl3/ so the header is found where Debian installs it
// (check-deps); its own includes resolve through pkg-config's -isystem.
#include <libnl3/netlink/netlink.h>
#include <libnl3/netlink/route/link.h>
#include <libnl3/netlink/route/rule.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "services/common/log.h"

namespace lazaret::netrouter {
namespace {

struct SockDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};

absl::Status NlError(const std::string& what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", nl_geterror(err)));
}

absl::Status AddProhibitRule(nl_sock* sk, int family) {
  rtnl_rule* rule = rtnl_rule_alloc();
  if (rule == nullptr) return absl::ResourceExhaustedError("rtnl_rule_alloc");
  rtnl_rule_set_family(rule, family);
  rtnl_rule_set_prio(rule, kClosedRulePriority);
  rtnl_rule_set_action(rule, FR_ACT_PROHIBIT);
  const int err = rtnl_rule_add(sk, rule, NLM_F_CREATE);
  rtnl_rule_put(rule);
  // An identical rule already there is as closed as a new one.
  if (err < 0 && err != -NLE_EXIST) {
    return NlError(
        family == AF_INET ? "adding the IPv4 prohibit rule" : "adding the IPv6 prohibit rule", err);
  }
  return absl::OkStatus();
}

// Every link but loopback down: no route is left that could carry a packet
// even if a rule were missing (IPv6 disabled in the namespace, say).
absl::Status LinksDown(nl_sock* sk) {
  nl_cache* cache = nullptr;
  if (int err = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache); err < 0) {
    return NlError("listing links", err);
  }
  absl::Status status;
  for (nl_object* o = nl_cache_get_first(cache); o != nullptr; o = nl_cache_get_next(o)) {
    rtnl_link* link = reinterpret_cast<rtnl_link*>(o);
    if ((rtnl_link_get_flags(link) & IFF_LOOPBACK) != 0) continue;
    rtnl_link* change = rtnl_link_alloc();
    rtnl_link_unset_flags(change, IFF_UP);
    if (int err = rtnl_link_change(sk, link, change, 0); err < 0) {
      status.Update(NlError(absl::StrCat("setting ", rtnl_link_get_name(link), " down"), err));
    }
    rtnl_link_put(change);
  }
  nl_cache_free(cache);
  return status;
}

}  // namespace

absl::Status CloseNamespace() {
  std::unique_ptr<nl_sock, SockDeleter> sk(nl_socket_alloc());
  if (sk == nullptr) return absl::ResourceExhaustedError("nl_socket_alloc");
  if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0) {
    return NlError("connecting to rtnetlink", err);
  }
  absl::Status status = AddProhibitRule(sk.get(), AF_INET);
  status.Update(AddProhibitRule(sk.get(), AF_INET6));
  status.Update(LinksDown(sk.get()));
  return status;
}

absl::StatusOr<uint32_t> NamespaceGuard::Acquire(const std::string& holder) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {
    return absl::FailedPreconditionError(
        "the session's network is closed for good (every hold ended); the session is over");
  }
  ++holds_;
  LAZ_LOG_INFO << "hold by " << holder << " (" << holds_ << " open)";
  return holds_;
}

void NamespaceGuard::Release(const std::string& holder) {
  std::lock_guard<std::mutex> lock(mu_);
  if (holds_ == 0) return;
  --holds_;
  LAZ_LOG_INFO << "hold by " << holder << " ended (" << holds_ << " open)";
  if (holds_ > 0 || closed_) return;
  closed_ = true;
  // Under the lock: no new hold can slip in before the namespace is shut.
  const absl::Status s = close_();
  if (s.ok()) {
    LAZ_LOG_WARNING << "every hold ended (owner and supervisor gone): network namespace closed "
                       "for good (prohibit-all rules, links down)";
  } else {
    LAZ_LOG_ERROR << "every hold ended; closing the network namespace failed in part: "
                  << s.message();
  }
}

bool NamespaceGuard::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace lazaret::netrouter
