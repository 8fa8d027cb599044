// The certificate serials one session's socket accepts. Runs in
// lazaret-brokerd (host, no capabilities). The current certificate's serial
// is live until replaced; a replaced one stays live for a short overlap (a
// sandbox may still hold the old file) and is then forgotten; at the
// session's end every serial is forgotten, so a kept copy of a certificate
// is refused even by a new endpoint of the same session id. Its input, the
// serial of a verified peer certificate, is only compared.
#ifndef LAZARET_SERVICES_BROKERD_TLS_LIVE_SERIALS_H_
#define LAZARET_SERVICES_BROKERD_TLS_LIVE_SERIALS_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lazaret::brokerd::tls {

// Thread-safe: the renewal timer writes while accepting threads read.
class LiveSerials {
 public:
  // `serial` is live until Retire or Clear.
  void Add(const std::string& serial) ABSL_LOCKS_EXCLUDED(mu_);
  // `serial` stays live until `forget_at`.
  void Retire(const std::string& serial, absl::Time forget_at) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsLive(const std::string& serial, absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ForgetExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> forget_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_LIVE_SERIALS_H_
