// The keys of an attached terminal, on their way to a session: Ctrl-\ (0x1c)
// is a prefix the attach client keeps until the next key decides -
// `d` detaches, `i` takes the input, anything else sends both bytes as
// typed (Ctrl-\ Ctrl-\ too: the agent gets both). Inside a bracketed paste
// (ESC [ 200 ~ .. ESC [ 201 ~ in the input, sent by the terminal when the
// agent switched paste brackets on) nothing is a prefix: pasted text never
// detaches.
//
// Runs in the `lazaret` CLI (run, attach), as the user, on the
// developer's own keys: trusted, only scanned. State is a few bytes.
#ifndef LAZARET_CLIENTS_LAZARET_ATTACH_DETACH_KEYS_H_
#define LAZARET_CLIENTS_LAZARET_ATTACH_DETACH_KEYS_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace lazaret::cli::attach {

inline constexpr char kDetachPrefix = '\x1c';  // Ctrl-backslash

class DetachKeys {
 public:
  enum class Action { kNone, kDetach, kTakeInput };

  struct Result {
    // The keys for the session, in order. With an action, the keys typed
    // before it (those after it are not consumed: see `consumed`).
    std::string send;
    Action action = Action::kNone;
    // How many bytes of the input were consumed; the rest is fed again by
    // the caller after acting.
    size_t consumed = 0;
  };

  // Scans keys as read (any chunking). Stops at the first action.
  Result Feed(std::string_view keys);

  // Whether a prefix is held waiting for its next key.
  bool holding() const { return holding_; }

 private:
  // Tracks the paste brackets over `c`, a byte that is sent.
  void Track(char c);

  bool holding_ = false;
  bool in_paste_ = false;
  // The bytes of a possible bracket sequence matched so far.
  size_t match_ = 0;
};

}  // namespace lazaret::cli::attach

#endif  // LAZARET_CLIENTS_LAZARET_ATTACH_DETACH_KEYS_H_
