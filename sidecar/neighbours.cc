#include "sidecar/neighbours.h"

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

namespace lazaret::netrouter {
namespace {

constexpr uint16_t kUsableStates =
    NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;

struct Neighbour {
  uint16_t state = 0;
  std::string lladdr;
};

const rtattr* NeighAttr(const nlmsghdr* h, int type) {
  int len = static_cast<int>(h->nlmsg_len) - NLMSG_LENGTH(sizeof(ndmsg));
  const auto* nd = static_cast<const ndmsg*>(NLMSG_DATA(h));
  for (auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(const_cast<ndmsg*>(nd)) +
                                           NLMSG_ALIGN(sizeof(ndmsg)));
       RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == type) return a;
  }
  return nullptr;
}

// The kernel's entry for the gateway; state 0 when there is none.
absl::StatusOr<Neighbour> GetNeighbour(RtnlSocket& rtnl, const Gateway& g) {
  ndmsg nd{};
  nd.ndm_family = static_cast<uint8_t>(g.family);
  nd.ndm_ifindex = g.ifindex;
  NlRequest req(RTM_GETNEIGH, NLM_F_REQUEST);
  req.Header(&nd, sizeof(nd)).Attr(NDA_DST, g.address.data(), g.family == AF_INET ? 4 : 16);
  int error = 0;
  LAZ_ASSIGN_OR_RETURN(std::string reply, rtnl.Ask(req, &error));
  if (error == ENOENT) return Neighbour{};
  if (error != 0) {
    return ErrnoStatus(absl::StrCat("reading the neighbour entry of ", g.ToString()), error);
  }
  const auto* h = reinterpret_cast<const nlmsghdr*>(reply.data());
  Neighbour n;
  n.state = static_cast<const ndmsg*>(NLMSG_DATA(h))->ndm_state;
  if (const rtattr* ll = NeighAttr(h, NDA_LLADDR); ll != nullptr) {
    n.lladdr.assign(static_cast<const char*>(RTA_DATA(ll)), RTA_PAYLOAD(ll));
  }
  return n;
}

absl::Status RunOne(RtnlSocket& rtnl, const NlRequest& req) {
  if (!req.ok()) return absl::ResourceExhaustedError("building a neighbour request");
  NlBatch batch;
  batch.Add(req);
  return rtnl.Run(batch);
}

struct Link {
  int ifindex;
  bool loopback;
};

absl::StatusOr<std::vector<Link>> Links(RtnlSocket& rtnl) {
  std::vector<Link> links;
  ifinfomsg ifi{};
  NlRequest req(RTM_GETLINK, NLM_F_REQUEST);
  req.Header(&ifi, sizeof(ifi));
  LAZ_RETURN_IF_ERROR(rtnl.Dump(req, [&](const nlmsghdr* h) {
    if (h->nlmsg_type == RTM_NEWLINK) {
      const auto* i = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
      links.push_back({i->ifi_index, (i->ifi_flags & IFF_LOOPBACK) != 0});
    }
    return absl::OkStatus();
  }));
  return links;
}

// mcast/ucast/app probes (and multicast reprobes) 0 for one link and family.
absl::Status NoProbes(RtnlSocket& rtnl, int family, int ifindex) {
  ndtmsg nt{};
  nt.ndtm_family = static_cast<uint8_t>(family);
  const std::string name = family == AF_INET ? "arp_cache" : "ndisc_cache";
  NlRequest req(RTM_SETNEIGHTBL, NLM_F_REQUEST);
  req.Header(&nt, sizeof(nt))
      .Attr(NDTA_NAME, name.c_str(), name.size() + 1)
      .NestStart(NDTA_PARMS)
      .U32(NDTPA_IFINDEX, static_cast<uint32_t>(ifindex))
      .U32(NDTPA_MCAST_PROBES, 0)
      .U32(NDTPA_UCAST_PROBES, 0)
      .U32(NDTPA_APP_PROBES, 0)
      .U32(NDTPA_MCAST_REPROBES, 0)
      .NestEnd();
  absl::Status s = RunOne(rtnl, req);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("turning off ", name, " probes of link ", ifindex,
                                               ": ", s.message()));
  }
  return absl::OkStatus();
}

// Removes every entry that is neither PERMANENT nor NOARP on a
// non-loopback link: whatever was learned before the probes went to 0.
absl::Status FlushDynamic(RtnlSocket& rtnl, const std::vector<Link>& links) {
  NlBatch batch;
  ndmsg dump{};
  NlRequest req(RTM_GETNEIGH, NLM_F_REQUEST);
  req.Header(&dump, sizeof(dump));
  LAZ_RETURN_IF_ERROR(rtnl.Dump(req, [&](const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWNEIGH) return absl::OkStatus();
    const auto* nd = static_cast<const ndmsg*>(NLMSG_DATA(h));
    if ((nd->ndm_state & (NUD_PERMANENT | NUD_NOARP)) != 0) return absl::OkStatus();
    if ((nd->ndm_flags & NTF_PROXY) != 0) return absl::OkStatus();
    for (const Link& l : links) {
      if (l.ifindex == nd->ndm_ifindex && l.loopback) return absl::OkStatus();
    }
    const rtattr* dst = NeighAttr(h, NDA_DST);
    if (dst == nullptr) return absl::OkStatus();
    ndmsg del{};
    del.ndm_family = nd->ndm_family;
    del.ndm_ifindex = nd->ndm_ifindex;
    NlRequest d(RTM_DELNEIGH, NLM_F_REQUEST);
    d.Header(&del, sizeof(del)).Attr(NDA_DST, RTA_DATA(dst), RTA_PAYLOAD(dst));
    batch.Add(d);
    return absl::OkStatus();
  }));
  if (batch.empty()) return absl::OkStatus();
  RtnlSocket::BatchError error;
  absl::Status s = rtnl.Run(batch, &error);
  // An entry that expired in between is gone as wanted.
  if (!s.ok() && error.error != ENOENT) return s;
  return absl::OkStatus();
}

}  // namespace

