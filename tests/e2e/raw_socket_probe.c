/* Runs inside the sandbox (bind-mounted by a test profile volume): tries
 * to open every kind of raw and packet socket and prints one line per
 * kind, "<kind> OPEN" or "<kind> <error>". Statically linked so it runs in
 * any image. A plain TCP socket is the control that must open. */
#include <errno.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
  const struct {
    const char* name;
    int domain, type, protocol;
  } kinds[] = {
      {"raw-icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP},    {"raw-tcp", AF_INET, SOCK_RAW, IPPROTO_TCP},
      {"raw-ipv6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6}, {"packet-raw", AF_PACKET, SOCK_RAW, 0},
      {"packet-dgram", AF_PACKET, SOCK_DGRAM, 0},       {"tcp", AF_INET, SOCK_STREAM, 0},
  };
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    int protocol = kinds[i].protocol;
    if (kinds[i].domain == AF_PACKET) protocol = htons(ETH_P_ALL);
    const int fd = socket(kinds[i].domain, kinds[i].type, protocol);
    printf("%s %s\n", kinds[i].name, fd >= 0 ? "OPEN" : strerror(errno));
    if (fd >= 0) close(fd);
  }
  return 0;
}
