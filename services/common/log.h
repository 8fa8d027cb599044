// Minimal structured logging to stderr: "<time> <process>[pid] LEVEL msg".
// Every Lazaret process logs through this so the supervisor's log reads as
// one stream. Not for use between fork and execve (it allocates).
#ifndef LAZARET_SERVICES_COMMON_LOG_H_
#define LAZARET_SERVICES_COMMON_LOG_H_

#include <sstream>
#include <string>

namespace lazaret::log {

enum class Level { kInfo, kWarning, kError };

// Sets the process name printed with each line (defaults to "lazaret").
void SetProcessName(const std::string& name);

class Line {
 public:
  explicit Line(Level level) : level_(level) {}
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  template <typename T>
  Line& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  Level level_;
  std::ostringstream stream_;
};

}  // namespace lazaret::log

#define LAZ_LOG_INFO ::lazaret::log::Line(::lazaret::log::Level::kInfo)
#define LAZ_LOG_WARNING ::lazaret::log::Line(::lazaret::log::Level::kWarning)
#define LAZ_LOG_ERROR ::lazaret::log::Line(::lazaret::log::Level::kError)

#endif  // LAZARET_SERVICES_COMMON_LOG_H_
