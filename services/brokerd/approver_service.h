// lazaret.approver.v1.ApproverService: the terminal approver's and
// scripts' view of the broker's request book, on the owner-only
// brokerd.sock (GrpcUnixServer: every peer is the user). Runs in
// lazaret-brokerd, unprivileged. The peer is trusted to be the user, not to
// be well-formed: every id, name and text is checked here before it reaches
// the book, and an approver's self-description is only recorded, never
// believed for anything else.
#ifndef LAZARET_SERVICES_BROKERD_APPROVER_SERVICE_H_
#define LAZARET_SERVICES_BROKERD_APPROVER_SERVICE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"
#include "lazaret/egress/v1/egress.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "services/brokerd/audit_log.h"
#include "services/brokerd/pending.h"

namespace lazaret::brokerd {

// The sessions with an endpoint (session_id, profile, workspace, socket,
// auto_approve filled in); the service adds the book's counts.
using SessionView = std::function<std::vector<lazaret::approver::v1::SessionEndpoint>()>;
// The broker's reading of a command line (split, resolve, auto-approve);
// called with a checked request.
using CommandParser = std::function<lazaret::approver::v1::ParseCommandResponse(
    const lazaret::approver::v1::ParseCommandRequest&)>;

// Streams a session's egress log (lazaret-netpolicyd's WatchLog), calling
// `write` per entry until it returns false or the stream ends. `ctx` is
// the approver's call: its cancellation ends the stream.
using EgressLogSource = std::function<grpc::Status(
    grpc::ServerContext* ctx, const std::string& session_id, bool follow,
    const std::function<bool(const lazaret::netpolicy::v1::LogEntry&)>& write)>;

// The source that asks lazaret-netpolicyd on <runtime_dir>/netpolicyd.sock
// (same user: brokerd is one of its clients, like `lazaret net log`).
EgressLogSource NetpolicydEgressLog(const std::string& runtime_dir);

// Streams a session's request log (lazaret-egressd's WatchRequests), as
// EgressLogSource does the egress log.
using RequestLogSource = std::function<grpc::Status(
    grpc::ServerContext* ctx, const std::string& session_id, bool follow,
    const std::function<bool(const lazaret::egress::v1::RequestRecord&)>& write)>;

// The source that asks lazaret-egressd on <runtime_dir>/egressd.sock.
RequestLogSource EgressdRequestLog(const std::string& runtime_dir);

// Bounds on what an approver may send.
inline constexpr size_t kMaxApproverTextBytes = 64;   // Approver.name, tty
inline constexpr size_t kMaxReasonBytes = 1024;       // deny/abort reason
inline constexpr size_t kMaxCommandBytes = 64 << 10;  // an edit, ParseCommand
inline constexpr size_t kMaxEditArgs = 4096;

// Input checks, one per message (INVALID_ARGUMENT naming the field).
absl::Status CheckApprover(const lazaret::approver::v1::Approver& approver);
absl::Status CheckDecideRequest(const lazaret::approver::v1::DecideRequest& request);

class ApproverService final : public lazaret::approver::v1::ApproverService::Service {
 public:
  // Everything must outlive the service. `audit` is read through its path.
  ApproverService(RequestBook* book, SessionView sessions, CommandParser parse,
                  const AuditLog* audit);

  grpc::Status WatchPending(
      grpc::ServerContext* ctx, const lazaret::approver::v1::WatchPendingRequest* req,
      grpc::ServerWriter<lazaret::approver::v1::PendingEvent>* writer) override;
  grpc::Status Decide(grpc::ServerContext* ctx, const lazaret::approver::v1::DecideRequest* req,
                      lazaret::approver::v1::DecideResponse* resp) override;
  grpc::Status ParseCommand(grpc::ServerContext* ctx,
                            const lazaret::approver::v1::ParseCommandRequest* req,
                            lazaret::approver::v1::ParseCommandResponse* resp) override;
  grpc::Status GetRequest(grpc::ServerContext* ctx,
                          const lazaret::approver::v1::GetRequestRequest* req,
                          lazaret::approver::v1::RequestState* resp) override;
  grpc::Status ListSessions(grpc::ServerContext* ctx,
                            const lazaret::approver::v1::ListSessionsRequest* req,
                            lazaret::approver::v1::ListSessionsResponse* resp) override;
  grpc::Status ReadAudit(grpc::ServerContext* ctx,
                         const lazaret::approver::v1::ReadAuditRequest* req,
                         grpc::ServerWriter<lazaret::approver::v1::AuditRecord>* writer) override;
  // A pass-through of netpolicyd's WatchLog: the approver sees the same
  // entries `lazaret net log` prints (names and processes unescaped, as
  // the sandbox sent them: the approver escapes them for its screen).
  grpc::Status WatchEgressLog(
      grpc::ServerContext* ctx, const lazaret::approver::v1::WatchEgressLogRequest* req,
      grpc::ServerWriter<lazaret::netpolicy::v1::LogEntry>* writer) override;

  // A pass-through of egressd's WatchRequests (method, host and path as
  // the sandbox sent them).
  grpc::Status WatchRequestLog(
      grpc::ServerContext* ctx, const lazaret::approver::v1::WatchEgressLogRequest* req,
      grpc::ServerWriter<lazaret::egress::v1::RequestRecord>* writer) override;

  // Where WatchEgressLog reads from; unset, it answers UNAVAILABLE.
  void set_egress_log(EgressLogSource source) { egress_log_ = std::move(source); }
  // Where WatchRequestLog reads from; unset, it answers UNAVAILABLE.
  void set_request_log(RequestLogSource source) { request_log_ = std::move(source); }

 private:
  RequestBook* const book_;
  const SessionView sessions_;
  const CommandParser parse_;
  const AuditLog* const audit_;
  EgressLogSource egress_log_;
  RequestLogSource request_log_;
};

// Trailing metadata of ReadAudit: how many lines of the log did not parse
// (skipped).
inline constexpr char kAuditUnparsableMetadata[] = "lazaret-audit-unparsable-lines";

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_APPROVER_SERVICE_H_
