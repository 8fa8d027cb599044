#include "services/common/router_hold.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret {
namespace {

namespace nr = ::lazaret::netrouter::v1;

}  // namespace

struct RouterHold::State {
  grpc::ClientContext ctx;
  std::unique_ptr<nr::NetRouterService::Stub> stub;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool confirmed = false;
  bool ended = false;
  grpc::Status end_status;
};

absl::StatusOr<std::unique_ptr<RouterHold>> RouterHold::Open(const std::string& socket,
                                                             const std::string& holder,
                                                             std::chrono::milliseconds timeout) {
  auto state = std::make_shared<State>();
  state->stub = nr::NetRouterService::NewStub(DialUnix(socket));
  state->thread = std::thread([s = state.get(), holder] {
    nr::HoldRequest req;
    req.set_holder(holder);
    std::unique_ptr<grpc::ClientReader<nr::HoldEvent>> reader = s->stub->Hold(&s->ctx, req);
    nr::HoldEvent ev;
    if (reader->Read(&ev) && ev.state() == nr::HOLD_STATE_HELD) {
      std::lock_guard<std::mutex> lock(s->mu);
      s->confirmed = true;
      s->cv.notify_all();
    }
    while (reader->Read(&ev)) {
    }
    grpc::Status st = reader->Finish();
    std::lock_guard<std::mutex> lock(s->mu);
    s->ended = true;
    s->end_status = st;
    s->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait_for(lock, timeout, [&] { return state->confirmed || state->ended; });
  if (!state->confirmed) {
    std::string why = "no answer in time";
    if (state->ended) {
      why = state->end_status.error_code() == grpc::StatusCode::UNIMPLEMENTED
                ? "this router has no Hold (an older lazaret-netrouter); rebuild the sidecar "
                  "image: lazaret image build sidecar"
                : absl::StrCat(state->end_status.error_message(), " (code ",
                               state->end_status.error_code(), ")");
    }
    lock.unlock();
    state->ctx.TryCancel();
    state->thread.join();
    return absl::UnavailableError(
        absl::StrCat("the session's router on ", socket, " did not confirm a hold: ", why));
  }
  return std::unique_ptr<RouterHold>(new RouterHold(std::move(state)));
}

RouterHold::~RouterHold() {
  state_->ctx.TryCancel();
  if (state_->thread.joinable()) state_->thread.join();
}

}  // namespace lazaret
