// The deadline of one gRPC call. Header-only, for every process that is a
// gRPC client (services, the session worker, the CLI); it touches nothing
// but the call's context.
#ifndef LAZARET_SERVICES_COMMON_GRPC_DEADLINE_H_
#define LAZARET_SERVICES_COMMON_GRPC_DEADLINE_H_

#include <chrono>

#include <grpcpp/client_context.h>

namespace lazaret {

// Every call between Lazaret's processes has a deadline, so that a peer
// that hangs (or is stopped) fails the call instead of the caller. Whole
// seconds convert implicitly.
inline void SetDeadline(grpc::ClientContext* ctx, std::chrono::milliseconds timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_GRPC_DEADLINE_H_
