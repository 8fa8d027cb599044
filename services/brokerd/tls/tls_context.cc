#include "services/brokerd/tls/tls_context.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

namespace lazaret::brokerd::tls {

absl::StatusOr<SslCtxPtr> NewServerContext(X509* ca_cert, X509* server_cert, EVP_PKEY* server_key) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return OpenSslError("creating the TLS server context");
  SSL_CTX* c = ctx.get();
  if (SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) != 1) {
    return OpenSslError("restricting the server to TLS 1.3");
  }
  SSL_CTX_set_options(c, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_set_num_tickets(c, 0) != 1) return OpenSslError("turning session tickets off");
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  // No early data: nothing from the client is read before its certificate.
  SSL_CTX_set_max_early_data(c, 0);
  SSL_CTX_set_recv_max_early_data(c, 0);

  // The store SSL_CTX_new made is empty: no default verify paths are ever
  // loaded, so the CA added here is the only anchor.
  X509_STORE* store = SSL_CTX_get_cert_store(c);
  if (store == nullptr || X509_STORE_add_cert(store, ca_cert) != 1) {
    return OpenSslError("installing the CA as the trust anchor");
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(c);
  if (X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_CLIENT) != 1 ||
      X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT) != 1) {
    return OpenSslError("setting the verification parameters");
  }
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_verify_depth(c, 1);
  if (SSL_CTX_add_client_CA(c, ca_cert) != 1) {
    return OpenSslError("naming the CA in the certificate request");
  }
  if (SSL_CTX_use_certificate(c, server_cert) != 1 || SSL_CTX_use_PrivateKey(c, server_key) != 1 ||
      SSL_CTX_check_private_key(c) != 1) {
    return OpenSslError("loading the broker's server certificate");
  }
  return ctx;
}

}  // namespace lazaret::brokerd::tls
