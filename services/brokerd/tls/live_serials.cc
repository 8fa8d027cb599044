#include "services/brokerd/tls/live_serials.h"

namespace lazaret::brokerd::tls {

void LiveSerials::ForgetExpired(absl::Time now) {
  absl::erase_if(forget_at_, [now](const auto& entry) { return entry.second <= now; });
}

void LiveSerials::Add(const std::string& serial) {
  absl::MutexLock lock(&mu_);
  ForgetExpired(absl::Now());
  forget_at_[serial] = absl::InfiniteFuture();
}

void LiveSerials::Retire(const std::string& serial, absl::Time forget_at) {
  absl::MutexLock lock(&mu_);
  auto it = forget_at_.find(serial);
  if (it != forget_at_.end() && forget_at < it->second) it->second = forget_at;
  ForgetExpired(absl::Now());
}

bool LiveSerials::IsLive(const std::string& serial, absl::Time now) const {
  absl::MutexLock lock(&mu_);
  auto it = forget_at_.find(serial);
  return it != forget_at_.end() && now < it->second;
}

void LiveSerials::Clear() {
  absl::MutexLock lock(&mu_);
  forget_at_.clear();
}

size_t LiveSerials::size() const {
  absl::MutexLock lock(&mu_);
  return forget_at_.size();
}

}  // namespace lazaret::brokerd::tls
