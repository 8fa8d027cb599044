// libFuzzer target for the trace messages lazaret-netpolicyd reads from a
// sandbox's Sentry (services/netpolicyd/trace_message.h), which gVisor's
// threat model does not trust. Properties: nothing crashes or reads out of
// bounds; a decoded connect has a host address of its family and a process
// name of printable ASCII within its bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "services/netpolicyd/trace_message.h"

namespace np = lazaret::netpolicyd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)np::ParseTraceHandshake(bytes);
  (void)np::ParseInetSockaddr(bytes);
  auto m = np::ParseTraceMessage(bytes);
  if (!m.ok() || !m->connect.has_value()) return 0;
  const np::TraceConnect& c = *m->connect;
  if (!c.address.is_host()) abort();
  if (c.process.size() > 4 * np::kMaxTraceProcessName) abort();
  for (unsigned char ch : c.process) {
    if (ch < 0x20 || ch >= 0x7f) abort();
  }
  if (m->type != np::kTraceMessageConnect) abort();
  return 0;
}
