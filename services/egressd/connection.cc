#include "services/egressd/connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/common/status_util.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/escape.h"

namespace lazaret::egressd {
namespace {

// Upstream trust settings a process keeps contexts for (a service has
// one; tests a few).
constexpr size_t kMaxClientContexts = 8;

// Hosts whose upstream was seen not to offer HTTP/2 (kept for the
// process; a full table is emptied).
constexpr size_t kMaxHttp1OnlyHosts = 1024;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// The hosts whose upstream answered an "h2" offer without it: their
// clients are offered "http/1.1" only, since the proxy does not translate
// HTTP/2 to HTTP/1.1. The first HTTP/2 client of such a host gets a 502
// (it may retry); later ones speak HTTP/1.1.
class Http1OnlyHosts {
 public:
  static Http1OnlyHosts& Get() {
    static Http1OnlyHosts* hosts = new Http1OnlyHosts();
    return *hosts;
  }
  void Add(const std::string& host) {
    absl::MutexLock lock(&mu_);
    if (hosts_.size() >= kMaxHttp1OnlyHosts) hosts_.clear();
    hosts_.insert(host);
  }
  bool Contains(const std::string& host) {
    absl::MutexLock lock(&mu_);
    return hosts_.contains(host);
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<std::string> hosts_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<const TlsServerContext*> SharedServerContext() {
  static absl::Mutex mu(absl::kConstInit);
  static TlsServerContext* ctx = nullptr;  // guarded by mu
  absl::MutexLock lock(&mu);
  if (ctx == nullptr) {
    LAZ_ASSIGN_OR_RETURN(std::unique_ptr<TlsServerContext> made, TlsServerContext::Create());
    ctx = made.release();  // lives as long as the process
  }
  return ctx;
}

absl::StatusOr<std::shared_ptr<const TlsClientContext>> SharedClientContext(
    const UpstreamTrust& trust) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* contexts =  // guarded by mu
      new std::map<std::string, std::shared_ptr<const TlsClientContext>>();
  absl::MutexLock lock(&mu);
  auto it = contexts->find(trust.ca_file);
  if (it != contexts->end()) return it->second;
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<TlsClientContext> made, TlsClientContext::Create(trust));
  if (contexts->size() >= kMaxClientContexts) contexts->clear();
  std::shared_ptr<const TlsClientContext> shared = std::move(made);
  contexts->emplace(trust.ca_file, shared);
  return shared;
}

void LogRefusedConnection(const ConnectionContext& ctx, int64_t start_ms, std::string protocol,
                          std::string host, std::string why) {
  if (!ctx.log) return;
  RequestRecord rec;
  rec.start_unix_ms = start_ms;
  rec.protocol = std::move(protocol);
  rec.host = std::move(host);
  rec.duration_ms = NowMs() - start_ms;
  rec.rule = "connection";
  rec.refused = std::move(why);
  ctx.log(std::move(rec));
}

// Every socket the proxy writes to gets TCP_NODELAY: it writes whole TLS
// records and HTTP heads, and Nagle's algorithm would hold the last small
// one for the peer's delayed ACK (40 ms per response, measured by
// tests/bench/egress_proxy_bench.cc).
void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Dials `host`:443 and handshakes offering `alpn`, verified for `host`.
absl::StatusOr<std::unique_ptr<ByteStream>> OpenTlsUpstream(const ConnectionContext& ctx,
                                                            const TlsClientContext& tls,
                                                            const std::string& host,
                                                            const std::vector<std::string>& alpn) {
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd fd, ctx.dialer->Dial(host, kHttpsPort));
  NoDelay(fd.get());
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<TlsClientStream> stream,
                       TlsClientStream::Connect(tls, std::move(fd), host, alpn,
                                                absl::Now() + ctx.limits.handshake_timeout));
  const std::string chosen = stream->Alpn();
  if (!chosen.empty() && chosen != alpn.front()) {
    return absl::UnavailableError(absl::StrCat(host, " chose the protocol ",
                                               vocab::EscapeForTerminal(chosen), ", not ",
                                               alpn.front()));
  }
  if (chosen.empty() && alpn.front() == "h2") {
    Http1OnlyHosts::Get().Add(host);
    return absl::UnavailableError(absl::StrCat(host, " does not offer HTTP/2; connect again to "
                                                     "use HTTP/1.1"));
  }
  return std::unique_ptr<ByteStream>(std::move(stream));
}

