// One request the egress proxy saw, as the request log keeps it: what was
// asked, what was decided and by which rule, which secrets went out (by
// name, never value). Written by the HTTP/1.1 and HTTP/2 handlers; the
// service turns it into lazaret.egress.v1.RequestRecord.
#ifndef LAZARET_SERVICES_EGRESSD_REQUEST_LOG_H_
#define LAZARET_SERVICES_EGRESSD_REQUEST_LOG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lazaret::egressd {

struct RequestRecord {
  int64_t start_unix_ms = 0;
  std::string protocol;  // "HTTP/1.1" or "HTTP/2"
  std::string host;      // the request's host, lower case, no port
  std::string method;    // printable (text_scan-escaped by the writer)
  std::string path;      // the request target's path and query, escaped
  int status = 0;        // the status returned to the sandbox; 0 = none (aborted)
  uint64_t request_bytes = 0;   // request body bytes forwarded
  uint64_t response_bytes = 0;  // response body bytes returned
  int64_t duration_ms = 0;      // until the response's end (or abort)
  std::vector<std::string> secrets;  // names of the secrets injected
  std::string rule;     // which rule decided: RequestGuard's GuardDecision::rule
  std::string refused;  // empty when forwarded; else why the proxy refused or aborted
};

using RequestLogSink = std::function<void(RequestRecord)>;

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_REQUEST_LOG_H_
