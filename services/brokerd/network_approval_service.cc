#include "services/brokerd/network_approval_service.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;
namespace na = ::lazaret::netapproval::v1;
namespace cfg = ::lazaret::config::v1;

using Record = pb::AuditRecord;

bool HasNoControlChar(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f;
  });
}

// An address as text: hex digits, '.', ':' only (IPv4 or IPv6).
bool IsAddressText(const std::string& s) {
  if (s.empty() || s.size() > 45) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' ||
           c == ':';
  });
}

grpc::ClientContext* WithDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + kHostCallTimeout);
  return ctx;
}

cfg::NameAllowRequest NameAllowFor(const SessionFacts& facts, const std::string& name) {
  cfg::NameAllowRequest req;
  req.mutable_selector()->set_workspace_dir(facts.record.workspace());
  req.mutable_selector()->set_explicit_config(facts.record.explicit_config());
  req.set_profile(facts.record.profile());
  req.set_name(name);
  return req;
}

}  // namespace

absl::Status CheckAskRequest(const na::AskRequest& request) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(request.session_id()));
  if (!vocab::IsPlainName(request.name())) {
    return absl::InvalidArgumentError(
        "name must be a lowercase DNS name of [a-z0-9_-] labels (at most 253 octets)");
  }
  if (request.query_types_size() > 2) {
    return absl::InvalidArgumentError("query_types holds at most A and AAAA");
  }
  for (const std::string& type : request.query_types()) {
    if (type != "A" && type != "AAAA") {
      return absl::InvalidArgumentError("query_types holds only \"A\" and \"AAAA\"");
    }
  }
  if (request.addresses_size() > static_cast<int>(kMaxAskAddresses)) {
    return absl::InvalidArgumentError(
        absl::StrCat("addresses holds at most ", kMaxAskAddresses, " entries"));
  }
  for (const auto& a : request.addresses()) {
    if (!IsAddressText(a.address())) {
      return absl::InvalidArgumentError("an address is not an IPv4 or IPv6 address");
    }
    if (a.rule_text().size() > kMaxRuleTextBytes || !HasNoControlChar(a.rule_text())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an address's rule_text is over ", kMaxRuleTextBytes, " bytes or holds a control"));
    }
  }
  if (request.timeout_seconds() > kMaxAskTimeoutSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout_seconds is at most ", kMaxAskTimeoutSeconds));
  }
  return absl::OkStatus();
}

NetworkApprovalDeps ConfigdNetworkApprovalDeps(const std::string& runtime_dir, AuditLog* audit) {
  NetworkApprovalDeps deps;
  deps.look_up = [runtime_dir](const std::string& id) { return LookUpSession(runtime_dir, id); };
  auto call = [runtime_dir](const SessionFacts& facts, const std::string& name,
                            const std::string* before) -> absl::StatusOr<cfg::NameAllowPreview> {
    auto stub =
        cfg::ConfigService::NewStub(DialUnix(ServiceSocketPath(runtime_dir, kConfigdService)));
    grpc::ClientContext ctx;
    cfg::NameAllowRequest req = NameAllowFor(facts, name);
    cfg::NameAllowPreview out;
    grpc::Status st;
    if (before == nullptr) {
      st = stub->PreviewNameAllow(WithDeadline(&ctx), req, &out);
    } else {
      req.set_before_sha256(*before);
      st = stub->ApplyNameAllow(WithDeadline(&ctx), req, &out);
    }
    if (!st.ok()) {
      absl::Status s = FromGrpcStatus(st);
      return absl::Status(
          s.code(), absl::StrCat("lazaret-configd ",
                                 before == nullptr ? "PreviewNameAllow" : "ApplyNameAllow", ": ",
                                 s.message()));
    }
    return out;
  };
  deps.preview = [call](const SessionFacts& facts, const std::string& name) {
    return call(facts, name, nullptr);
  };
  deps.apply = [call](const SessionFacts& facts, const std::string& name,
                      const std::string& before) { return call(facts, name, &before); };
  if (audit != nullptr) {
    deps.audit = [audit](const Record& record) { return audit->Append(record); };
  }
  return deps;
}

