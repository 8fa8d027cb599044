// A hold on a session's network router (NetRouterService.Hold, served by
// lazaret-netrouter in the sidecar): while any hold is open the router keeps
// the namespace's routes; when the last one ends it closes the namespace
// (docs/networking.md). Runs in `lazaret run` and in the supervisor's
// session registry, each holding its own. Trusts the router socket's path
// (Lazaret's own session directory) and nothing the router sends but the
// confirmation.
#ifndef LAZARET_SERVICES_COMMON_ROUTER_HOLD_H_
#define LAZARET_SERVICES_COMMON_ROUTER_HOLD_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lazaret {

// One Hold on a session's router (NetRouterService.Hold), ended by
// destruction (or by the holder's death). The supervisor keeps one per
// attached session; `lazaret run` keeps its own for the session's life.
class RouterHold {
 public:
  // Opens the hold and waits (at most `timeout`) for the router to confirm.
  static absl::StatusOr<std::unique_ptr<RouterHold>> Open(const std::string& socket,
                                                          const std::string& holder,
                                                          std::chrono::milliseconds timeout);
  ~RouterHold();
  RouterHold(const RouterHold&) = delete;
  RouterHold& operator=(const RouterHold&) = delete;

 private:
  struct State;
  explicit RouterHold(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_ROUTER_HOLD_H_
