#include "clients/lazaret/attach/detach_keys.h"

namespace lazaret::cli::attach {
namespace {

constexpr std::string_view kPasteStart = "\x1b[200~";
constexpr std::string_view kPasteEnd = "\x1b[201~";

}  // namespace

void DetachKeys::Track(char c) {
  const std::string_view want = in_paste_ ? kPasteEnd : kPasteStart;
  if (c == want[match_]) {
    if (++match_ == want.size()) {
      in_paste_ = !in_paste_;
      match_ = 0;
    }
    return;
  }
  // ESC restarts a match; anything else ends it.
  match_ = c == '\x1b' ? 1 : 0;
}

DetachKeys::Result DetachKeys::Feed(std::string_view keys) {
  Result r;
  for (size_t i = 0; i < keys.size(); ++i) {
    const char c = keys[i];
    if (holding_) {
      holding_ = false;
      if (c == 'd' || c == 'i') {
        r.action = c == 'd' ? Action::kDetach : Action::kTakeInput;
        r.consumed = i + 1;
        return r;
      }
      r.send.push_back(kDetachPrefix);
      Track(kDetachPrefix);
      r.send.push_back(c);
      Track(c);
      continue;
    }
    if (c == kDetachPrefix && !in_paste_) {
      holding_ = true;
      continue;
    }
    r.send.push_back(c);
    Track(c);
  }
  r.consumed = keys.size();
  return r;
}

}  // namespace lazaret::cli::attach
