/* Runs inside the sandbox (bound into it read-only by a test profile
 * volume, as the mode's sandbox root; trusts nothing but its own argv):
 * the network end-to-end tests' probe. Statically linked so it runs in any
 * image, and numeric only (no NSS), so that what it reports is what the
 * kernel answered to exactly one socket call sequence.
 *
 *   net_probe connect HOST PORT [OPTIONS]
 *       -> "ok <ms>" | "err <ERRNO> <ms>" | "optfail <OPTION> <ERRNO>"
 *       TCP connect (or, with --udp, a UDP connect + one datagram that the
 *       peer must echo; with --udp --connect-only the UDP connect() alone:
 *       the route decision, nothing sent). <ms> is the time connect()
 *       (plus the echo) took.
 *   net_probe flood HOST PORT SECONDS [--out FILE] [--interval-ms N] [OPTIONS]
 *       TCP connects in a loop. Writes one line per success
 *       "ok <start_ns> <end_ns>" (CLOCK_REALTIME when connect() was called
 *       and when it completed), one line "err <start_ns> <ERRNO>" for the
 *       first failure after a success (or the very first), and at the end
 *       "done ok=<n> err=<n>". Every line is written with one write(2), so a
 *       reader sees whole lines even if the probe is killed.
 *   net_probe dns NAME [--server ADDR] [--port N] [--type A|AAAA] [--tcp] [OPTIONS]
 *       A hand-built query (RD=1, one question) to ADDR (default: the first
 *       nameserver of /etc/resolv.conf), port 53 by default.
 *       -> "rcode <RCODE> <ms> [ADDRESS|cname:NAME]..." | "err <ERRNO> <ms>"
 *   net_probe udp-send HOST PORT [--mcast-if DEV|ADDR] [--broadcast] [--hops N] [OPTIONS]
 *       -> "sent <ms>" | "err <ERRNO> <ms>" | "optfail <OPTION> <ERRNO>"
 *       One datagram ("lazaret-net-probe-udp-send") with sendto(), no
 *       connect: HOST may be a multicast or broadcast address. --mcast-if
 *       sets IP_MULTICAST_IF (a device or, IPv4 only, an address) or
 *       IPV6_MULTICAST_IF, --broadcast SO_BROADCAST, --hops the multicast
 *       TTL / hop limit. "sent" means the kernel took it, not that it
 *       arrived anywhere.
 *   net_probe listen HOST PORT SECONDS BANNER
 *       -> "listening" | "err <ERRNO>"; then serves: each client gets
 *       BANNER and a newline, and is closed, until SECONDS have passed.
 *       (The inbound port tests' server on the sandbox's loopback.)
 *   net_probe raw
 *       -> "raw-icmp=<r> raw-tcp=<r> raw-ipv6=<r> packet-raw=<r>
 *           packet-dgram=<r> tcp=<r>", <r> "OPEN" or an errno name.
 *
 * OPTIONS (connect, flood, dns, udp-send): --mark N (SO_MARK), --bind-dev DEV
 * (SO_BINDTODEVICE), --dontroute (SO_DONTROUTE), --udp, --connect-only,
 * --timeout-ms N (default 2000), --uid N (setgroups/setgid/setuid to N
 * first; the sandbox's root may). HOST is an IPv4 or IPv6 literal; an IPv6 link-local
 * one takes a zone, "fe80::2%tap0".
 *
 * Exit status: 0 when the line was printed (whatever the network said),
 * 2 on a usage error. */
#define _GNU_SOURCE
#include "tests/e2e/net_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char* ProbeErrName(int e) {
  const char* n = strerrorname_np(e);
  return n != NULL ? n : "EUNKNOWN";
}

int64_t ProbeNowNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double ProbeMsSince(int64_t start_mono) {
  return (double)(ProbeNowNs(CLOCK_MONOTONIC) - start_mono) / 1e6;
}

void ProbeUsage(void) {
  fprintf(
      stderr,
      "usage: net_probe connect HOST PORT [options] | flood HOST PORT SECONDS [options] |\n"
      "       dns NAME [--server ADDR] [--port N] [--type A|AAAA] [--tcp] [options] |\n"
      "       udp-send HOST PORT [--mcast-if DEV|ADDR] [--broadcast] [--hops N] [options] | raw\n");
  exit(2);
}

