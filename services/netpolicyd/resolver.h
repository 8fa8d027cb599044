// Asking the upstream resolvers, from the host, on behalf of a sandbox whose
// name policy answers the name. Runs in lazaret-netpolicyd, unprivileged.
// Upstreams come from the profile's network.dns_upstream or else the
// host's /etc/resolv.conf; responses are untrusted network input: each is
// parsed by dns::ParseResponse against the id and question it answers, on a
// socket connected to the server asked, and anything else is dropped.
#ifndef LAZARET_SERVICES_NETPOLICYD_RESOLVER_H_
#define LAZARET_SERVICES_NETPOLICYD_RESOLVER_H_

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/netpolicyd/dns_message.h"

namespace lazaret::netpolicyd {

struct Upstream {
  sockaddr_storage address = {};
  socklen_t length = 0;
  std::string text;  // "192.0.2.53:53", "[2001:db8::53]:53"
};

// "ADDR:PORT", "[V6]:PORT" or a bare address (port 53).
absl::StatusOr<Upstream> ParseUpstream(absl::string_view text);

// The `nameserver` lines of resolv.conf text, in order (port 53). Lines
// that do not parse are skipped; none at all is NOT_FOUND.
absl::StatusOr<std::vector<Upstream>> UpstreamsFromResolvConf(absl::string_view contents);

// `configured` (network.dns_upstream) when not empty, else the nameservers
// of `resolv_conf_path` (read with fs::ReadHostFile).
absl::StatusOr<std::vector<Upstream>> ChooseUpstreams(const std::vector<std::string>& configured,
                                                      const std::string& resolv_conf_path);

struct ResolverOptions {
  std::chrono::milliseconds timeout{2000};  // per attempt
  int attempts = 2;                         // the first server, then the next
};

class Resolver {
 public:
  Resolver(std::vector<Upstream> upstreams, ResolverOptions options)
      : upstreams_(std::move(upstreams)), options_(options) {}

  // Asks for `question` over UDP with a fresh random id; a truncated answer
  // is asked again over TCP from the same server. A timeout, a network
  // error, a malformed answer or SERVFAIL moves on to the next server
  // (options.attempts in all). UNAVAILABLE when every attempt failed.
  absl::StatusOr<dns::Response> Resolve(const dns::Question& question) const;

  const std::vector<Upstream>& upstreams() const { return upstreams_; }

 private:
  absl::StatusOr<dns::Response> AskUdp(const Upstream& upstream,
                                       const dns::Question& question) const;
  absl::StatusOr<dns::Response> AskTcp(const Upstream& upstream,
                                       const dns::Question& question) const;

  std::vector<Upstream> upstreams_;
  ResolverOptions options_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_RESOLVER_H_
