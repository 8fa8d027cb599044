// The session CA of the egress proxy: the authority the sandbox trusts for
// the hosts the proxy intercepts, and the leaf certificates it presents to
// the sandbox for them. Runs in lazaret-egressd (host service, no
// capability). One per session; its key is made in memory, never written,
// and dies with the service, so a leaf is worth nothing outside the
// session. The host names it is asked for come from the sandbox (a TLS
// server name) and are checked again here before they reach a certificate.
#ifndef LAZARET_SERVICES_EGRESSD_CA_H_
#define LAZARET_SERVICES_EGRESSD_CA_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/common/openssl_util.h"

namespace lazaret::egressd {

// The CA is valid from this long before its creation (a sandbox clock a
// little behind still accepts it) ...
inline constexpr absl::Duration kCaBackdate = absl::Hours(1);
// ... to this long after: longer than any session runs.
inline constexpr absl::Duration kCaLifetime = absl::Hours(24 * 30);
// Leaves kept for reuse; the cache is emptied when it is full (a sandbox
// cannot grow it beyond this, and only intercepted names get a leaf).
inline constexpr size_t kMaxCachedLeaves = 256;

// A leaf certificate and its key, as a TLS server side presents them.
struct LeafCert {
  X509Ptr cert;
  PkeyPtr key;
};

// Thread-safe: connections ask for leaves concurrently.
class SessionCa {
 public:
  // A fresh EC P-256 key and a self-signed CA certificate: CN "Lazaret
  // session <session_id> egress CA", basicConstraints CA:TRUE pathlen:0
  // critical, keyUsage keyCertSign+cRLSign critical, and a critical
  // nameConstraints extension permitting only the DNS names of
  // `intercepted` (exact names and "*.example.com" patterns, lower case,
  // vocab::CheckDomainPattern holds; a pattern permits the names below its
  // base, not the base): even a leaked CA key cannot vouch for any other
  // host to a client that checks name constraints (OpenSSL, NSS,
  // BoringSSL, Go, rustls do). With no name it permits only "invalid"
  // (RFC 6761). `session_id` is printable ASCII without spaces, at most 64
  // characters.
  static absl::StatusOr<std::unique_ptr<SessionCa>> Create(
      absl::string_view session_id, const std::vector<std::string>& intercepted);

  SessionCa(const SessionCa&) = delete;
  SessionCa& operator=(const SessionCa&) = delete;

  // The CA certificate (PEM): what the sandbox's trust store gets.
  const std::string& CaPem() const { return ca_pem_; }
  X509* ca_cert() const { return ca_cert_.get(); }

  // The leaf for `host` (a plain lower-case DNS name, no wildcard, no
  // port, vocab::CheckDomainPattern holds), minted at the first request
  // and cached: SAN DNS:<host> only, EKU serverAuth, keyUsage
  // digitalSignature, a fresh P-256 key, a random 128-bit serial, SHA-256,
  // valid within the CA's period. The caller decides first whether the
  // host is one the proxy intercepts.
  absl::StatusOr<std::shared_ptr<const LeafCert>> LeafFor(absl::string_view host)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  SessionCa() = default;

  PkeyPtr ca_key_;
  X509Ptr ca_cert_;
  std::string ca_pem_;
  absl::Time not_before_;
  absl::Time not_after_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const LeafCert>> leaves_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_CA_H_
