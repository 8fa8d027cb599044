/* The probe's `dns` command (see net_probe.c): one hand-built query, over
 * UDP or TCP, to the resolver /etc/resolv.conf names or to --server, with
 * the same socket tricks as `connect`. Runs inside the sandbox; the answer
 * comes from whatever the network let through, so it is parsed with
 * bounds checks and nothing in it is trusted beyond printing. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/e2e/net_probe.h"

enum { kMaxMessage = 4096 };

static const char* RcodeName(int rcode) {
  static const char* const kNames[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
                                       "NOTIMP",  "REFUSED", "YXDOMAIN", "YXRRSET",
                                       "NXRRSET", "NOTAUTH", "NOTZONE"};
  return rcode >= 0 && rcode < (int)(sizeof(kNames) / sizeof(kNames[0])) ? kNames[rcode] : "RCODE?";
}

/* The first `nameserver` of /etc/resolv.conf, into buf. */
static int ResolvConfServer(char* buf, size_t size) {
  FILE* f = fopen("/etc/resolv.conf", "re");
  if (f == NULL) return -1;
  char line[256];
  int found = -1;
  while (found != 0 && fgets(line, sizeof(line), f) != NULL) {
    char addr[128];
    if (sscanf(line, " nameserver %127s", addr) == 1 && strlen(addr) < size) {
      strcpy(buf, addr);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

/* Header, one question (RD=1), no other section. Returns the length or -1. */
static int BuildQuery(const char* name, int qtype, unsigned id, unsigned char* out, size_t size) {
  size_t n = 0;
  const unsigned char header[12] = {id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  memcpy(out, header, sizeof(header));
  n = sizeof(header);
  const char* p = name;
  while (*p != '\0') {
    const char* dot = strchr(p, '.');
    const size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);
    if (len == 0 || len > 63 || n + 1 + len + 5 > size) return -1;
    out[n++] = (unsigned char)len;
    memcpy(out + n, p, len);
    n += len;
    p += len;
    if (*p == '.') ++p;
  }
  out[n++] = 0;
  out[n++] = (unsigned char)(qtype >> 8);
  out[n++] = (unsigned char)(qtype & 0xff);
  out[n++] = 0;
  out[n++] = 1; /* IN */
  return (int)n;
}

/* Skips a (possibly compressed) name at *at; -1 when malformed. */
static int SkipName(const unsigned char* m, size_t len, size_t* at) {
  for (int labels = 0; labels < 128; ++labels) {
    if (*at >= len) return -1;
    const unsigned char c = m[*at];
    if (c == 0) {
      *at += 1;
      return 0;
    }
    if ((c & 0xc0) == 0xc0) {
      *at += 2;
      return *at <= len ? 0 : -1;
    }
    if ((c & 0xc0) != 0) return -1;
    *at += 1 + c;
  }
  return -1;
}

/* Decodes the name at `at` (following pointers, bounded) into out. */
static int ReadName(const unsigned char* m, size_t len, size_t at, char* out, size_t size) {
  size_t n = 0;
  for (int hops = 0; hops < 64; ++hops) {
    if (at >= len) return -1;
    const unsigned char c = m[at];
    if (c == 0) {
      out[n > 0 ? n - 1 : 0] = '\0';
      return 0;
    }
    if ((c & 0xc0) == 0xc0) {
      if (at + 1 >= len) return -1;
      at = ((size_t)(c & 0x3f) << 8) | m[at + 1];
      continue;
    }
    if ((c & 0xc0) != 0 || at + 1 + c > len || n + c + 2 > size) return -1;
    for (size_t i = 0; i < c; ++i) {
      const unsigned char ch = m[at + 1 + i];
      out[n++] = (ch > 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    out[n++] = '.';
    at += 1 + c;
  }
  return -1;
}

/* Prints "rcode <RCODE> <ms> answers...". */
static void PrintAnswer(const unsigned char* m, size_t len, unsigned id, double ms) {
  if (len < 12 || ((unsigned)m[0] << 8 | m[1]) != id || (m[2] & 0x80) == 0) {
    printf("err EBADMSG %.3f\n", ms);
    return;
  }
  printf("rcode %s %.3f", RcodeName(m[3] & 0x0f), ms);
  const unsigned qd = (unsigned)m[4] << 8 | m[5];
  const unsigned an = (unsigned)m[6] << 8 | m[7];
  size_t at = 12;
  for (unsigned i = 0; i < qd; ++i) {
    if (SkipName(m, len, &at) != 0 || at + 4 > len) goto bad;
    at += 4;
  }
  for (unsigned i = 0; i < an; ++i) {
    if (SkipName(m, len, &at) != 0 || at + 10 > len) goto bad;
    const unsigned type = (unsigned)m[at] << 8 | m[at + 1];
    const size_t rdlen = (size_t)m[at + 8] << 8 | m[at + 9];
    at += 10;
    if (at + rdlen > len) goto bad;
    char text[300];
    if (type == 1 && rdlen == 4) {
      printf(" %s", inet_ntop(AF_INET, m + at, text, sizeof(text)));
    } else if (type == 28 && rdlen == 16) {
      printf(" %s", inet_ntop(AF_INET6, m + at, text, sizeof(text)));
    } else if (type == 5 && ReadName(m, len, at, text, sizeof(text)) == 0) {
      printf(" cname:%s", text);
    }
    at += rdlen;
  }
  printf("\n");
  return;
bad:
  printf(" malformed\n");
}

int ProbeDns(const char* name, const struct options* o) {
  char server[128];
  if (o->server != NULL) {
    snprintf(server, sizeof(server), "%s", o->server);
  } else if (ResolvConfServer(server, sizeof(server)) != 0) {
    printf("err ENOENT 0.000 resolv.conf\n");
    return 0;
  }
  struct sockaddr_storage ss;
  socklen_t sslen;
  ProbeParseAddress(server, o->port, &ss, &sslen);
  ProbeApplyUid(o);
  const unsigned id = (unsigned)(ProbeNowNs(CLOCK_MONOTONIC) ^ getpid()) & 0xffff;
  unsigned char query[512 + 2];
  const int qlen = BuildQuery(name, o->qtype, id, query + 2, sizeof(query) - 2);
  if (qlen < 0) ProbeUsage();
  const int fd = ProbeOpenSocket(ss.ss_family, o->tcp_dns ? SOCK_STREAM : SOCK_DGRAM, o);
  if (fd < 0) return 0;
  const int64_t start = ProbeNowNs(CLOCK_MONOTONIC);
  int err = ProbeConnect(fd, &ss, sslen, o->timeout_ms);
  unsigned char answer[kMaxMessage];
  ssize_t n = 0;
  if (err == 0 && o->tcp_dns) {
    query[0] = (unsigned char)(qlen >> 8);
    query[1] = (unsigned char)(qlen & 0xff);
    if (send(fd, query, (size_t)qlen + 2, MSG_NOSIGNAL) != qlen + 2) err = errno ? errno : EIO;
    size_t got = 0;
    while (err == 0 && (got < 2 || got < 2 + ((size_t)answer[0] << 8 | answer[1]))) {
      err = ProbeWaitFd(fd, POLLIN, o->timeout_ms);
      if (err != 0) break;
      const ssize_t r = recv(fd, answer + got, sizeof(answer) - got, MSG_DONTWAIT);
      if (r < 0) err = errno;
      if (r == 0) err = ECONNRESET;
      if (r > 0) got += (size_t)r;
      if (got == sizeof(answer)) break;
    }
    if (err == 0) {
      n = (ssize_t)got - 2;
      memmove(answer, answer + 2, (size_t)n);
    }
  } else if (err == 0) {
    if (send(fd, query + 2, (size_t)qlen, 0) != qlen) err = errno;
    if (err == 0) err = ProbeWaitFd(fd, POLLIN, o->timeout_ms);
    if (err == 0) {
      n = recv(fd, answer, sizeof(answer), MSG_DONTWAIT);
      if (n < 0) err = errno;
    }
  }
  const double ms = ProbeMsSince(start);
  close(fd);
  if (err != 0) {
    printf("err %s %.3f\n", ProbeErrName(err), ms);
    return 0;
  }
  PrintAnswer(answer, (size_t)n, id, ms);
  return 0;
}