absl::Status PinGateway(RtnlSocket& rtnl, const Gateway& g, bool resolve,
                        std::chrono::milliseconds timeout) {
  const int alen = g.family == AF_INET ? 4 : 16;
  LAZ_ASSIGN_OR_RETURN(Neighbour n, GetNeighbour(rtnl, g));
  if ((n.state & kUsableStates) == 0 || n.lladdr.empty()) {
    if (resolve) {
      // NTF_USE: the kernel starts resolution as if a packet were queued;
      // no socket and no route lookup, so the closed policy is no obstacle.
      ndmsg nd{};
      nd.ndm_family = static_cast<uint8_t>(g.family);
      nd.ndm_ifindex = g.ifindex;
      nd.ndm_flags = NTF_USE;
      NlRequest use(RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_CREATE);
      use.Header(&nd, sizeof(nd)).Attr(NDA_DST, g.address.data(), alen);
      LAZ_RETURN_IF_ERROR(RunOne(rtnl, use));
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      LAZ_ASSIGN_OR_RETURN(n, GetNeighbour(rtnl, g));
      if ((n.state & kUsableStates) != 0 && !n.lladdr.empty()) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("the gateway ", g.ToString(),
                         " did not answer neighbour resolution within ", timeout.count(), " ms"));
      }
      usleep(20'000);
    }
  }
  if ((n.state & NUD_PERMANENT) != 0) return absl::OkStatus();
  ndmsg nd{};
  nd.ndm_family = static_cast<uint8_t>(g.family);
  nd.ndm_ifindex = g.ifindex;
  nd.ndm_state = NUD_PERMANENT;
  NlRequest pin(RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE);
  pin.Header(&nd, sizeof(nd))
      .Attr(NDA_DST, g.address.data(), alen)
      .Attr(NDA_LLADDR, n.lladdr.data(), n.lladdr.size());
  absl::Status s = RunOne(rtnl, pin);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("pinning the gateway ", g.ToString(), ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status EnforceNeighbourDiscipline(RtnlSocket& rtnl, std::chrono::milliseconds timeout) {
  LAZ_ASSIGN_OR_RETURN(std::vector<Gateway> gateways, DefaultGateways(rtnl));
  for (const Gateway& g : gateways) {
    LAZ_RETURN_IF_ERROR(PinGateway(rtnl, g, /*resolve=*/true, timeout));
    LAZ_LOG_INFO << "gateway " << g.ToString() << " pinned (permanent neighbour entry)";
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<Link> links, Links(rtnl));
  for (const Link& l : links) {
    if (l.loopback) continue;
    LAZ_RETURN_IF_ERROR(NoProbes(rtnl, AF_INET, l.ifindex));
    LAZ_RETURN_IF_ERROR(NoProbes(rtnl, AF_INET6, l.ifindex));
  }
  return FlushDynamic(rtnl, links);
}

absl::StatusOr<std::unique_ptr<GatewayWatcher>> GatewayWatcher::Start() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return ErrnoStatus("opening a route monitor socket", errno);
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus("subscribing to route changes", e);
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus("eventfd", e);
  }
  absl::StatusOr<std::unique_ptr<RtnlSocket>> rtnl = RtnlSocket::Open();
  if (!rtnl.ok()) {
    close(fd);
    close(wake);
    return rtnl.status();
  }
  auto w = std::unique_ptr<GatewayWatcher>(new GatewayWatcher(fd, wake, *std::move(rtnl)));
  w->thread_ = std::thread([raw = w.get()] { raw->Loop(); });
  return w;
}

GatewayWatcher::~GatewayWatcher() {
  uint64_t one = 1;
  (void)!write(wake_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(fd_);
  close(wake_);
}

void GatewayWatcher::Loop() {
  std::vector<char> buf(1 << 16);
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS) {
        LAZ_LOG_WARNING << "route monitor overran; checking every default route's gateway";
      } else {
        continue;
      }
    }
    bool default_route = n < 0;
    int len = static_cast<int>(n > 0 ? n : 0);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != RTM_NEWROUTE) continue;
      const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
      if (r->rtm_dst_len == 0 && r->rtm_table == RT_TABLE_MAIN) default_route = true;
    }
    if (!default_route) continue;
    absl::StatusOr<std::vector<Gateway>> gateways = DefaultGateways(*rtnl_);
    if (!gateways.ok()) {
      LAZ_LOG_ERROR << "reading the default routes: " << gateways.status().message();
      continue;
    }
    for (const Gateway& g : *gateways) {
      absl::Status s = PinGateway(*rtnl_, g, /*resolve=*/false, kGatewayResolveTimeout);
      if (!s.ok()) {
        LAZ_LOG_ERROR << "a default route via " << g.ToString()
                      << " appeared but its gateway cannot be pinned: " << s.message();
      } else {
        ++pinned_;
      }
    }
  }
}

}  // namespace lazaret::netrouter
