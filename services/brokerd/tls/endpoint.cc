#include "services/brokerd/tls/endpoint.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/brokerd/tls/private_dir.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

void Cleanse(std::string& secret) {
  if (!secret.empty()) OPENSSL_cleanse(secret.data(), secret.size());
  secret.clear();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionEndpoint>> SessionEndpoint::Create(
    const std::string& socket_dir, const std::string& certs_root, SessionIdentity identity,
    const CertificateAuthority& ca, absl::Duration cert_lifetime, bool adopt_existing,
    EndpointOptions options) {
  LAZ_RETURN_IF_ERROR(ValidateSessionIdentity(identity));
  std::unique_ptr<SessionEndpoint> ep(
      new SessionEndpoint(std::move(identity), ca, cert_lifetime, options));
  const std::string& id = ep->identity_.session_id;
  LAZ_ASSIGN_OR_RETURN(ep->socket_root_,
                       OpenPrivateRoot(socket_dir, "socket directory", Backing::kAny));
  LAZ_ASSIGN_OR_RETURN(ep->certs_root_,
                       OpenPrivateRoot(certs_root, "certificate root", Backing::kMemory));
  LAZ_ASSIGN_OR_RETURN(IssuedCertificate issued, ca.IssueClient(ep->identity_, cert_lifetime));

  // From here on a failure removes what was made: Close removes a session
  // directory only once it is ours (created or adopted).
  LAZ_ASSIGN_OR_RETURN(ep->socket_session_dir_,
                       CreateSessionDir(ep->socket_root_, socket_dir, id, adopt_existing));
  ep->socket_dir_ = absl::StrCat(socket_dir, "/", id);
  absl::Status status = [&]() -> absl::Status {
    LAZ_ASSIGN_OR_RETURN(ep->certs_session_dir_,
                         CreateSessionDir(ep->certs_root_, certs_root, id, adopt_existing));
    ep->certs_dir_ = absl::StrCat(certs_root, "/", id);
    const fs::DirFd& dir = ep->certs_session_dir_;
    LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(dir, kCaFile, ca.ca_pem(), 0600));
    LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(dir, kClientKeyFile, issued.key_pem, 0600));
    LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(dir, kClientCertFile, issued.cert_pem, 0600));
    return ep->Bind();
  }();
  if (!status.ok()) {
    ep->Close().IgnoreError();
    Cleanse(issued.key_pem);
    return status;
  }
  ep->serials_.Add(issued.serial_hex);
  absl::MutexLock lock(&ep->mu_);
  ep->current_ = std::move(issued);
  return ep;
}

absl::Status SessionEndpoint::Bind() {
  // bind() needs a path; this one reaches the checked directory through its
  // descriptor, whatever its host path is or becomes.
  const std::string path =
      absl::StrCat("/proc/self/fd/", socket_session_dir_.get(), "/", kSocketName);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " exceeds the ",
                                                   sizeof(addr.sun_path) - 1, "-byte limit"));
  }
  path.copy(addr.sun_path, path.size());
  fs::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("creating the session socket", errno);
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus(
        absl::StrCat("binding ", socket_dir_, "/", kSocketName, " (through /proc/self/fd)"), errno);
  }
  if (fchmodat(socket_session_dir_.get(), kSocketName, 0600, 0) != 0) {
    return ErrnoStatus(absl::StrCat("chmod 0600 ", socket_dir_, "/", kSocketName), errno);
  }
  if (listen(fd.get(), kListenBacklog) != 0) {
    return ErrnoStatus(absl::StrCat("listening on ", socket_dir_, "/", kSocketName), errno);
  }
  listen_fd_ = std::move(fd);
  return absl::OkStatus();
}

SessionEndpoint::~SessionEndpoint() {
  if (absl::Status s = Close(); !s.ok()) {
    LAZ_LOG_WARNING << "closing the endpoint of session " << identity_.session_id << ": " << s;
  }
}

absl::Status SessionEndpoint::Renew() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError("the session's endpoint is closed");
  LAZ_ASSIGN_OR_RETURN(IssuedCertificate renewed,
                       ca_.RenewClient(identity_, cert_lifetime_, current_.key_pem));
  serials_.Add(renewed.serial_hex);
  if (absl::Status s =
          fs::WriteFileAtomicAt(certs_session_dir_, kClientCertFile, renewed.cert_pem, 0600);
      !s.ok()) {
    serials_.Retire(renewed.serial_hex, absl::InfinitePast());
    return s;
  }
  serials_.Retire(current_.serial_hex, absl::Now() + options_.renewal_overlap);
  current_ = std::move(renewed);
  return absl::OkStatus();
}

void SessionEndpoint::StopAccepting() {
  if (listen_fd_.valid()) shutdown(listen_fd_.get(), SHUT_RDWR);
}

absl::Status SessionEndpoint::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  serials_.Clear();
  Cleanse(current_.key_pem);
  StopAccepting();
  listen_fd_.reset();
  absl::Status status;
  if (!socket_dir_.empty()) {
    socket_session_dir_ = fs::DirFd();
    status.Update(fs::RemoveTreeAt(socket_root_, identity_.session_id));
  }
  if (!certs_dir_.empty()) {
    certs_session_dir_ = fs::DirFd();
    status.Update(fs::RemoveTreeAt(certs_root_, identity_.session_id));
  }
  return status;
}

absl::StatusOr<std::unique_ptr<TlsStream>> SessionEndpoint::Accept(
    const TlsAcceptor& acceptor) const {
  return acceptor.Accept(listen_fd_.get(), expected_peer());
}

ExpectedPeer SessionEndpoint::expected_peer() const {
  return ExpectedPeer{identity_,
                      [this](const std::string& serial) { return IsLiveSerial(serial); }};
}

bool SessionEndpoint::IsLiveSerial(const std::string& serial_hex) const {
  return serials_.IsLive(serial_hex, absl::Now());
}

absl::Time SessionEndpoint::not_after() const {
  absl::MutexLock lock(&mu_);
  return absl::FromUnixSeconds(current_.not_after_unix);
}

absl::Time SessionEndpoint::renew_at() const {
  absl::MutexLock lock(&mu_);
  return absl::FromUnixSeconds(current_.not_before_unix +
                               (current_.not_after_unix - current_.not_before_unix) / 2);
}

std::string SessionEndpoint::current_serial() const {
  absl::MutexLock lock(&mu_);
  return current_.serial_hex;
}

}  // namespace lazaret::brokerd::tls