long ProbeParseNumber(const char* s, long min, long max) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) ProbeUsage();
  return v;
}

/* Parses the options after the positional arguments. */
static void ParseOptions(int argc, char** argv, struct options* o) {
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    const int has_value = i + 1 < argc;
    if (strcmp(a, "--dontroute") == 0) {
      o->dontroute = 1;
    } else if (strcmp(a, "--udp") == 0) {
      o->udp = 1;
    } else if (strcmp(a, "--connect-only") == 0) {
      o->connect_only = 1;
    } else if (strcmp(a, "--tcp") == 0) {
      o->tcp_dns = 1;
    } else if (strcmp(a, "--broadcast") == 0) {
      o->broadcast = 1;
    } else if (!has_value) {
      ProbeUsage();
    } else if (strcmp(a, "--mark") == 0) {
      o->mark = ProbeParseNumber(argv[++i], 0, 0xffffffffL);
    } else if (strcmp(a, "--bind-dev") == 0) {
      o->bind_dev = argv[++i];
    } else if (strcmp(a, "--mcast-if") == 0) {
      o->mcast_if = argv[++i];
    } else if (strcmp(a, "--hops") == 0) {
      o->hops = (int)ProbeParseNumber(argv[++i], 0, 255);
    } else if (strcmp(a, "--timeout-ms") == 0) {
      o->timeout_ms = (int)ProbeParseNumber(argv[++i], 1, 600000);
    } else if (strcmp(a, "--uid") == 0) {
      o->uid = ProbeParseNumber(argv[++i], 0, 0x7fffffffL);
    } else if (strcmp(a, "--out") == 0) {
      o->out = argv[++i];
    } else if (strcmp(a, "--interval-ms") == 0) {
      o->interval_ms = (int)ProbeParseNumber(argv[++i], 0, 60000);
    } else if (strcmp(a, "--server") == 0) {
      o->server = argv[++i];
    } else if (strcmp(a, "--port") == 0) {
      o->port = (int)ProbeParseNumber(argv[++i], 1, 65535);
    } else if (strcmp(a, "--type") == 0) {
      ++i;
      if (strcmp(argv[i], "A") == 0) {
        o->qtype = 1;
      } else if (strcmp(argv[i], "AAAA") == 0) {
        o->qtype = 28;
      } else {
        ProbeUsage();
      }
    } else {
      ProbeUsage();
    }
  }
}

/* HOST (an address literal, IPv6 with an optional %zone) and PORT. */
void ProbeParseAddress(const char* host, int port, struct sockaddr_storage* ss, socklen_t* len) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in* in4 = (struct sockaddr_in*)ss;
  if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    *len = sizeof(*in4);
    return;
  }
  struct sockaddr_in6* in6 = (struct sockaddr_in6*)ss;
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
  if (strlen(host) >= sizeof(buf)) ProbeUsage();
  strcpy(buf, host);
  char* zone = strchr(buf, '%');
  if (zone != NULL) {
    *zone++ = '\0';
    in6->sin6_scope_id = if_nametoindex(zone);
    if (in6->sin6_scope_id == 0) {
      printf("err %s 0.000 zone\n", ProbeErrName(errno));
      exit(0);
    }
  }
  if (inet_pton(AF_INET6, buf, &in6->sin6_addr) != 1) ProbeUsage();
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons((uint16_t)port);
  *len = sizeof(*in6);
}

/* Drops to o->uid, once, before any socket exists. */
void ProbeApplyUid(const struct options* o) {
  if (o->uid < 0) return;
  const gid_t gid = (gid_t)o->uid;
  if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
      setresuid((uid_t)o->uid, (uid_t)o->uid, (uid_t)o->uid) != 0) {
    printf("optfail uid %s\n", ProbeErrName(errno));
    exit(0);
  }
}

/* The socket with the requested tricks applied; prints "optfail ..." and
 * returns -1 when one of them is refused (the trick is then impossible). */
