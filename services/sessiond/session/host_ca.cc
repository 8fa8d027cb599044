#include "services/sessiond/session/host_ca.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/common/fs/file.h"

namespace lazaret::cli::session {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

// One PEM block as PEM_read_bio hands it out (OPENSSL_malloc'd).
struct PemBlock {
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long len = 0;
  ~PemBlock() {
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
  }
};

// The type line of a block, made safe to print (it comes from the file).
std::string Printable(const char* s) {
  std::string v(s == nullptr ? "" : s);
  if (v.size() > 40) v = v.substr(0, 40) + "...";
  return absl::CHexEscape(v);
}

std::string FixHint(const std::string& source) {
  return absl::StrCat(
      "Point SSL_CERT_FILE at a file of PEM certificates only, or set "
      "trust_host_ca = false (",
      source, " is what the host's OpenSSL reads)");
}

}  // namespace

std::string HostCaStorePath(const HostEnvLookup& lookup) {
  if (std::optional<std::string> env = lookup(X509_get_default_cert_file_env());
      env.has_value() && !env->empty()) {
    return *env;
  }
  return X509_get_default_cert_file();
}

absl::StatusOr<HostCaCertificates> ReencodeCertificates(absl::string_view data,
                                                        const std::string& source) {
  if (data.size() > kMaxHostCaBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the host's CA store ", source, " is larger than ", kMaxHostCaBytes,
                     " bytes; that is not a CA store. ", FixHint(source)));
  }
  BioPtr in(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
  BioPtr out(BIO_new(BIO_s_mem()));
  if (in == nullptr || out == nullptr) return absl::ResourceExhaustedError("out of memory");
  HostCaCertificates result;
  result.source = source;
  ERR_clear_error();
  for (size_t block = 1;; ++block) {
    PemBlock b;
    if (PEM_read_bio(in.get(), &b.name, &b.header, &b.data, &b.len) != 1) {
      const unsigned long err = ERR_peek_last_error();
      ERR_clear_error();
      // No further "-----BEGIN" line: the end of the file.
      if (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE) break;
      return absl::InvalidArgumentError(absl::StrCat("the host's CA store ", source, ": PEM block ",
                                                     block, " is malformed. ", FixHint(source)));
    }
    const std::string name = b.name == nullptr ? "" : b.name;
    const bool trusted = name == PEM_STRING_X509_TRUSTED;
    if (name != PEM_STRING_X509 && name != PEM_STRING_X509_OLD && !trusted) {
      return absl::InvalidArgumentError(absl::StrCat("the host's CA store ", source, ": PEM block ",
                                                     block, " is a \"", Printable(b.name),
                                                     "\", not a certificate; Lazaret passes only "
                                                     "certificates into a sandbox. ",
                                                     FixHint(source)));
    }
    if (b.header != nullptr && b.header[0] != '\0') {
      return absl::InvalidArgumentError(absl::StrCat(
          "the host's CA store ", source, ": certificate ", block,
          " has PEM headers (encrypted?); a CA certificate has none. ", FixHint(source)));
    }
    if (result.count == kMaxHostCaCertificates) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the host's CA store ", source, " holds more than ", kMaxHostCaCertificates,
                       " certificates; that is not a CA store. ", FixHint(source)));
    }
    const unsigned char* p = b.data;
    X509Ptr cert(trusted ? d2i_X509_AUX(nullptr, &p, b.len) : d2i_X509(nullptr, &p, b.len));
    if (cert == nullptr || p != b.data + b.len) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          absl::StrCat("the host's CA store ", source, ": certificate ", block,
                       " is not a valid X.509 certificate. ", FixHint(source)));
    }
    // The trust settings of a TRUSTED CERTIFICATE stay behind: inside, it is
    // a plain root, as every tool that reads SSL_CERT_FILE expects.
    if (PEM_write_bio_X509(out.get(), cert.get()) != 1) {
      ERR_clear_error();
      return absl::InternalError(
          absl::StrCat("re-encoding certificate ", block, " of ", source, " failed"));
    }
    ++result.count;
  }
  if (result.count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the host's CA store ", source, " holds no certificate. ", FixHint(source)));
  }
  char* pem = nullptr;
  const long n = BIO_get_mem_data(out.get(), &pem);
  result.pem.assign(pem, static_cast<size_t>(n));
  return result;
}

absl::StatusOr<HostCaCertificates> ReadHostCaStore(const HostEnvLookup& lookup) {
  const std::string path = HostCaStorePath(lookup);
  if (path.empty() || path[0] != '/') {
    return absl::FailedPreconditionError(absl::StrCat(
        "trust_host_ca: the host's CA store '", absl::CHexEscape(path),
        "' is not an absolute path; set SSL_CERT_FILE to one, or trust_host_ca = false"));
  }
  absl::StatusOr<std::string> data = fs::ReadHostFile(path, kMaxHostCaBytes);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat("trust_host_ca: reading the host's CA store: ",
                                     data.status().message(), ". ", FixHint(path)));
  }
  absl::StatusOr<HostCaCertificates> certs = ReencodeCertificates(*data, path);
  if (!certs.ok()) {
    return absl::Status(certs.status().code(),
                        absl::StrCat("trust_host_ca: ", certs.status().message()));
  }
  return certs;
}

std::string HostCaFilePath(const std::string& session_path) {
  return absl::StrCat(session_path, "/ca/host.pem");
}

absl::Status WriteHostCaFile(const std::string& session_path, const HostCaCertificates& certs) {
  absl::StatusOr<fs::DirFd> session = fs::DirFd::Open(session_path);
  if (!session.ok()) return session.status();
  if (mkdirat(session->get(), "ca", 0700) != 0) {
    return absl::InternalError(
        absl::StrCat("creating ", session_path, "/ca: ", std::strerror(errno)));
  }
  absl::StatusOr<fs::DirFd> dir = session->OpenChild("ca");
  if (!dir.ok()) return dir.status();
  return fs::WriteNewFileAt(*dir, "host.pem", certs.pem, 0644);
}

HostCaPlan PlanHostCaMounts(const std::string& session_path) {
  HostCaPlan p;
  // Lazaret's own file: relabelled (":z") like the session's other binds,
  // so an SELinux host lets the sandbox read it.
  p.mounts.push_back(BindMount{HostCaFilePath(session_path), kSandboxHostCaFile,
                               /*read_only=*/true, /*selinux_shared=*/true});
  p.mounts.push_back(TmpfsMount{kSandboxCaBundleDir, "0755"});
  p.init_args = {absl::StrCat("--ca-host=", kSandboxHostCaFile),
                 absl::StrCat("--ca-bundle=", kSandboxCaBundle)};
  p.env.push_back({"NODE_EXTRA_CA_CERTS", kSandboxHostCaFile, false});
  for (const char* name :
       {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"}) {
    p.env.push_back({name, kSandboxCaBundle, false});
  }
  return p;
}

}  // namespace lazaret::cli::session