NetworkApprovalService::NetworkApprovalService(RequestBook* book, NetworkApprovalDeps deps)
    : book_(book), deps_(std::move(deps)) {}

grpc::Status NetworkApprovalService::Ask(grpc::ServerContext* ctx, const na::AskRequest* req,
                                         na::AskResponse* resp) {
  absl::StatusOr<na::AskResponse> out = Decide(*req, [ctx] { return ctx->IsCancelled(); });
  if (!out.ok()) return ToGrpcStatus(out.status());
  *resp = *std::move(out);
  return grpc::Status::OK;
}

void NetworkApprovalService::Audit(const SessionFacts& facts, const pb::PendingRequest& pending,
                                   Record::Decision decision, const pb::Approver* approver,
                                   const std::string& reason) {
  if (!deps_.audit) return;
  Record record;
  record.set_time(absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone()));
  record.set_session_id(pending.session_id());
  record.set_profile(facts.record.profile());
  record.set_workspace(facts.record.workspace());
  record.set_request_id(pending.request_id());
  record.set_network_name(pending.network().name());
  record.set_decision(decision);
  if (approver != nullptr) *record.mutable_approver() = *approver;
  record.set_reason(reason);
  if (absl::Status s = deps_.audit(record); !s.ok()) {
    LAZ_LOG_ERROR << "session " << pending.session_id()
                  << ": the audit record of a network request was not written: " << s.message();
  }
}

