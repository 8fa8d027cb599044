/* The probe's `udp-send` command (see net_probe.c): one datagram with
 * sendto() to any address, multicast and broadcast ones included, with the
 * options that pick an interface past the routing table (IP_MULTICAST_IF,
 * SO_BINDTODEVICE) or allow a broadcast (SO_BROADCAST). Runs inside the
 * sandbox (or, for the tests' own control sends, in the sidecar's
 * namespace); trusts nothing but its argv. It reports what the kernel said
 * to the send; whether anything arrived is for the receivers to say. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/e2e/net_probe.h"

static const char kPayload[] = "lazaret-net-probe-udp-send";

/* Sets IP_MULTICAST_IF / IPV6_MULTICAST_IF from a device name or (IPv4)
 * an address; 0 or an errno. */
static int SetMulticastIf(int fd, int family, const char* dev_or_addr) {
  if (family == AF_INET) {
    struct ip_mreqn m;
    memset(&m, 0, sizeof(m));
    if (inet_pton(AF_INET, dev_or_addr, &m.imr_address) != 1) {
      m.imr_ifindex = (int)if_nametoindex(dev_or_addr);
      if (m.imr_ifindex == 0) return errno;
    }
    return setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof(m)) == 0 ? 0 : errno;
  }
  const unsigned int index = if_nametoindex(dev_or_addr);
  if (index == 0) return errno;
  const int value = (int)index;
  return setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &value, sizeof(value)) == 0 ? 0 : errno;
}

int ProbeUdpSend(const char* host, int port, const struct options* o) {
  struct sockaddr_storage ss;
  socklen_t len;
  ProbeParseAddress(host, port, &ss, &len);
  ProbeApplyUid(o);
  const int fd = ProbeOpenSocket(ss.ss_family, SOCK_DGRAM, o);
  if (fd < 0) return 0;
  const int one = 1;
  if (o->broadcast && setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) != 0) {
    printf("optfail SO_BROADCAST %s\n", ProbeErrName(errno));
    close(fd);
    return 0;
  }
  if (o->mcast_if != NULL) {
    const int e = SetMulticastIf(fd, ss.ss_family, o->mcast_if);
    if (e != 0) {
      printf("optfail %s %s\n", ss.ss_family == AF_INET ? "IP_MULTICAST_IF" : "IPV6_MULTICAST_IF",
             ProbeErrName(e));
      close(fd);
      return 0;
    }
  }
  if (o->hops >= 0) {
    const int v4 = ss.ss_family == AF_INET;
    const int r = v4 ? setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &o->hops, sizeof(o->hops))
                     : setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &o->hops, sizeof(o->hops));
    if (r != 0) {
      printf("optfail %s %s\n", v4 ? "IP_MULTICAST_TTL" : "IPV6_MULTICAST_HOPS",
             ProbeErrName(errno));
      close(fd);
      return 0;
    }
  }
  const int64_t start = ProbeNowNs(CLOCK_MONOTONIC);
  const ssize_t n =
      sendto(fd, kPayload, sizeof(kPayload) - 1, MSG_DONTWAIT, (const struct sockaddr*)&ss, len);
  const int err = n < 0 ? errno : 0;
  const double ms = ProbeMsSince(start);
  if (err == 0) {
    printf("sent %.3f\n", ms);
  } else {
    printf("err %s %.3f\n", ProbeErrName(err), ms);
  }
  close(fd);
  return 0;
}