int ProbeOpenSocket(int family, int type, const struct options* o) {
  const int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    printf("err %s 0.000 socket\n", ProbeErrName(errno));
    return -1;
  }
  const int one = 1;
  if (o->mark >= 0) {
    const unsigned int mark = (unsigned int)o->mark;
    if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) != 0) {
      printf("optfail SO_MARK %s\n", ProbeErrName(errno));
      close(fd);
      return -1;
    }
  }
  if (o->bind_dev != NULL && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->bind_dev,
                                        (socklen_t)strlen(o->bind_dev)) != 0) {
    printf("optfail SO_BINDTODEVICE %s\n", ProbeErrName(errno));
    close(fd);
    return -1;
  }
  if (o->dontroute && setsockopt(fd, SOL_SOCKET, SO_DONTROUTE, &one, sizeof(one)) != 0) {
    printf("optfail SO_DONTROUTE %s\n", ProbeErrName(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* Waits for `events` on fd; 0 when ready, else an errno. */
int ProbeWaitFd(int fd, short events, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = events};
  int r;
  do {
    r = poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return errno;
  if (r == 0) return ETIMEDOUT;
  return 0;
}

/* connect() with a deadline: 0 or an errno. */
int ProbeConnect(int fd, const struct sockaddr_storage* ss, socklen_t len, int timeout_ms) {
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (connect(fd, (const struct sockaddr*)ss, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  const int w = ProbeWaitFd(fd, POLLOUT, timeout_ms);
  if (w != 0) return w;
  int err = 0;
  socklen_t elen = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return errno;
  return err;
}

/* One datagram out, the same one back (the test hosts echo). */
static int UdpEcho(int fd, int timeout_ms) {
  static const char kPing[] = "lazaret-net-probe";
  if (send(fd, kPing, sizeof(kPing) - 1, 0) < 0) return errno;
  if (ProbeWaitFd(fd, POLLIN, timeout_ms) != 0) return ETIMEDOUT;
  char buf[64];
  const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0) return errno;
  if ((size_t)n != sizeof(kPing) - 1 || memcmp(buf, kPing, (size_t)n) != 0) return EBADMSG;
  return 0;
}

static int CmdConnect(const char* host, int port, const struct options* o) {
  struct sockaddr_storage ss;
  socklen_t len;
  ProbeParseAddress(host, port, &ss, &len);
  ProbeApplyUid(o);
  const int fd = ProbeOpenSocket(ss.ss_family, o->udp ? SOCK_DGRAM : SOCK_STREAM, o);
  if (fd < 0) return 0;
  const int64_t start = ProbeNowNs(CLOCK_MONOTONIC);
  int err = ProbeConnect(fd, &ss, len, o->timeout_ms);
  if (err == 0 && o->udp && !o->connect_only) err = UdpEcho(fd, o->timeout_ms);
  const double ms = ProbeMsSince(start);
  if (err == 0) {
    printf("ok %.3f\n", ms);
  } else {
    printf("err %s %.3f\n", ProbeErrName(err), ms);
  }
  close(fd);
  return 0;
}

static void WriteLine(int out, const char* line) {
  const size_t n = strlen(line);
  if (write(out, line, n) != (ssize_t)n) exit(1);
}

static int CmdFlood(const char* host, int port, int seconds, const struct options* o) {
  struct sockaddr_storage ss;
  socklen_t len;
  ProbeParseAddress(host, port, &ss, &len);
  ProbeApplyUid(o);
  const int out =
      o->out != NULL ? open(o->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 1;
  if (out < 0) {
    printf("err %s 0.000 out\n", ProbeErrName(errno));
    return 1;
  }
  const int64_t end = ProbeNowNs(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
  long ok = 0, failed = 0;
  int last_ok = 1;
  char line[128];
  while (ProbeNowNs(CLOCK_MONOTONIC) < end) {
    const int fd = ProbeOpenSocket(ss.ss_family, SOCK_STREAM, o);
    if (fd < 0) return 0;
    const int64_t started = ProbeNowNs(CLOCK_REALTIME);
    const int err = ProbeConnect(fd, &ss, len, o->timeout_ms);
    if (err == 0) {
      ++ok;
      last_ok = 1;
      snprintf(line, sizeof(line), "ok %lld %lld\n", (long long)started,
               (long long)ProbeNowNs(CLOCK_REALTIME));
      WriteLine(out, line);
      /* A reset instead of a FIN: no TIME_WAIT piles up anywhere. */
      const struct linger lg = {.l_onoff = 1, .l_linger = 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    } else {
      ++failed;
      if (last_ok) {
        snprintf(line, sizeof(line), "err %lld %s\n", (long long)started, ProbeErrName(err));
        WriteLine(out, line);
      }
      last_ok = 0;
    }
    close(fd);
    if (o->interval_ms > 0) {
      const struct timespec ts = {.tv_sec = o->interval_ms / 1000,
                                  .tv_nsec = (long)(o->interval_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
    }
  }
  snprintf(line, sizeof(line), "done ok=%ld err=%ld\n", ok, failed);
  WriteLine(out, line);
  return 0;
}

/* Every kind of raw and packet socket, and a TCP socket as the control. */
static void CmdRaw(void) {
  const struct {
    const char* name;
    int domain, type, protocol;
  } kinds[] = {
      {"raw-icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP},
      {"raw-tcp", AF_INET, SOCK_RAW, IPPROTO_TCP},
      {"raw-ipv6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6},
      {"packet-raw", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)},
      {"packet-dgram", AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL)},
      {"tcp", AF_INET, SOCK_STREAM, 0},
  };
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    const int fd = socket(kinds[i].domain, kinds[i].type | SOCK_CLOEXEC, kinds[i].protocol);
    printf("%s%s=%s", i == 0 ? "" : " ", kinds[i].name, fd >= 0 ? "OPEN" : ProbeErrName(errno));
    if (fd >= 0) close(fd);
  }
  printf("\n");
}

static int CmdListen(const char* host, int port, int seconds, const char* banner) {
  struct sockaddr_storage ss;
  socklen_t len;
  ProbeParseAddress(host, port, &ss, &len);
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (fd < 0 || bind(fd, (struct sockaddr*)&ss, len) != 0 || listen(fd, 16) != 0) {
    printf("err %s\n", ProbeErrName(errno));
    return 0;
  }
  printf("listening\n");
  const time_t end = time(NULL) + seconds;
  while (time(NULL) < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 500) <= 0) continue;
    const int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    char line[512];
    const int n = snprintf(line, sizeof(line), "%s\n", banner);
    if (n > 0) (void)!write(c, line, (size_t)n);
    close(c);
  }
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct options o = {
      .mark = -1, .timeout_ms = 2000, .uid = -1, .port = 53, .qtype = 1, .hops = -1};
  if (argc < 2) ProbeUsage();
  const char* cmd = argv[1];
  if (strcmp(cmd, "connect") == 0) {
    if (argc < 4) ProbeUsage();
    ParseOptions(argc - 4, argv + 4, &o);
    return CmdConnect(argv[2], (int)ProbeParseNumber(argv[3], 1, 65535), &o);
  }
  if (strcmp(cmd, "flood") == 0) {
    if (argc < 5) ProbeUsage();
    o.timeout_ms = 1000;
    ParseOptions(argc - 5, argv + 5, &o);
    return CmdFlood(argv[2], (int)ProbeParseNumber(argv[3], 1, 65535),
                    (int)ProbeParseNumber(argv[4], 1, 3600), &o);
  }
  if (strcmp(cmd, "dns") == 0) {
    if (argc < 3) ProbeUsage();
    ParseOptions(argc - 3, argv + 3, &o);
    return ProbeDns(argv[2], &o);
  }
  if (strcmp(cmd, "udp-send") == 0) {
    if (argc < 4) ProbeUsage();
    ParseOptions(argc - 4, argv + 4, &o);
    return ProbeUdpSend(argv[2], (int)ProbeParseNumber(argv[3], 1, 65535), &o);
  }
  if (strcmp(cmd, "listen") == 0 && argc == 6) {
    return CmdListen(argv[2], (int)ProbeParseNumber(argv[3], 1, 65535),
                     (int)ProbeParseNumber(argv[4], 1, 3600), argv[5]);
  }
  if (strcmp(cmd, "raw") == 0 && argc == 2) {
    CmdRaw();
    return 0;
  }
  ProbeUsage();
  return 2;
}
