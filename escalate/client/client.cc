#include "escalate/client/client.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "escalate/client/exit_codes.h"
#include "escalate/client/tls_stream.h"
#include "services/wire/frame.h"
#include "services/wire/messages.h"
#include "services/wire/strict_json.h"
#include "services/common/fs/file.h"

namespace lazaret::escalation::client {
namespace {

void Note(absl::string_view text) {
  (void)fs::WriteAll(STDERR_FILENO, absl::StrCat("lazaret-escalate: ", text, "\n"));
}

// The exit status for a failure of the client itself.
int FailureExit(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnavailable:
      return kExitUnreachable;
    case absl::StatusCode::kDeadlineExceeded:
      return kExitTimedOut;
    default:
      return kExitProtocol;
  }
}

int Fail(const absl::Status& status) {
  Note(status.message());
  return FailureExit(status);
}

absl::StatusOr<std::string> NewRequestId() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError("getrandom failed");
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

// The request, checked by the broker's own parser before it is sent.
absl::StatusOr<std::string> BuildRequest(const Options& options, const std::string& profile,
                                         const std::string& request_id) {
  v1::EscalateRequest request;
  request.set_request_id(request_id);
  request.set_profile(profile);
  if (options.command.has_value()) {
    request.set_command(*options.command);
  } else {
    for (const std::string& arg : options.argv) request.add_argv(arg);
  }
  request.set_justification(options.justification);
  if (!options.cwd.empty()) {
    request.set_cwd(options.cwd);
  } else {
    char buf[PATH_MAX];
    if (getcwd(buf, sizeof(buf)) != nullptr) request.set_cwd(buf);
  }
  std::string json = SerializeRequest(request);
  if (json.empty()) return absl::InvalidArgumentError("the request is not valid UTF-8");
  if (json.size() > kMaxRequestFrame) {
    return absl::InvalidArgumentError(absl::StrCat("the request is ", json.size(),
                                                   " bytes, over the limit of ", kMaxRequestFrame));
  }
  auto checked = ParseRequest(json);
  if (!checked.ok()) return checked.status();
  return json;
}

// The exit status and output for the broker's final answer.
int Finish(const Options& options, const v1::EscalateResponse& response, bool approval_expired) {
  if (options.json) {
    (void)fs::WriteAll(STDOUT_FILENO, absl::StrCat(SerializeResponse(response), "\n"));
    return response.protocol_error() ? kExitProtocol : 0;
  }
  if (response.protocol_error()) {
    Note(absl::StrCat("the broker refused the request: ", response.reason()));
    return kExitProtocol;
  }
  if (!response.approved()) {
    if (approval_expired) {
      Note(absl::StrCat("no approval in time: ", response.reason()));
      return kExitTimedOut;
    }
    Note(absl::StrCat("denied: ", response.reason()));
    return kExitDenied;
  }
  if (!fs::WriteAll(STDOUT_FILENO, response.stdout()).ok()) {
    Note("could not write the host command's output");
  }
  (void)fs::WriteAll(STDERR_FILENO, response.stderr());
  if (response.stdout_truncated()) Note("the host command's stdout was truncated (1 MiB kept)");
  if (response.stderr_truncated()) Note("the host command's stderr was truncated (1 MiB kept)");
  if (response.timed_out()) {
    Note("the host command ran past the host's timeout and was stopped");
    return kExitHostTimeout;
  }
  if (response.exit_code() < 0 || response.exit_code() > 255) {
    Note(absl::StrCat("the broker sent exit code ", response.exit_code(), ", not 0-255"));
    return kExitProtocol;
  }
  return response.exit_code();
}

}  // namespace

int Run(const Options& options) {
  Deadline deadline;
  if (options.timeout_seconds.has_value()) {
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*options.timeout_seconds);
  }
  auto request_id = NewRequestId();
  if (!request_id.ok()) return Fail(request_id.status());
  // The command line is judged before the certificates are looked at, so
  // a wrong one is a usage error wherever the client runs (with the
  // longest profile name, so that the size check is the stricter one).
  if (auto usage = BuildRequest(options, std::string(32, 'p'), *request_id); !usage.ok()) {
    Note(usage.status().message());
    return kExitUsage;
  }
  auto identity = ClientIdentity::Load(options.certs_dir);
  if (!identity.ok()) return Fail(identity.status());
  auto request = BuildRequest(options, (*identity)->profile(), *request_id);
  if (!request.ok()) return Fail(request.status());

  auto stream = TlsStream::Connect(**identity, options.endpoint, deadline);
  if (!stream.ok()) return Fail(stream.status());
  if (absl::Status s = WriteFrame(**stream, *request); !s.ok()) return Fail(s);

  bool waiting_shown = false;
  int64_t approval_deadline = 0;
  while (true) {
    auto payload = ReadFrame(**stream, kMaxServerFrame);
    if (!payload.ok()) {
      if (payload.status().code() == absl::StatusCode::kOutOfRange) {
        return Fail(absl::DataLossError("the broker closed the connection without a result"));
      }
      if (payload.status().code() == absl::StatusCode::kDeadlineExceeded) {
        Note(absl::StrCat("gave up after ", *options.timeout_seconds,
                          " s (--timeout) waiting for the host"));
        return kExitTimedOut;
      }
      return Fail(payload.status());
    }
    auto frame = ParseServerFrame(*payload);
    if (!frame.ok()) {
      return Fail(absl::DataLossError(
          absl::StrCat("bad frame from the broker: ", frame.status().message())));
    }
    if (frame->has_pending()) {
      approval_deadline = frame->pending().deadline_unix();
      if (!waiting_shown) {
        const int64_t left = std::max<int64_t>(0, approval_deadline - time(nullptr));
        Note(absl::StrCat("waiting for approval on the host (request ", *request_id,
                          ", denied after ", left, " s)"));
        waiting_shown = true;
      }
      continue;
    }
    const v1::EscalateResponse& response = frame->result();
    if (response.request_id() != *request_id) {
      return Fail(absl::DataLossError(absl::StrCat("the broker answered another request: ",
                                                   QuoteForError(response.request_id()))));
    }
    return Finish(options, response, !response.approved() && response.approval_expired());
  }
}

}  // namespace lazaret::escalation::client
