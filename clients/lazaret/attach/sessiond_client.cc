#include "clients/lazaret/attach/sessiond_client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/grpc_deadline.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::attach {
namespace {

namespace pb = ::lazaret::session::v1;

constexpr char kService[] = "lazaret-sessiond";

}  // namespace

std::string SessiondSocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kSessiondService);
}

SessiondClient::SessiondClient(const std::string& socket)
    : socket_(socket), stub_(pb::SessionService::NewStub(DialUnix(socket))) {}

absl::Status SessiondClient::Explain(const char* rpc, const grpc::Status& s,
                                     std::chrono::seconds timeout) const {
  return ExplainServiceCall(kService, socket_, rpc, s, timeout);
}

absl::Status SessiondClient::Start(const pb::StartRequest& request,
                                   const std::function<void(const pb::StartEvent&)>& on_event) {
  grpc::ClientContext cc;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("the start was cancelled");
    start_context_ = &cc;
  }
  std::unique_ptr<grpc::ClientReader<pb::StartEvent>> reader = stub_->Start(&cc, request);
  pb::StartEvent event;
  while (reader->Read(&event)) on_event(event);
  const grpc::Status status = reader->Finish();
  {
    absl::MutexLock lock(&mu_);
    start_context_ = nullptr;
  }
  return Explain("Start", status, std::chrono::seconds(0));
}

void SessiondClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (start_context_ != nullptr) start_context_->TryCancel();
}

absl::StatusOr<pb::ListResponse> SessiondClient::ListAll() {
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  pb::ListResponse resp;
  LAZ_RETURN_IF_ERROR(Explain("List", stub_->List(&cc, pb::ListRequest(), &resp), kCallTimeout));
  return resp;
}

absl::StatusOr<std::vector<pb::SessionInfo>> SessiondClient::List() {
  LAZ_ASSIGN_OR_RETURN(pb::ListResponse resp, ListAll());
  return std::vector<pb::SessionInfo>(resp.sessions().begin(), resp.sessions().end());
}

absl::Status SessiondClient::Stop(const std::string& session_id, bool wait) {
  const std::chrono::seconds timeout = wait ? kStopTimeout : kCallTimeout;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  pb::StopRequest req;
  req.set_session_id(session_id);
  req.set_wait(wait);
  pb::StopResponse resp;
  return Explain("Stop", stub_->Stop(&cc, req, &resp), timeout);
}

absl::StatusOr<std::vector<std::string>> SessiondClient::Reap(const std::string& session_id) {
  grpc::ClientContext cc;
  SetDeadline(&cc, kReapTimeout);
  pb::ReapRequest req;
  req.set_session_id(session_id);
  pb::ReapResponse resp;
  LAZ_RETURN_IF_ERROR(Explain("Reap", stub_->Reap(&cc, req, &resp), kReapTimeout));
  return std::vector<std::string>(resp.notices().begin(), resp.notices().end());
}

absl::StatusOr<pb::SessionInfo> ChooseSession(const std::vector<pb::SessionInfo>& sessions,
                                              const std::string& arg) {
  std::vector<const pb::SessionInfo*> matches;
  for (const pb::SessionInfo& s : sessions) {
    if (s.id() == arg) return s;
    if (absl::StartsWith(s.id(), arg)) matches.push_back(&s);
  }
  if (matches.size() == 1) return *matches[0];
  if (sessions.empty()) {
    return absl::NotFoundError("no session is running (lazaret run starts one)");
  }
  std::string list;
  if (matches.empty()) {
    for (const pb::SessionInfo& s : sessions) matches.push_back(&s);
    if (!arg.empty()) {
      for (const pb::SessionInfo* s : matches) {
        absl::StrAppend(&list, "\n  ", s->id(), "  ", s->profile(), "  ", s->workspace());
      }
      return absl::NotFoundError(
          absl::StrCat("no session id starts with '", arg, "'; the sessions are:", list));
    }
  }
  for (const pb::SessionInfo* s : matches) {
    absl::StrAppend(&list, "\n  ", s->id(), "  ", s->profile(), "  ", s->workspace());
  }
  return absl::InvalidArgumentError(
      absl::StrCat(arg.empty() ? "several sessions are running"
                               : absl::StrCat("several sessions start with '", arg, "'"),
                   "; name one by its id or a unique prefix:", list));
}

}  // namespace lazaret::cli::attach
