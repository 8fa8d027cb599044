#include "services/sessiond/session/console.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace lazaret::cli::session {
namespace {

struct Console {
  absl::Mutex mu;
  NoticeSink sink ABSL_GUARDED_BY(mu);
};

Console& TheConsole() {
  // Never destroyed: a thread may still say something at exit.
  static Console* c = new Console;
  return *c;
}

// -1: not set, this process's LAZARET_TRACE decides.
std::atomic<int> g_trace{-1};

bool TraceOn() {
  const int t = g_trace.load();
  if (t >= 0) return t == 1;
  const char* v = std::getenv("LAZARET_TRACE");
  return v != nullptr && *v == '1';
}

void Emit(const std::string& line) {
  Console& c = TheConsole();
  absl::MutexLock lock(&c.mu);
  std::fprintf(stderr, "%s\n", line.c_str());
  if (c.sink) c.sink(line);
}

}  // namespace

void SetNoticeSink(NoticeSink sink) {
  Console& c = TheConsole();
  absl::MutexLock lock(&c.mu);
  c.sink = std::move(sink);
}

void SetTraceEnabled(bool on) { g_trace.store(on ? 1 : 0); }

void Say(const std::string& line) { Emit("lazaret: " + line); }

void Trace(const char* phase) {
  using Clock = std::chrono::steady_clock;
  if (!TraceOn()) return;
  static const auto start = Clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count() / 1000.0;
  Emit(absl::StrFormat("lazaret: trace %8.1f ms  %s", ms, phase));
}

}  // namespace lazaret::cli::session
