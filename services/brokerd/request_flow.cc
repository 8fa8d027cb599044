#include "services/brokerd/request_flow.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "services/brokerd/command/executor.h"
#include "services/brokerd/command/matcher.h"
#include "services/brokerd/command/operand_paths.h"
#include "services/brokerd/planted_check.h"
#include "services/common/log.h"
#include "services/vocab/escape.h"
#include "services/wire/frame.h"
#include "services/wire/messages.h"

namespace lazaret::brokerd {
namespace {

namespace apb = ::lazaret::approver::v1;
namespace epb = ::lazaret::escalation::v1;
using Record = apb::AuditRecord;

constexpr size_t kDrainBytes = 1 << 20;
constexpr absl::Duration kDrainTime = absl::Seconds(2);

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

// Why a request waits for a human: the judgement's reason, or first what
// the planted-code check found (planted_check.h).
std::string ReasonNotAuto(const command::Judgement& judgement,
                          const std::vector<std::string>& findings, bool git) {
  if (findings.empty()) return judgement.reason_not_auto;
  std::string reason =
      absl::StrCat("aimed at code this session planted: ", absl::StrJoin(findings, "; "));
  if (git) absl::StrAppend(&reason, "; git is never run there, so approving it will not run it");
  if (!judgement.auto_approved && !judgement.reason_not_auto.empty()) {
    absl::StrAppend(&reason, "; also: ", judgement.reason_not_auto);
  }
  return reason;
}

std::string Escaped(absl::string_view text, bool* any) {
  bool changed = false;
  std::string out = vocab::EscapeForDisplay(text, &changed);
  if (changed) *any = true;
  return out;
}

// The state of one exchange: what the sandbox sent, what was decided, what
// ran; it becomes the answer and the audit record.
class Exchange {
 public:
  Exchange(LiveSession& session, tls::TlsStream& stream)
      : session_(session), stream_(stream), received_(absl::Now()) {
    record_.set_session_id(session.id());
    record_.set_profile(session.facts().record.profile());
    record_.set_workspace(session.facts().record.workspace());
  }

  void Run();

 private:
  // Ends the exchange without running anything: the answer says why.
  void Refuse(Record::Decision decision, const std::string& reason, bool protocol_error);
  // Runs `command`, then answers.
  void Execute(const command::CheckedCommand& command);
  void Answer(epb::EscalateResponse response);
  // Reads and drops what the client still sends (at most kDrainBytes, for
  // at most kDrainTime).
  void Drain();
  void Finish();
  // The PHASE_STARTED record of what Execute is about to run.
  Record StartRecord() const;
  // Starts `command`, waits for it, answers (Execute, once it is audited).
  void RunCommand(const command::CheckedCommand& command);
  apb::PendingRequest Describe(const command::CheckedCommand& checked,
                               const command::Judgement& judgement) const;

