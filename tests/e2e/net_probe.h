/* Shared between the parts of the network e2e probe (net_probe.c,
 * net_probe_dns.c, net_probe_send.c), which runs inside the sandbox as the
 * sandbox's root and trusts nothing but its own argv. See net_probe.c for
 * the commands. */
#ifndef LAZARET_TESTS_E2E_NET_PROBE_H_
#define LAZARET_TESTS_E2E_NET_PROBE_H_

#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

struct options {
  long mark; /* -1: not set */
  const char* bind_dev;
  int dontroute;
  int udp;
  int connect_only; /* --udp: report the connect() alone, send nothing */
  int tcp_dns;
  int timeout_ms;
  long uid; /* -1: not set */
  const char* out;
  int interval_ms;
  const char* server;
  int port;
  int qtype;
  const char* mcast_if; /* udp-send: IP_MULTICAST_IF / IPV6_MULTICAST_IF (device or IPv4) */
  int broadcast;        /* udp-send: SO_BROADCAST */
  int hops;             /* udp-send: multicast TTL / hop limit; -1: the kernel's */
};

/* "EACCES", ... (glibc's own names). */
const char* ProbeErrName(int e);
int64_t ProbeNowNs(clockid_t clock);
/* Milliseconds since a CLOCK_MONOTONIC time in ns. */
double ProbeMsSince(int64_t start_mono);
/* Prints the usage and exits 2. */
void ProbeUsage(void);
long ProbeParseNumber(const char* s, long min, long max);
/* An address literal (IPv6 with an optional %zone) and a port. */
void ProbeParseAddress(const char* host, int port, struct sockaddr_storage* ss, socklen_t* len);
/* Drops to o->uid (if set) or prints "optfail uid ..." and exits. */
void ProbeApplyUid(const struct options* o);
/* A socket with the requested tricks set, or -1 after printing why. */
int ProbeOpenSocket(int family, int type, const struct options* o);
/* 0 when fd is ready for `events` within the timeout, else an errno. */
int ProbeWaitFd(int fd, short events, int timeout_ms);
/* connect() with a deadline: 0 or an errno. */
int ProbeConnect(int fd, const struct sockaddr_storage* ss, socklen_t len, int timeout_ms);

/* net_probe_dns.c */
int ProbeDns(const char* name, const struct options* o);

/* net_probe_send.c */
int ProbeUdpSend(const char* host, int port, const struct options* o);

#endif /* LAZARET_TESTS_E2E_NET_PROBE_H_ */
