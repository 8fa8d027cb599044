// Restart backoff for supervised services: doubles from kInitial to kMax.
#ifndef LAZARET_SERVICES_SUPERVISOR_BACKOFF_H_
#define LAZARET_SERVICES_SUPERVISOR_BACKOFF_H_

#include <algorithm>
#include <chrono>

namespace lazaret::supervisor {

class Backoff {
 public:
  static constexpr std::chrono::milliseconds kInitial{200};
  static constexpr std::chrono::milliseconds kMax{30000};

  // The delay before the next restart; each call doubles the following one.
  std::chrono::milliseconds Next() {
    const auto d = next_;
    next_ = std::min(next_ * 2, kMax);
    return d;
  }
  void Reset() { next_ = kInitial; }

 private:
  std::chrono::milliseconds next_ = kInitial;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_BACKOFF_H_