void ServeTls(fs::UniqueFd client_fd, const ConnectionContext& ctx) {
  const int64_t start_ms = NowMs();
  absl::StatusOr<const TlsServerContext*> server_tls = SharedServerContext();
  absl::StatusOr<std::shared_ptr<const TlsClientContext>> upstream_tls =
      SharedClientContext(ctx.trust);
  if (!server_tls.ok() || !upstream_tls.ok()) {
    LogRefusedConnection(ctx, start_ms, "TLS", "",
                         std::string(!server_tls.ok() ? server_tls.status().message()
                                                      : upstream_tls.status().message()));
    return;
  }
  std::string server_name;  // as the client sent it (escaped when logged)
  PickLeaf pick = [&](const std::string& name) -> absl::StatusOr<std::shared_ptr<const LeafCert>> {
    server_name = name;
    if (name.empty()) return absl::PermissionDeniedError("the client sent no server name (SNI)");
    absl::StatusOr<std::string> canonical = vocab::CheckDomainPattern(name);
    if (!canonical.ok() || name[0] == '*') {
      return absl::PermissionDeniedError("the server name is not a DNS name");
    }
    if (!ctx.guard->Intercepts(*canonical)) {
      return absl::PermissionDeniedError(
          absl::StrCat(*canonical, " is not intercepted (no secret or HTTP rule names it)"));
    }
    return ctx.ca->LeafFor(*canonical);
  };
  const AlpnChooser alpn = [](const std::string& name) -> std::vector<std::string> {
    if (Http1OnlyHosts::Get().Contains(absl::AsciiStrToLower(name))) return {"http/1.1"};
    return {"h2", "http/1.1"};
  };
  absl::StatusOr<std::unique_ptr<TlsServerStream>> client =
      TlsServerStream::AcceptChoosingAlpn(**server_tls, std::move(client_fd), pick, alpn,
                              absl::Now() + ctx.limits.handshake_timeout);
  if (!client.ok()) {
    LogRefusedConnection(ctx, start_ms, "TLS",
                         vocab::EscapeForTerminal(absl::string_view(server_name).substr(0, 253)),
                         std::string(client.status().message()));
    return;
  }
  const std::string host = *vocab::CheckDomainPattern(server_name);
  const TlsClientContext& tls = **upstream_tls;
  if ((*client)->Alpn() == "h2") {
    OpenUpstream open = [&ctx, &tls, host]() { return OpenTlsUpstream(ctx, tls, host, {"h2"}); };
    ServeHttp2(**client, host, open, *ctx.guard, ctx.log, ctx.limits.http2);
  } else {
    Http1UpstreamOpener open = [&ctx, &tls](const std::string& h) {
      return OpenTlsUpstream(ctx, tls, h, {"http/1.1"});
    };
    ServeHttp1(**client, host, /*plaintext=*/false, open, *ctx.guard, ctx.log, ctx.limits.http1);
  }
}

void ServePlain(fs::UniqueFd client_fd, const ConnectionContext& ctx) {
  SocketStream client(std::move(client_fd));
  Http1UpstreamOpener open =
      [&ctx](const std::string& host) -> absl::StatusOr<std::unique_ptr<ByteStream>> {
    LAZ_ASSIGN_OR_RETURN(fs::UniqueFd fd, ctx.dialer->Dial(host, kHttpPort));
    NoDelay(fd.get());
    return std::unique_ptr<ByteStream>(new SocketStream(std::move(fd)));
  };
  ServeHttp1(client, /*host=*/"", /*plaintext=*/true, open, *ctx.guard, ctx.log,
             ctx.limits.http1);
}

}  // namespace

void ServeConnection(fs::UniqueFd client_fd, uint16_t local_port, const ConnectionContext& ctx) {
  NoDelay(client_fd.get());
  if (local_port == kHttpsPort) {
    ServeTls(std::move(client_fd), ctx);
  } else if (local_port == kHttpPort) {
    ServePlain(std::move(client_fd), ctx);
  } else {
    LogRefusedConnection(ctx, NowMs(), "TCP", "",
                         absl::StrCat("the proxy serves ports 80 and 443, not ", local_port));
  }
}

}  // namespace lazaret::egressd
