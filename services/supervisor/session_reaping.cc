#include "services/supervisor/session_reaping.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/constants.h"
#include "services/common/log.h"
#include "services/supervisor/service_table.h"

namespace lazaret::supervisor {
namespace {

using Clock = std::chrono::steady_clock;

// How long `lazaret down` lets live sessions end themselves (teardown and
// Git Shadow write-back in their own `lazaret run`).
constexpr auto kSessionStopGrace = std::chrono::seconds(30);
// How long the reaper may take to finish what it was given at shutdown.
constexpr auto kReaperDrainTimeout = std::chrono::seconds(60);

}  // namespace

void SessionReaping::ReapLeftoverSessions() {
  const std::string dir = absl::StrCat(runtime_dir_, "/sessions");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> ids;
  while (dirent* e = readdir(d)) {
    if (IsValidSessionId(e->d_name)) ids.emplace_back(e->d_name);
  }
  closedir(d);
  for (const auto& id : ids) {
    LAZ_LOG_INFO << "session " << id << " was left by an earlier run; reaping it if its owner "
                 << "is gone";
    SendToReaper(id);
  }
}

void SessionReaping::OwnerGone(const std::string& id) {
  if (registry_->BeginReap(id)) {
    LAZ_LOG_WARNING << "session " << id << ": its lazaret run is gone; reaping the session";
    SendToReaper(id);
  }
}

void SessionReaping::ReaperExited(int wstatus) {
  LAZ_LOG_WARNING << "reaper (pid " << reaper_.pid << ") " << DescribeExit(wstatus);
  reaper_lost_ = true;
}

void SessionReaping::StopSessions() {
  const int asked = registry_->StopAll();
  if (asked > 0) LAZ_LOG_INFO << "asked " << asked << " live session(s) to end";
  const auto deadline = Clock::now() + kSessionStopGrace;
  while (!registry_->empty() && Clock::now() < deadline) {
    std::vector<pollfd> fds = {{reaper_.result_fd, POLLIN, 0}};
    std::vector<std::string> ids;
    for (const auto& [id, pidfd] : registry_->WatchedPidfds()) {
      fds.push_back({pidfd, POLLIN, 0});
      ids.push_back(id);
    }
    poll(fds.data(), fds.size(), 100);
    if (fds[0].revents != 0 && !ReadResult()) break;
    for (size_t i = 1; i < fds.size(); ++i) {
      // Give the owner a moment to unregister after it ended normally.
      if (fds[i].revents != 0 && registry_->BeginReap(ids[i - 1])) SendToReaper(ids[i - 1]);
    }
  }
  registry_->ShutdownWatchers();
  // EOF ends the reaper once it has done every request it was sent.
  if (reaper_.request_fd >= 0) close(reaper_.request_fd);
  reaper_.request_fd = -1;
  const auto drain = Clock::now() + kReaperDrainTimeout;
  while (!reaper_lost_ && Clock::now() < drain) {
    pollfd p{reaper_.result_fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && !ReadResult()) break;
  }
  int status = 0;
  if (!reaper_lost_ && waitpid(reaper_.pid, &status, WNOHANG) == 0) {
    LAZ_LOG_WARNING << "the reaper did not finish in time; killing it";
    kill(reaper_.pid, SIGKILL);
    waitpid(reaper_.pid, &status, 0);
  }
  reaper_lost_ = true;
}

void SessionReaping::SendToReaper(const std::string& id) {
  const std::string req = EncodeReapRequest(id);
  if (reaper_.request_fd < 0 ||
      write(reaper_.request_fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    LAZ_LOG_ERROR << "session " << id
                  << ": could not hand it to the reaper: " << std::strerror(errno)
                  << "; run: lazaret clean";
  }
}

bool SessionReaping::ReadResult() {
  char buf[kReapResultSize];
  size_t got = 0;
  while (got < sizeof(buf)) {
    const ssize_t n = read(reaper_.result_fd, buf + got, sizeof(buf) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  auto result = ParseReapResult(std::string_view(buf, sizeof(buf)));
  if (!result.has_value()) return false;
  const auto& [id, code] = *result;
  if (code == 0) {
    LAZ_LOG_INFO << "session " << id << " reaped (containers removed, git written back)";
  } else if (code == kCleanOwnerAliveExitCode) {
    LAZ_LOG_INFO << "session " << id << ": its owner is alive; left alone";
  } else {
    LAZ_LOG_ERROR << "session " << id << ": reaping failed (lazaret clean --session exit " << code
                  << "); see above, and run: lazaret clean";
  }
  registry_->Forget(id);
  return true;
}

}  // namespace lazaret::supervisor
