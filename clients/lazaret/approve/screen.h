// The ncurses side of a terminal approver: draws Model's screen on a
// terminal, turns what the terminal sends into Keys, and hands the keys to
// the model, making the ApproverService calls it asks for. Shared by
// `lazaret approve` (terminal_ui.h) and the inline prompt of `lazaret run`
// (inline_approver.h). Runs in the `lazaret` CLI, as the user; one Screen
// at a time per process, used from one thread. Nothing from the sandbox
// reaches the terminal except through display_text.h's runs.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_SCREEN_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_SCREEN_H_

#include <cstdint>
#include <cstdio>
#include <optional>

#include "clients/lazaret/approve/approver_client.h"
#include "clients/lazaret/approve/key.h"
#include "clients/lazaret/approve/model.h"

// ncurses' SCREEN (its header defines macros, OK among them, that clash
// with gRPC's; only screen.cc includes it).
struct screen;

namespace lazaret::cli::approve {

class Screen {
 public:
  // Takes the terminal `tty` (read and written; not owned): the alternate
  // screen when the terminal has one, raw keys, no echo. `color`: marked
  // text in colour as well as reverse video (false for NO_COLOR).
  Screen(FILE* tty, bool color);
  // endwin: the terminal's mode as it was and the main screen showing.
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  bool ok() const { return screen_ != nullptr; }

  // Draws the model at the terminal's current size (read from the
  // terminal each time, so a resize needs no SIGWINCH of ncurses' own).
  void Draw(const Model& model);

  // Throws away every key typed and not yet read: what the terminal holds
  // (tcflush TCIFLUSH) and what ncurses has read ahead (flushinp). Called
  // when the model's guard starts (Model::TakeDiscard), so that typing
  // meant for something else never reaches a prompt.
  void DiscardInput();

  // Hands every key waiting on the terminal to `model` and makes the calls
  // it asks for as `approver`, redrawing after each; the model's clock is
  // set before each key and the input discarded when its guard starts.
  // True when the model asked to quit.
  bool HandleKeys(Model& model, ApproverClient& client,
                  const ::lazaret::approver::v1::Approver& approver);

 private:
  std::optional<Key> Next();
  std::optional<Key> FromCode(int code);
  void FollowSize();

  FILE* tty_;
  ::screen* screen_ = nullptr;
  unsigned mark_ = 0;  // the attributes of marked text
  int ctrl_left_ = 0;
  int ctrl_right_ = 0;
};

// CLOCK_MONOTONIC in milliseconds (Model::SetClockMs).
int64_t MonotonicMs();

// How long a front-end may sleep before it must draw `model` again (the
// guard's countdown shows), at most `tick_ms`.
int RedrawWithinMs(const Model& model, int tick_ms);

// UTF-8 output needs a UTF-8 locale: the user's if it is one, else
// C.UTF-8. Call before any thread that formats text exists.
void UseUtf8Locale();

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_SCREEN_H_