absl::StatusOr<na::AskResponse> NetworkApprovalService::Decide(const na::AskRequest& request,
                                                               const std::function<bool()>& gone) {
  LAZ_RETURN_IF_ERROR(CheckAskRequest(request));
  absl::StatusOr<SessionFacts> facts = deps_.look_up(request.session_id());
  if (!facts.ok()) {
    return absl::Status(facts.status().code(),
                        absl::StrCat("session ", request.session_id(),
                                     " cannot be asked about: ", facts.status().message()));
  }
  if (!IsLiveSessionState(facts->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", request.session_id(), " is not live"));
  }
  const uint32_t timeout =
      request.timeout_seconds() == 0 ? kDefaultAskTimeoutSeconds : request.timeout_seconds();
  const absl::Time received = absl::Now();

  pb::PendingRequest pending;
  pending.set_request_id(absl::StrCat("net-", next_.fetch_add(1)));
  pending.set_profile(facts->record.profile());
  pending.set_session_id(request.session_id());
  pending.set_workspace(facts->record.workspace());
  pending.set_received_unix(absl::ToUnixSeconds(received));
  // Rounded up: the book waits until the earlier of this and the exact
  // expiry below, so the whole second is never cut short.
  pending.set_deadline_unix(absl::ToUnixSeconds(received + absl::Seconds(timeout)) + 1);
  pb::NetworkRequest& network = *pending.mutable_network();
  network.set_name(request.name());
  // Checked above to be [a-z0-9._-] only: nothing to escape.
  network.set_name_escaped(request.name());
  *network.mutable_query_types() = request.query_types();
  *network.mutable_addresses() = request.addresses();

  na::AskResponse response;
  const SessionCounts counts = book_->Counts(request.session_id());
  const bool watched =
      counts.approvers_terminal + counts.approvers_inline + counts.approvers_script > 0;
  if (!watched && !request.unattended_wait()) {
    response.set_outcome(na::AskResponse::OUTCOME_NO_APPROVER);
    response.set_resolution("no approver attached: refused (ask_unattended = deny)");
    Audit(*facts, pending, Record::DECISION_REFUSED, nullptr, response.resolution());
    return response;
  }
  if (deps_.preview) {
    // No preview, no profile scope: the approver can still allow for the
    // session or once.
    absl::StatusOr<cfg::NameAllowPreview> preview = deps_.preview(*facts, request.name());
    if (preview.ok() && !preview->diff().empty() && !preview->before_sha256().empty()) {
      network.set_profile_diff(preview->diff());
      network.set_profile_file(preview->file());
      network.set_profile_sha256(preview->before_sha256());
    } else if (!preview.ok()) {
      LAZ_LOG_INFO << "session " << request.session_id() << ": no profile scope offered for "
                   << request.name() << ": " << preview.status().message();
    }
  }
  absl::StatusOr<RequestHandle> handle = book_->Add(pending);
  if (!handle.ok()) {
    Audit(*facts, pending, Record::DECISION_REFUSED, nullptr,
          std::string(handle.status().message()));
    return handle.status();
  }
  absl::StatusOr<Decision> decision =
      book_->WaitForDecision(*handle, received + absl::Seconds(timeout), gone);
  if (!decision.ok()) {
    Audit(*facts, pending, Record::DECISION_REFUSED, nullptr,
          std::string(decision.status().message()));
    book_->Complete(*handle, Record(), "", "");
    return decision.status();
  }
  *response.mutable_approver() = decision->approver;
  response.set_resolution(decision->resolution);
  Record::Decision audited = Record::DECISION_REFUSED;
  switch (decision->kind) {
    case Decision::Kind::kNameAllowed:
      audited = Record::DECISION_NAME_ALLOWED;
      switch (decision->scope) {
        case pb::AllowName::SCOPE_ONCE:
          response.set_outcome(na::AskResponse::OUTCOME_ONCE);
          break;
        case pb::AllowName::SCOPE_PROFILE: {
          // The book consumed the decision; the file is written now, outside
          // its lock, and only if it is still the one the approver saw.
          const std::string& shown = network.profile_sha256();
          absl::Status written =
              !decision->before_sha256.empty() && decision->before_sha256 != shown
                  ? absl::FailedPreconditionError("the approver saw another version of the file")
              : !deps_.apply ? absl::UnavailableError("no configd")
                             : deps_.apply(*facts, request.name(), shown).status();
          if (written.ok()) {
            response.set_outcome(na::AskResponse::OUTCOME_PROFILE);
            response.set_resolution(
                absl::StrCat(decision->resolution, " (written to ", network.profile_file(), ")"));
          } else {
            response.set_outcome(na::AskResponse::OUTCOME_SESSION);
            response.set_resolution(absl::StrCat(
                decision->resolution,
                absl::IsFailedPrecondition(written)
                    ? ": for this session (the profile file changed: not written)"
                    : absl::StrCat(": for this session (the profile file was not written: ",
                                   written.message(), ")")));
          }
          break;
        }
        default:
          response.set_outcome(na::AskResponse::OUTCOME_SESSION);
          break;
      }
      break;
    case Decision::Kind::kDenied:
    case Decision::Kind::kAborted:
      audited = decision->kind == Decision::Kind::kDenied ? Record::DECISION_DENIED
                                                          : Record::DECISION_ABORTED;
      response.set_outcome(na::AskResponse::OUTCOME_DENIED);
      break;
    case Decision::Kind::kExpired:
      audited = Record::DECISION_EXPIRED;
      response.set_outcome(na::AskResponse::OUTCOME_EXPIRED);
      response.set_resolution(absl::StrCat("nobody answered within ", timeout, " s: refused"));
      break;
    case Decision::Kind::kSessionEnded:
      response.set_outcome(na::AskResponse::OUTCOME_SESSION_ENDED);
      break;
    case Decision::Kind::kApproved:
    case Decision::Kind::kEdited:  // refused by the book for a network request
      response.set_outcome(na::AskResponse::OUTCOME_DENIED);
      break;
  }
  Audit(*facts, pending, audited, &decision->approver, response.resolution());
  book_->Complete(*handle, Record(), "", "");
  return response;
}

}  // namespace lazaret::brokerd
