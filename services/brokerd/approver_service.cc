#include "services/brokerd/approver_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lazaret/egress/v1/egress.grpc.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/session_client.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

// How often a watching handler looks whether its caller went away.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(200);

bool PrintableAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// No control character (C0, DEL); UTF-8 validity is protobuf's.
bool NoControl(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f;
  });
}

absl::Status CheckRequestId(const std::string& id) {
  if (IsValidRequestId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError("request_id must be 1 to 64 of [A-Za-z0-9._-]");
}

// The request an approver names: by the book's id when given (what the
// approvers show), else by the agent's request_id (scripts of before).
absl::Status CheckNamedRequest(const std::string& id, const std::string& request_id) {
  if (id.empty()) return CheckRequestId(request_id);
  if (IsValidBrokerId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError("id must be the broker's request id: q and 1 to 19 digits");
}

// Empty (every session) or a session id.
absl::Status CheckSessionFilter(const std::string& id) {
  return id.empty() ? absl::OkStatus() : CheckSessionId(id);
}

absl::Status CheckReason(const std::string& reason) {
  if (reason.size() > kMaxReasonBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the reason is longer than ", kMaxReasonBytes, " bytes"));
  }
  if (!NoControl(reason)) {
    return absl::InvalidArgumentError("the reason holds a control character");
  }
  return absl::OkStatus();
}

absl::Status CheckEdit(const pb::Edit& edit) {
  const bool has_command = !edit.command().empty();
  const bool has_argv = edit.argv_size() > 0;
  if (has_command == has_argv) {
    return absl::InvalidArgumentError("an edit gives exactly one of command and argv");
  }
  if (edit.command().size() > kMaxCommandBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the edited command is longer than ", kMaxCommandBytes, " bytes"));
  }
  if (edit.argv_size() > static_cast<int>(kMaxEditArgs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the edited argv has more than ", kMaxEditArgs, " elements"));
  }
  size_t total = 0;
  for (const auto& arg : edit.argv()) {
    if (arg.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("an edited argv element holds a NUL");
    }
    total += arg.size();
  }
  if (total > kMaxCommandBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the edited argv is longer than ", kMaxCommandBytes, " bytes"));
  }
  if (edit.command().find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("the edited command holds a NUL");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckApprover(const pb::Approver& approver) {
  if (!pb::Approver::Kind_IsValid(approver.kind())) {
    return absl::InvalidArgumentError("approver.kind is not a known kind");
  }
  if (approver.name().size() > kMaxApproverTextBytes || !PrintableAscii(approver.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("approver.name must be at most ", kMaxApproverTextBytes, " printable ASCII"));
  }
  if (approver.tty().size() > kMaxApproverTextBytes || !PrintableAscii(approver.tty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("approver.tty must be at most ", kMaxApproverTextBytes, " printable ASCII"));
  }
  if (approver.pid() < 0) return absl::InvalidArgumentError("approver.pid is negative");
  return absl::OkStatus();
}

absl::Status CheckDecideRequest(const pb::DecideRequest& request) {
  LAZ_RETURN_IF_ERROR(CheckNamedRequest(request.id(), request.request_id()));
  LAZ_RETURN_IF_ERROR(CheckApprover(request.approver()));
  switch (request.decision_case()) {
    case pb::DecideRequest::kApprove:
      return absl::OkStatus();
    case pb::DecideRequest::kDeny:
      return CheckReason(request.deny().reason());
    case pb::DecideRequest::kAbort:
      return CheckReason(request.abort().reason());
    case pb::DecideRequest::kEdit:
      return CheckEdit(request.edit());
    case pb::DecideRequest::kAllowName:
      if (request.allow_name().before_sha256().size() > 128 ||
          !PrintableAscii(request.allow_name().before_sha256())) {
        return absl::InvalidArgumentError("allow_name.before_sha256 is not a hash");
      }
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          "no decision: give approve, deny, edit, abort or allow_name");
  }
}

ApproverService::ApproverService(RequestBook* book, SessionView sessions, CommandParser parse,
                                 const AuditLog* audit)
    : book_(book), sessions_(std::move(sessions)), parse_(std::move(parse)), audit_(audit) {}

grpc::Status ApproverService::WatchPending(grpc::ServerContext* ctx,
                                           const pb::WatchPendingRequest* req,
                                           grpc::ServerWriter<pb::PendingEvent>* writer) {
  if (absl::Status s = CheckSessionFilter(req->session_id()); !s.ok()) return ToGrpcStatus(s);
  if (absl::Status s = CheckApprover(req->approver()); !s.ok()) return ToGrpcStatus(s);
  std::unique_ptr<PendingWatch> watch = book_->Watch(req->session_id(), req->approver().kind());
  // Tells the caller it is counted (a script can wait for that before the
  // request it means to decide is made).
  writer->SendInitialMetadata();
  while (!ctx->IsCancelled()) {
    pb::PendingEvent event;
    switch (watch->Wait(&event, absl::Now() + kWatchPoll)) {
      case PendingWatch::Next::kEvent:
        if (!writer->Write(event)) return grpc::Status::OK;  // the caller is gone
        break;
      case PendingWatch::Next::kTimeout:
        break;
      case PendingWatch::Next::kDropped:
        return ToGrpcStatus(absl::ResourceExhaustedError(
            "this watcher fell behind (too many unread events); watch again"));
      case PendingWatch::Next::kClosed:
        return ToGrpcStatus(absl::UnavailableError("lazaret-brokerd is stopping"));
    }
  }
  return grpc::Status::OK;
}

grpc::Status ApproverService::Decide(grpc::ServerContext*, const pb::DecideRequest* req,
                                     pb::DecideResponse* resp) {
  if (absl::Status s = CheckDecideRequest(*req); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<pb::DecideResponse> decided = book_->Decide(*req);
  if (!decided.ok()) return ToGrpcStatus(decided.status());
  *resp = *std::move(decided);
  return grpc::Status::OK;
}

grpc::Status ApproverService::ParseCommand(grpc::ServerContext*, const pb::ParseCommandRequest* req,
                                           pb::ParseCommandResponse* resp) {
  if (req->command().size() > kMaxCommandBytes) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("the command is longer than ", kMaxCommandBytes, " bytes")));
  }
  if (req->command().find('\0') != std::string::npos) {
    return ToGrpcStatus(absl::InvalidArgumentError("the command holds a NUL"));
  }
  if (absl::Status s = CheckSessionFilter(req->session_id()); !s.ok()) return ToGrpcStatus(s);
  *resp = parse_(*req);
  return grpc::Status::OK;
}

grpc::Status ApproverService::GetRequest(grpc::ServerContext*, const pb::GetRequestRequest* req,
                                         pb::RequestState* resp) {
  if (absl::Status s = CheckNamedRequest(req->id(), req->request_id()); !s.ok()) {
    return ToGrpcStatus(s);
  }
  absl::StatusOr<pb::RequestState> state =
      req->id().empty() ? book_->Get(req->request_id()) : book_->GetById(req->id());
  if (!state.ok()) return ToGrpcStatus(state.status());
  *resp = *std::move(state);
  return grpc::Status::OK;
}

grpc::Status ApproverService::ListSessions(grpc::ServerContext*, const pb::ListSessionsRequest*,
                                           pb::ListSessionsResponse* resp) {
  for (pb::SessionEndpoint& endpoint : sessions_()) {
    SessionCounts counts = book_->Counts(endpoint.session_id());
    endpoint.set_pending(counts.pending);
    endpoint.set_approvers_terminal(counts.approvers_terminal);
    endpoint.set_approvers_inline(counts.approvers_inline);
    endpoint.set_approvers_script(counts.approvers_script);
    *resp->add_sessions() = std::move(endpoint);
  }
  return grpc::Status::OK;
}

grpc::Status ApproverService::ReadAudit(grpc::ServerContext* ctx, const pb::ReadAuditRequest* req,
                                        grpc::ServerWriter<pb::AuditRecord>* writer) {
  if (absl::Status s = CheckSessionFilter(req->session_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<AuditScan> scan;
  if (req->last() == 0) {
    // Streamed as read: the whole log is never held.
    bool open = true;
    scan = ScanAudit(audit_->path(), req->session_id(), [&](pb::AuditRecord record) {
      if (open && !ctx->IsCancelled()) open = writer->Write(record);
    });
  } else {
    absl::StatusOr<AuditRead> read =
        brokerd::ReadAudit(audit_->path(), req->session_id(), req->last());
    if (read.ok()) {
      for (const auto& record : read->records) {
        if (!writer->Write(record)) break;
      }
      scan = read->scan;
    } else {
      scan = read.status();
    }
  }
  if (!scan.ok()) {
    if (absl::IsNotFound(scan.status())) return grpc::Status::OK;  // nothing audited yet
    return ToGrpcStatus(scan.status());
  }
  ctx->AddTrailingMetadata(kAuditUnparsableMetadata, absl::StrCat(scan->unparsable));
  return grpc::Status::OK;
}

grpc::Status ApproverService::WatchEgressLog(grpc::ServerContext* ctx,
                                             const pb::WatchEgressLogRequest* req,
                                             grpc::ServerWriter<netpolicy::v1::LogEntry>* writer) {
  if (!IsValidSessionId(req->session_id())) {
    return ToGrpcStatus(
        absl::InvalidArgumentError("session_id is not a session id (12 lowercase hex digits)"));
  }
  if (!egress_log_) {
    return ToGrpcStatus(absl::UnavailableError("this lazaret-brokerd does not serve egress logs"));
  }
  return egress_log_(ctx, req->session_id(), req->follow(),
                     [writer](const netpolicy::v1::LogEntry& e) { return writer->Write(e); });
}

grpc::Status ApproverService::WatchRequestLog(
    grpc::ServerContext* ctx, const pb::WatchEgressLogRequest* req,
    grpc::ServerWriter<egress::v1::RequestRecord>* writer) {
  if (!IsValidSessionId(req->session_id())) {
    return ToGrpcStatus(
        absl::InvalidArgumentError("session_id is not a session id (12 lowercase hex digits)"));
  }
  if (!request_log_) {
    return ToGrpcStatus(absl::UnavailableError("this lazaret-brokerd does not serve request logs"));
  }
  return request_log_(ctx, req->session_id(), req->follow(),
                      [writer](const egress::v1::RequestRecord& r) { return writer->Write(r); });
}

RequestLogSource EgressdRequestLog(const std::string& runtime_dir) {
  return [socket = ServiceSocketPath(runtime_dir, kEgressdService)](
             grpc::ServerContext* ctx, const std::string& session_id, bool follow,
             const std::function<bool(const egress::v1::RequestRecord&)>& write) {
    auto stub = egress::v1::EgressService::NewStub(DialUnix(socket));
    std::unique_ptr<grpc::ClientContext> call = grpc::ClientContext::FromServerContext(*ctx);
    egress::v1::WatchRequestsRequest request;
    request.set_session_id(session_id);
    request.set_follow(follow);
    std::unique_ptr<grpc::ClientReader<egress::v1::RequestRecord>> reader =
        stub->WatchRequests(call.get(), request);
    egress::v1::RequestRecord record;
    while (reader->Read(&record)) {
      if (!write(record)) {
        call->TryCancel();
        break;
      }
    }
    grpc::Status st = reader->Finish();
    if (st.error_code() == grpc::StatusCode::CANCELLED) return grpc::Status::OK;
    if (!st.ok()) {
      return grpc::Status(st.error_code(), absl::StrCat("lazaret-egressd: ", st.error_message()));
    }
    return st;
  };
}

EgressLogSource NetpolicydEgressLog(const std::string& runtime_dir) {
  return [socket = ServiceSocketPath(runtime_dir, kNetPolicydService)](
             grpc::ServerContext* ctx, const std::string& session_id, bool follow,
             const std::function<bool(const netpolicy::v1::LogEntry&)>& write) {
    auto stub = netpolicy::v1::NetPolicyService::NewStub(DialUnix(socket));
    // Cancelled with the approver's call.
    std::unique_ptr<grpc::ClientContext> call = grpc::ClientContext::FromServerContext(*ctx);
    netpolicy::v1::WatchLogRequest request;
    request.mutable_session()->set_id(session_id);
    request.set_follow(follow);
    std::unique_ptr<grpc::ClientReader<netpolicy::v1::LogEntry>> reader =
        stub->WatchLog(call.get(), request);
    netpolicy::v1::LogEntry entry;
    while (reader->Read(&entry)) {
      if (!write(entry)) {
        call->TryCancel();
        break;
      }
    }
    grpc::Status st = reader->Finish();
    if (st.error_code() == grpc::StatusCode::CANCELLED) return grpc::Status::OK;
    if (!st.ok()) {
      return grpc::Status(st.error_code(),
                          absl::StrCat("lazaret-netpolicyd: ", st.error_message()));
    }
    return st;
  };
}

}  // namespace lazaret::brokerd
