#include "services/common/log.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace lazaret::log {
namespace {

std::mutex& NameMutex() {
  static std::mutex m;
  return m;
}

std::string& ProcessName() {
  static std::string name = "lazaret";
  return name;
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARN";
    case Level::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

void SetProcessName(const std::string& name) {
  std::lock_guard<std::mutex> lock(NameMutex());
  ProcessName() = std::string(name);
}

Line::~Line() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm tm_utc{};
  gmtime_r(&ts.tv_sec, &tm_utc);
  char when[32];
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm_utc);
  std::string name;
  {
    std::lock_guard<std::mutex> lock(NameMutex());
    name = ProcessName();
  }
  // One fprintf per line keeps concurrent lines from interleaving.
  std::fprintf(stderr, "%s.%03ldZ %s[%d] %s %s\n", when, ts.tv_nsec / 1000000, name.c_str(),
               static_cast<int>(getpid()), LevelName(level_), stream_.str().c_str());
}

}  // namespace lazaret::log