  LiveSession& session_;
  tls::TlsStream& stream_;
  const absl::Time received_;
  epb::EscalateRequest request_;
  Record record_;
  std::optional<RequestHandle> handle_;
  bool expired_ = false;
  bool audited_ = true;   // false: rate limited (reported in aggregate)
  bool drain_ = false;    // the request frame was refused unread
  bool started_ = false;  // its PHASE_STARTED record is on disk
  std::string out_, err_;
  // The planted-code check (planted_check.h) when the request was judged,
  // the reason it waits for a human, and what the check right before the
  // run adds to the broker's environment (git only).
  std::vector<std::string> findings_;
  std::string reason_not_auto_;
  std::vector<std::string> run_env_;
  PlantedScope PlantedScopeOfSession() const {
    return {session_.facts().record.workspace(), session_.facts().record.started_unix()};
  }
  // The check again, right before `command` starts: false (the request
  // refused, the answer saying why) when it now finds what it must not run.
  bool CheckPlantedBeforeRun(const command::CheckedCommand& command);
};

void Exchange::Run() {
  // The session's rate comes first: every connection that passed the
  // preflight costs a token, malformed or not, so a flood is bounded before
  // any parsing. A rate-limited request is still read (its answer names
  // its id) but gets no audit line of its own; the guard reports them in
  // aggregate (docs/escalation.md "Limits").
  const absl::Status rate = session_.guard().TakeRequest(absl::Now());
  if (!rate.ok()) audited_ = false;
  if (const uint64_t n = session_.guard().RefusalsToReport(absl::Now()); n > 0) {
    LAZ_LOG_WARNING << "session " << session_.id() << ": " << n
                    << " escalation requests refused as rate limited since the last report";
  }
  // The frame and its JSON.
  absl::StatusOr<std::string> frame = escalation::ReadFrame(stream_, escalation::kMaxRequestFrame);
  if (!frame.ok()) {
    // Over the limit: the body is still on its way. It is read and dropped
    // after the answer (bounded), so that closing with it unread does not
    // reset the connection before the client has read why.
    drain_ = frame.status().code() == absl::StatusCode::kResourceExhausted;
    Refuse(Record::DECISION_REFUSED, absl::StrCat("bad request frame: ", frame.status().message()),
           true);
    return;
  }
  absl::StatusOr<epb::EscalateRequest> request = escalation::ParseRequest(*frame);
  if (!request.ok()) {
    Refuse(Record::DECISION_REFUSED, absl::StrCat("bad request: ", request.status().message()),
           true);
    return;
  }
  request_ = *std::move(request);
  if (!rate.ok()) {
    Refuse(Record::DECISION_REFUSED, std::string(rate.message()), false);
    return;
  }
  record_.set_request_id(request_.request_id());
  record_.set_command(request_.command());
  record_.mutable_argv()->Assign(request_.argv().begin(), request_.argv().end());
  record_.set_justification(request_.justification());
  const std::string& session_id = session_.id();
  if (request_.profile() != session_.facts().record.profile()) {
    Refuse(Record::DECISION_REFUSED,
           absl::StrCat("the request names profile '",
                        vocab::EscapeForDisplay(request_.profile(), nullptr),
                        "' but this sandbox's certificate is for profile '",
                        session_.facts().record.profile(), "'"),
           true);
    return;
  }
  // The request id is used once: the book spends it when the request
  // enters it, or Refuse() does when it never does.
  // The argument vector and where it runs.
  std::vector<std::string> argv;
  if (!request_.command().empty()) {
    absl::StatusOr<std::vector<std::string>> words =
        command::SplitRequestCommand(request_.command());
    if (!words.ok()) {
      Refuse(Record::DECISION_REFUSED, std::string(words.status().message()), false);
      return;
    }
    argv = *std::move(words);
    record_.mutable_argv()->Assign(argv.begin(), argv.end());
  } else {
    argv.assign(request_.argv().begin(), request_.argv().end());
  }
  absl::StatusOr<command::CheckedCommand> checked =
      command::CheckedCommand::Check(argv, session_.facts().record.workspace(), request_.cwd());
  if (!checked.ok()) {
    Refuse(Record::DECISION_REFUSED, std::string(checked.status().message()), false);
    return;
  }
  record_.set_binary(checked->binary().path);
  record_.set_cwd(checked->host_cwd());
  // Operands are checked for paths beneath the directory the command
  // will run in (the descriptor it will fchdir() to).
  const command::Judgement judgement =
      command::Judge(request_.command(), checked->argv(), checked->binary(), session_.entries(),
                     command::OperandsBeneath(checked->cwd_fd()));
  // Planted code: a request aimed at it is never auto-approved, and the
  // human is told what was found.
  findings_ = CheckPlanted(PlantedScopeOfSession(), *checked).findings;
  reason_not_auto_ =
      ReasonNotAuto(judgement, findings_, IsGitCommand(checked->binary(), checked->argv()));
  apb::PendingRequest pending = Describe(*checked, judgement);
  RequestBook& book = *session_.parts().book;

  if (judgement.auto_approved && findings_.empty()) {
    absl::StatusOr<RequestHandle> handle = book.AddRunning(pending);
    if (!handle.ok()) {
      Refuse(Record::DECISION_REFUSED, std::string(handle.status().message()), false);
      return;
    }
    handle_ = *handle;
    record_.set_decision(Record::DECISION_AUTO_APPROVED);
    record_.set_auto_approve_entry(judgement.entry_text);
    Execute(*checked);
    return;
  }

  // A human decides.
  record_.set_reason(reason_not_auto_);
  absl::StatusOr<RequestHandle> handle = book.Add(pending);
  if (!handle.ok()) {
    Refuse(Record::DECISION_REFUSED, std::string(handle.status().message()), false);
    return;
  }
  handle_ = *handle;
  const absl::Time expiry = absl::FromUnixSeconds(pending.deadline_unix());
  stream_.set_deadline(expiry + kAnswerSlack);
  epb::ServerFrame notice;
  notice.mutable_pending()->set_request_id(request_.request_id());
  notice.mutable_pending()->set_reason(reason_not_auto_);
  notice.mutable_pending()->set_deadline_unix(pending.deadline_unix());
  if (absl::Status st = escalation::WriteFrame(stream_, escalation::SerializeServerFrame(notice));
      !st.ok()) {
    LAZ_LOG_INFO << "session " << session_id << ": request " << request_.request_id()
                 << ": the client is gone: " << st.message();
  }
  absl::StatusOr<Decision> decision = book.WaitForDecision(*handle_, expiry);
  if (!decision.ok()) {
    Refuse(Record::DECISION_REFUSED, std::string(decision.status().message()), false);
    return;
  }
  *record_.mutable_approver() = decision->approver;
  switch (decision->kind) {
    case Decision::Kind::kApproved:
      record_.set_decision(Record::DECISION_APPROVED);
      Execute(*checked);
      return;
    case Decision::Kind::kEdited: {
      record_.set_decision(Record::DECISION_EDITED);
      const std::shared_ptr<const command::CheckedCommand>& edited = decision->edited->checked;
      if (edited == nullptr) {
        Refuse(Record::DECISION_REFUSED, "the edited command was not checked", false);
        return;
      }
      record_.set_binary(edited->binary().path);
      record_.set_cwd(edited->host_cwd());
      Execute(*edited);
      return;
    }
    case Decision::Kind::kDenied:
      Refuse(Record::DECISION_DENIED,
             decision->reason.empty() ? "denied by " + DescribeApprover(decision->approver)
                                      : decision->reason,
             false);
      return;
    case Decision::Kind::kAborted:
      Refuse(Record::DECISION_ABORTED,
             absl::StrCat("the session was aborted by ", DescribeApprover(decision->approver),
                          decision->reason.empty() ? "" : ": ", decision->reason),
             false);
      return;
    case Decision::Kind::kExpired:
      expired_ = true;
      Refuse(Record::DECISION_EXPIRED,
             absl::StrCat("nobody answered within ",
                          session_.facts().profile.escalation().approval_timeout_seconds(),
                          " s (approval_timeout); denied"),
             false);
      return;
    case Decision::Kind::kSessionEnded:
      Refuse(Record::DECISION_REFUSED, "the session ended before anyone answered", false);
      return;
    case Decision::Kind::kNameAllowed:  // the book refuses it for a command
      Refuse(Record::DECISION_REFUSED, "a name allowance does not run a command", false);
      return;
  }
}

apb::PendingRequest Exchange::Describe(const command::CheckedCommand& checked,
                                       const command::Judgement& judgement) const {
  apb::PendingRequest p;
  p.set_request_id(request_.request_id());
  p.set_profile(session_.facts().record.profile());
  p.set_session_id(session_.id());
  p.set_workspace(session_.facts().record.workspace());
  p.set_command(request_.command());
  p.set_justification(request_.justification());
  p.mutable_argv()->Assign(checked.argv().begin(), checked.argv().end());
  bool any = false;
  p.set_command_escaped(Escaped(request_.command(), &any));
  p.set_justification_escaped(Escaped(request_.justification(), &any));
  for (const std::string& a : checked.argv()) p.add_argv_escaped(Escaped(a, &any));
  p.set_had_invisible(any);
  p.set_binary(checked.binary().path);
  p.set_cwd(checked.host_cwd());
  p.set_reason_not_auto(reason_not_auto_);
  p.mutable_findings()->Assign(findings_.begin(), findings_.end());
  p.set_received_unix(absl::ToUnixSeconds(received_));
  const uint32_t timeout = session_.facts().profile.escalation().approval_timeout_seconds();
  p.set_deadline_unix(absl::ToUnixSeconds(received_) + (timeout == 0 ? 300 : timeout));
  return p;
}

bool Exchange::CheckPlantedBeforeRun(const command::CheckedCommand& command) {
  const PlantedReport now = CheckPlanted(PlantedScopeOfSession(), command);
  const bool git = IsGitCommand(command.binary(), command.argv());
  if (git && !now.findings.empty()) {
    Refuse(Record::DECISION_REFUSED,
           absl::StrCat("not run: git takes orders from the repository it runs in, and here that "
                        "is code this session planted: ",
                        absl::StrJoin(now.findings, "; "),
                        ". Inspect it on the host without running git in it"),
           false);
    return false;
  }
  if (const std::vector<std::string> fresh = NewFindings(findings_, now.findings); !fresh.empty()) {
    Refuse(Record::DECISION_REFUSED,
           absl::StrCat("not run: since the request was judged, the session planted code where it "
                        "would run: ",
                        absl::StrJoin(fresh, "; ")),
           false);
    return false;
  }
  // git, and anything a human approved at planted code (it may run git
  // itself), gets the git protections; only git the pin.
  run_env_.clear();
  if (git || !now.findings.empty()) run_env_ = GitProtectionEnvironment();
  if (git) run_env_.insert(run_env_.end(), now.git_pin_env.begin(), now.git_pin_env.end());
  return true;
}

void Exchange::Execute(const command::CheckedCommand& command) {
  if (!CheckPlantedBeforeRun(command)) return;
  record_.mutable_ran_argv()->Assign(command.argv().begin(), command.argv().end());
  // No record on disk, no run: what runs on the host is always in the log,
  // even when the broker or the host dies while it runs.
  if (absl::Status st = AppendThenRun(*session_.parts().audit, StartRecord(),
                                      [&] {
                                        started_ = true;
                                        RunCommand(command);
                                      });
      !st.ok()) {
    LAZ_LOG_ERROR << "session " << session_.id() << ": request " << request_.request_id()
                  << ": not run: the audit log: " << st.message();
    Refuse(Record::DECISION_REFUSED,
           absl::StrCat("the command was not run: the host's audit log could not be written (",
                        st.message(),
                        "); the user must make it writable again (free disk space, or remove "
                        "what stands in its place: docs/operations.md, Audit)"),
           false);
  }
}

void Exchange::RunCommand(const command::CheckedCommand& command) {
  const uint32_t timeout_s = session_.facts().profile.escalation().command_timeout_seconds();
  command::ExecLimits limits;
  limits.timeout = absl::Seconds(timeout_s == 0 ? 60 : timeout_s);
  stream_.set_deadline(absl::Now() + limits.timeout + limits.kill_grace + kAnswerSlack);
  absl::StatusOr<std::unique_ptr<command::RunningCommand>> running =
      command::RunningCommand::Start(command, limits, run_env_);
  if (!running.ok()) {
    Refuse(Record::DECISION_REFUSED,
           absl::StrCat("the command could not be started: ", running.status().message()), false);
    return;
  }
  if (!session_.Register(running->get())) {
    (*running)->Cancel();
  }
  if (handle_) session_.parts().book->Started(*handle_);
  command::ExecResult result = (*running)->Wait();
  session_.Unregister(running->get());
  record_.set_ran(true);
  record_.set_exit_code(result.exit_code);
  record_.set_timed_out(result.timed_out);
  record_.set_stdout_truncated(result.out_truncated);
  record_.set_stderr_truncated(result.err_truncated);
  record_.set_stdout_bytes(result.out_bytes);
  record_.set_stderr_bytes(result.err_bytes);
  record_.set_run_ms(absl::ToInt64Milliseconds(result.run_time));
  if (result.cancelled) record_.set_reason("stopped: the session ended while it ran");
  epb::EscalateResponse r;
  r.set_request_id(request_.request_id());
  r.set_approved(true);
  r.set_exit_code(result.exit_code);
  r.set_stdout(result.out);
  r.set_stderr(result.err);
  r.set_stdout_truncated(result.out_truncated);
  r.set_stderr_truncated(result.err_truncated);
  r.set_timed_out(result.timed_out);
  r.mutable_argv()->Assign(command.argv().begin(), command.argv().end());
  if (result.timed_out) {
    r.set_reason(absl::StrCat("the command ran longer than ", timeout_s,
                              " s (command_timeout) and was stopped"));
  }
  out_ = std::move(result.out);
  err_ = std::move(result.err);
  Answer(std::move(r));
}

void Exchange::Refuse(Record::Decision decision, const std::string& reason, bool protocol_error) {
  if (!handle_ && !request_.request_id().empty()) {
    // Refused before it entered the book: its id is spent all the same.
    (void)session_.parts().book->UseRequestId(session_.id(), request_.request_id());
  }
  record_.set_decision(decision);
  record_.set_reason(reason);
  epb::EscalateResponse r;
  r.set_request_id(request_.request_id());
  r.set_approved(false);
  r.set_reason(reason);
  r.set_protocol_error(protocol_error);
  r.set_approval_expired(expired_);
  Answer(std::move(r));
}

void Exchange::Answer(epb::EscalateResponse response) {
  epb::ServerFrame frame;
  *frame.mutable_result() = std::move(response);
  if (absl::Status st = escalation::WriteFrame(stream_, escalation::SerializeServerFrame(frame));
      !st.ok()) {
    LAZ_LOG_INFO << "session " << session_.id() << ": request " << request_.request_id()
                 << ": answering: " << st.message();
  } else {
    if (drain_) Drain();
    (void)stream_.Close();
  }
  Finish();
}

void Exchange::Drain() {
  stream_.set_deadline(absl::Now() + kDrainTime);
  char buf[16 << 10];
  for (size_t total = 0; total < kDrainBytes;) {
    absl::StatusOr<size_t> n = stream_.Read(buf, sizeof buf);
    if (!n.ok() || *n == 0) return;
    total += *n;
  }
}

Record Exchange::StartRecord() const {
  Record start = record_;
  const absl::Time now = absl::Now();
  start.set_time(Rfc3339(now));
  start.set_duration_ms(absl::ToInt64Milliseconds(now - received_));
  start.set_phase(Record::PHASE_STARTED);
  return start;
}

void Exchange::Finish() {
  const absl::Time now = absl::Now();
  record_.set_time(Rfc3339(now));
  record_.set_duration_ms(absl::ToInt64Milliseconds(now - received_));
  if (started_) record_.set_phase(Record::PHASE_FINISHED);
  if (audited_) {
    if (absl::Status st = session_.parts().audit->Append(record_); !st.ok()) {
      LAZ_LOG_ERROR << "session " << session_.id() << ": request " << request_.request_id()
                    << ": the audit log: " << st.message();
    }
  }
  if (handle_) {
    session_.parts().book->Complete(*handle_, record_, std::move(out_), std::move(err_));
  }
}

}  // namespace

void ServeConnection(LiveSession& session, fs::UniqueFd conn) {
  absl::StatusOr<std::unique_ptr<tls::TlsStream>> stream = session.parts().acceptor->Establish(
      std::move(conn), session.endpoint().expected_peer(), absl::Now() + tls::kHandshakeTimeout);
  if (!stream.ok()) {
    // Nothing of the peer's was read; there is no request to audit.
    LAZ_LOG_WARNING << "session " << session.id()
                    << ": connection refused before any payload: " << stream.status().message();
    return;
  }
  Exchange(session, **stream).Run();
}

absl::StatusOr<EditedCommand> CheckEdit(const approver::v1::Edit& edit,
                                        const approver::v1::PendingRequest& pending) {
  std::vector<std::string> argv;
  if (!edit.command().empty() && edit.argv_size() > 0) {
    return absl::InvalidArgumentError("an edit gives a command or an argv, not both");
  }
  if (!edit.command().empty()) {
    absl::StatusOr<std::vector<std::string>> words = command::SplitRequestCommand(edit.command());
    if (!words.ok()) return words.status();
    argv = *std::move(words);
  } else {
    argv.assign(edit.argv().begin(), edit.argv().end());
  }
  // The request's working directory, as the sandbox named it.
  std::string sandbox_cwd = command::kSandboxWorkspace;
  if (absl::StartsWith(pending.cwd(), pending.workspace() + "/")) {
    absl::StrAppend(&sandbox_cwd, pending.cwd().substr(pending.workspace().size()));
  }
  absl::StatusOr<command::CheckedCommand> checked =
      command::CheckedCommand::Check(std::move(argv), pending.workspace(), sandbox_cwd);
  if (!checked.ok()) return checked.status();
  EditedCommand e;
  e.argv = checked->argv();
  e.binary = checked->binary().path;
  e.checked = std::make_shared<const command::CheckedCommand>(*std::move(checked));
  return e;
}

approver::v1::ParseCommandResponse ParseForApprover(
    const std::string& text, const std::vector<command::AutoApproveEntry>* entries) {
  approver::v1::ParseCommandResponse r;
  absl::StatusOr<std::vector<std::string>> words = command::SplitRequestCommand(text);
  if (!words.ok()) {
    r.set_error(std::string(words.status().message()));
    return r;
  }
  for (const std::string& w : *words) {
    r.add_argv(w);
    r.add_argv_escaped(vocab::EscapeForDisplay(w, nullptr));
  }
  absl::StatusOr<command::ResolvedBinary> binary = command::ResolveCommandName((*words)[0]);
  if (!binary.ok()) {
    r.set_error(std::string(binary.status().message()));
    return r;
  }
  r.set_binary(binary->path);
  r.set_ok(true);
  if (entries != nullptr) {
    // No working directory here: a word after a prefix entry is not
    // judged auto-approvable (Judge's empty path check).
    const command::Judgement j = command::Judge(text, *words, *binary, *entries, {});
    r.set_auto_approved(j.auto_approved);
    r.set_reason_not_auto(j.reason_not_auto);
  }
  return r;
}

}  // namespace lazaret::brokerd
