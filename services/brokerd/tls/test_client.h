// Tests only: a sandbox-side mTLS client written against OpenSSL directly
// (not against this library's server code), scratch directories, and a
// session endpoint fixture.
#ifndef LAZARET_SERVICES_BROKERD_TLS_TEST_CLIENT_H_
#define LAZARET_SERVICES_BROKERD_TLS_TEST_CLIENT_H_

#include <openssl/ssl.h>

#include <string>

#include "services/common/openssl_util.h"

namespace lazaret::brokerd::tls::testing {

struct ClientCredentials {
  std::string ca_pem;
  std::string cert_pem;  // empty: no client certificate
  std::string key_pem;
};

// The files of a session's certificate directory.
ClientCredentials ReadCredentials(const std::string& certs_dir);

struct ClientOptions {
  int max_version = TLS1_3_VERSION;
  SSL_SESSION* offer_session = nullptr;  // a session to offer for resumption
};

struct ClientResult {
  bool handshake_ok = false;
  bool server_cert_is_broker = false;  // chain verified and SAN urn:lazaret:broker
  std::string error;
  std::string received;      // application data read until the end
  bool clean_close = false;  // the server's close_notify arrived
  int tickets = 0;           // NewSessionTicket messages seen
  bool reused = false;       // SSL_session_reused
  SslSessionPtr session;     // SSL_get1_session after the exchange
};

// Connects to the Unix socket `path`, handshakes, writes `send`, then reads
// until the stream ends. Blocking; run it on its own thread.
ClientResult RunClient(const std::string& path, const ClientCredentials& creds,
                       const std::string& send, const ClientOptions& options = {});

// A client on an already connected socket `fd` (taken).
ClientResult RunClientOnFd(int fd, const ClientCredentials& creds, const std::string& send,
                           const ClientOptions& options = {});

// A scratch directory with `mode` below `parent` ("/tmp" or "/dev/shm").
std::string MakeScratchDir(const std::string& parent, unsigned mode = 0700);
void RemoveScratchDir(const std::string& path);

}  // namespace lazaret::brokerd::tls::testing

#endif  // LAZARET_SERVICES_BROKERD_TLS_TEST_CLIENT_H_
