// The developer's terminal as the attach client uses it: raw mode while
// attached, the bytes that put it back after a detach, and reading away the
// answers it still owes the agent. Runs in the `lazaret` CLI, as the user;
// what it reads back from the terminal is the terminal's own answer and the
// developer's keys, discarded.
#ifndef LAZARET_CLIENTS_LAZARET_ATTACH_TERMINAL_IO_H_
#define LAZARET_CLIENTS_LAZARET_ATTACH_TERMINAL_IO_H_

#include <termios.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/terminal/terminal_modes.h"

namespace lazaret::cli::attach {

// The terminal on `fd` in raw mode (cfmakeraw: every key is a byte for the
// session, none a signal for the client) until destroyed, which puts the
// saved mode back (TCSADRAIN).
class RawMode {
 public:
  static absl::StatusOr<std::unique_ptr<RawMode>> Enter(int fd);
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  RawMode(int fd, const termios& saved) : fd_(fd), saved_(saved) {}
  const int fd_;
  const termios saved_;
};

// What puts the terminal back when the agent's output stops reaching it:
// switches off the mouse reports, focus events and paste brackets the
// agent set and leaves its alternate screen; on a detach also the cursor
// keys, keypad, cursor and colours (the agent may be mid-way through
// setting any of them) and a new line for the shell's prompt. Empty at a
// session's end when the agent left none of them on.
std::string LeaveSequence(const terminal::TerminalModes& modes, bool detaching);

// Asks the terminal for its primary device attributes (DA1) and reads, for
// at most `limit`, until its answer came: whatever the terminal still owed
// the agent (cursor reports, attributes) arrived before it and is
// discarded with it, instead of being typed into the developer's shell.
// Precondition: `in_fd` is in raw mode.
void DrainAnswers(int in_fd, int out_fd,
                  std::chrono::milliseconds limit = std::chrono::milliseconds(300));

// Whether `seen` holds a complete DA1 answer (ESC [ ? params c).
bool HasDeviceAttributesAnswer(std::string_view seen);

// Writes all of `data`; false (errno set) when the descriptor is gone.
bool WriteAll(int fd, std::string_view data);

// Reads a nonblocking pipe empty.
void DrainPipe(int fd);

}  // namespace lazaret::cli::attach

#endif  // LAZARET_CLIENTS_LAZARET_ATTACH_TERMINAL_IO_H_
