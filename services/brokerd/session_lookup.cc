#include "services/brokerd/session_lookup.h"

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd {
namespace {

namespace sv = ::lazaret::supervisor::v1;

}  // namespace

absl::StatusOr<SessionFacts> LookUpSession(const std::string& runtime_dir, const std::string& id) {
  LAZ_ASSIGN_OR_RETURN(sv::SessionInfo info, FetchSession(runtime_dir, id));
  if (info.state() == sv::SESSION_STATE_REAPING) {
    return absl::FailedPreconditionError(absl::StrCat("session ", id, " is ending"));
  }
  SessionFacts facts;
  facts.state = info.state();
  facts.record = std::move(*info.mutable_record());
  LAZ_ASSIGN_OR_RETURN(facts.profile, ResolveSessionProfile(runtime_dir, facts.record));
  return facts;
}

std::unique_ptr<SessionWatcher> WatchSessions(const std::string& runtime_dir, SessionEvents events,
                                              std::chrono::milliseconds retry) {
  SessionWatcher::Callbacks callbacks;
  callbacks.started = [started = events.started](const sv::SessionInfo& info) {
    const std::string& id = info.record().id();
    if (!CheckSessionId(id).ok() || !started) return;
    if (IsLiveSessionState(info.state())) started(id);
  };
  callbacks.ended = [ended = events.ended](const sv::SessionInfo& info) {
    const std::string& id = info.record().id();
    if (!CheckSessionId(id).ok()) {
      LAZ_LOG_WARNING << "the supervisor reported the end of a malformed session id";
      return;
    }
    if (ended) ended(id);
  };
  auto watcher = std::make_unique<SessionWatcher>(runtime_dir, std::move(callbacks), retry);
  watcher->Start();
  return watcher;
}

}  // namespace lazaret::brokerd
