// The host's CA trust in a sandbox (profile key trust_host_ca): which store
// the host's OpenSSL reads for this user, a re-encoded copy of its
// certificates in the session directory, and where the sandbox finds them.
// Runs in the session worker (lazaret-sessiond --session-worker), as the
// user; SSL_CERT_FILE and SSL_CERT_DIR are the caller's. The store is a host
// file the user or root controls, and it crosses into the sandbox: it is
// read bounded (kMaxHostCaBytes, kMaxHostCaCertificates), every PEM block
// in it must be a certificate (a key left in an SSL_CERT_FILE never
// reaches the sandbox), and each certificate is parsed and written out
// again, so only DER that OpenSSL parsed as X.509 passes, no comment or
// stray byte.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_HOST_CA_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_HOST_CA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/podman/mount_spec.h"
#include "services/sessiond/session/env.h"

namespace lazaret::cli::session {

// Where the sandbox sees the host's certificates (bound read-only) and
// where lazaret-sandbox-init writes the image's bundle plus them (a tmpfs
// of its own).
inline constexpr char kSandboxHostCaFile[] = "/run/lazaret/ca/host.pem";
inline constexpr char kSandboxCaBundleDir[] = "/run/lazaret/ca-bundle";
inline constexpr char kSandboxCaBundle[] = "/run/lazaret/ca-bundle/bundle.pem";

// A Debian bundle is ~220 KiB and ~150 certificates; a corporate one adds
// a few. More than this is not a CA store.
inline constexpr size_t kMaxHostCaBytes = 4u << 20;
inline constexpr size_t kMaxHostCaCertificates = 4000;

// The file the host's OpenSSL would read its trusted certificates from for
// this process: $SSL_CERT_FILE (X509_get_default_cert_file_env) when set
// and non-empty, else OpenSSL's compiled-in default file
// (X509_get_default_cert_file; Debian: /usr/lib/ssl/cert.pem, a link to
// /etc/ssl/certs/ca-certificates.crt).
std::string HostCaStorePath(const HostEnvLookup& lookup);

// The certificates of one store, re-encoded as PEM.
struct HostCaCertificates {
  std::string source;  // the store they were read from (for messages)
  std::string pem;     // PEM_write_bio_X509 of each, in the store's order
  size_t count = 0;
};

// Parses `data` (the text of `source`) as a PEM file of certificates and
// writes each out again. Refused: more than kMaxHostCaBytes or
// kMaxHostCaCertificates, a PEM block that is not a certificate (a private
// key, a CRL, ...), a certificate OpenSSL cannot parse, and a store with no
// certificate. Text outside PEM blocks (a bundle's comments) is dropped.
absl::StatusOr<HostCaCertificates> ReencodeCertificates(absl::string_view data,
                                                        const std::string& source);

// Reads HostCaStorePath(lookup) (a host file: symlinks followed, only a
// regular file read, at most kMaxHostCaBytes) and re-encodes it.
absl::StatusOr<HostCaCertificates> ReadHostCaStore(const HostEnvLookup& lookup);

// Writes `certs.pem` to <session_path>/ca/host.pem: the directory 0700,
// the file 0644 (the sandbox's users read it through the bind), neither
// there before.
absl::Status WriteHostCaFile(const std::string& session_path, const HostCaCertificates& certs);

// The host path of the file WriteHostCaFile writes.
std::string HostCaFilePath(const std::string& session_path);

// What a session with trust_host_ca gets, planned before the file exists:
// the file bound read-only at kSandboxHostCaFile, a tmpfs at
// kSandboxCaBundleDir, lazaret-sandbox-init's --ca-host/--ca-bundle, and
// the variables tools read: NODE_EXTRA_CA_CERTS (node adds it to its own
// roots) names host.pem; SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
// CURL_CA_BUNDLE, GIT_SSL_CAINFO and PIP_CERT name the bundle.
struct HostCaPlan {
  std::vector<Mount> mounts;
  std::vector<std::string> init_args;
  std::vector<EnvSetting> env;
};
HostCaPlan PlanHostCaMounts(const std::string& session_path);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_HOST_CA_H_
