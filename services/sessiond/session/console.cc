#include "services/sessiond/session/console.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace lazaret::cli::session {

void Say(const std::string& line) { std::fprintf(stderr, "lazaret: %s\n", line.c_str()); }

void Trace(const char* phase) {
  using Clock = std::chrono::steady_clock;
  static const bool on = [] {
    const char* v = std::getenv("LAZARET_TRACE");
    return v != nullptr && *v == '1';
  }();
  if (!on) return;
  static const auto start = Clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count() / 1000.0;
  std::fprintf(stderr, "lazaret: trace %8.1f ms  %s\n", ms, phase);
}

}  // namespace lazaret::cli::session
