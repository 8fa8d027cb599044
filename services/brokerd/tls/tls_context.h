// The broker's TLS server configuration, in one place. Runs in
// lazaret-brokerd (host, no capabilities). The context it builds is what
// stands between a sandbox's bytes and the broker: TLS 1.3 only, no
// resumption of any kind, a client certificate required and verified
// against the broker's ephemeral CA alone.
#ifndef LAZARET_SERVICES_BROKERD_TLS_TLS_CONTEXT_H_
#define LAZARET_SERVICES_BROKERD_TLS_TLS_CONTEXT_H_

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "absl/status/statusor.h"
#include "services/common/openssl_util.h"

namespace lazaret::brokerd::tls {

// A server SSL_CTX presenting `server_cert`/`server_key` and trusting
// `ca_cert` only:
// - SSL_CTX_set_min/max_proto_version(TLS1_3_VERSION);
// - SSL_OP_NO_TICKET and SSL_CTX_set_num_tickets(0): no NewSessionTicket;
// - SSL_SESS_CACHE_OFF: no stateful resumption either;
// - SSL_OP_NO_RENEGOTIATION (TLS 1.3 has none; kept for the record);
// - SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, chain depth 1
//   (leaf and CA), purpose sslclient (EKU clientAuth), X509_V_FLAG_X509_STRICT,
//   a store holding `ca_cert` alone (no default verify paths).
// Every SSL made from it shares that store; the context is safe to use from
// several threads once built.
absl::StatusOr<SslCtxPtr> NewServerContext(X509* ca_cert, X509* server_cert, EVP_PKEY* server_key);

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_TLS_CONTEXT_H_
