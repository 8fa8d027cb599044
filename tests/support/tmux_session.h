// A tmux server for tests that drive terminal programs as a person does:
// windows of a fixed size running a command, keys typed with send-keys,
// the screen read with capture-pane. Each server has a private socket in
// a directory the test owns and reads no configuration (-f /dev/null), so
// tests never meet a user's tmux or each other's. Runs in the test
// process; what a pane shows comes from the program under test and is
// only compared, never interpreted.
#ifndef LAZARET_TESTS_SUPPORT_TMUX_SESSION_H_
#define LAZARET_TESTS_SUPPORT_TMUX_SESSION_H_

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace lazaret::test {

class TmuxSession {
 public:
  // The server's socket is <dir>/tmux; `dir` must outlive this object.
  explicit TmuxSession(const std::string& dir);
  // kill-server: every window's program gets SIGHUP.
  ~TmuxSession();
  TmuxSession(const TmuxSession&) = delete;
  TmuxSession& operator=(const TmuxSession&) = delete;

  static bool Available();

  // tmux ARGS on this server.
  CommandResult Tmux(const std::vector<std::string>& args) const;

  // A window named `name` of width x height running `command` (a shell
  // line) with `env` added to its environment. Each window is a tmux
  // session of its own, so each keeps its own size. A window whose program
  // ends stays (remain-on-exit) so that PaneDead and PaneExitStatus tell
  // how it ended. False when tmux refused.
  bool NewWindow(const std::string& name, int width, int height, const std::string& command,
                 const std::map<std::string, std::string>& env = {});
  bool Resize(const std::string& name, int width, int height) const;

  // Named keys ("Enter", "C-w", "M-b", "a", ...) in one send-keys call.
  bool Keys(const std::string& name, const std::vector<std::string>& keys) const;
  // `text` typed as it is (send-keys -l).
  bool Literal(const std::string& name, const std::string& text) const;
  // The same keys to several windows in one tmux invocation, one right
  // after the other (as close to together as tmux can type).
  bool KeysToAll(const std::vector<std::string>& names, const std::vector<std::string>& keys) const;

  // The visible screen; `escapes`: with the attributes as escape sequences
  // (capture-pane -e).
  std::string Capture(const std::string& name, bool escapes = false) const;
  // A format of the window's pane ("#{alternate_on}", "#{pane_title}"),
  // without the trailing newline.
  std::string Format(const std::string& name, const std::string& format) const;
  bool PaneDead(const std::string& name) const;
  // The exit status of a dead pane's program; -1 while it runs.
  int PaneExitStatus(const std::string& name) const;

  // Waits until the screen contains `text` (or, Gone, no longer does); a
  // failure carries the last screen seen.
  ::testing::AssertionResult WaitForText(const std::string& name, const std::string& text,
                                         std::chrono::milliseconds timeout = kDefaultWait,
                                         bool escapes = false) const;
  ::testing::AssertionResult WaitForTextGone(
      const std::string& name, const std::string& text,
      std::chrono::milliseconds timeout = kDefaultWait) const;
  // Waits until the window's program has ended.
  ::testing::AssertionResult WaitForExit(const std::string& name,
                                         std::chrono::milliseconds timeout) const;

  static constexpr std::chrono::milliseconds kDefaultWait{10000};

  const std::string& socket() const { return socket_; }

 private:
  std::string socket_;
};

// Whether `text` is drawn inside a reverse-video span of a capture with
// escapes (capture-pane -e).
bool MarkedInCapture(const std::string& capture, const std::string& text);

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_SUPPORT_TMUX_SESSION_H_
