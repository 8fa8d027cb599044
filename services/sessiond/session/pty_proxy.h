// The pty of a `lazaret run` session with a TTY: the sandbox's podman runs
// on a pty Lazaret owns (a new session, the pty slave its controlling
// terminal and stdin/stdout/stderr), and a pump thread copies bytes between
// it and the developer's terminal, which is in raw mode meanwhile (so
// Ctrl-C, Ctrl-Z and every other key are bytes for the sandbox's
// foreground process, never signals for Lazaret). The window size follows
// the developer's terminal (SIGWINCH). Pause/Resume hand the terminal to
// the inline approver while the child keeps running.
//
// Runs in the `lazaret` CLI, as the user. The bytes in both directions are
// the developer's and the sandbox's terminal traffic: copied, and the
// output scanned only for the terminal modes a prompt disturbs
// (terminal_modes.h), never answered or acted on; output held while paused
// is bounded (the child then blocks on its writes).
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_PTY_PROXY_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_PTY_PROXY_H_

#include <signal.h>
#include <sys/types.h>
#include <termios.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "services/sessiond/session/terminal_modes.h"

namespace lazaret::cli::session {

class PtyProxy {
 public:
  struct Options {
    int user_in = STDIN_FILENO;    // the developer's terminal (keys)
    int user_out = STDOUT_FILENO;  // the developer's terminal (screen)
    // Output held while paused; beyond it the pump stops reading the pty.
    size_t max_paused_bytes = 4 << 20;
  };

  // Opens the pty pair, gives it the developer's window size and puts the
  // developer's terminal (when user_in is one) into raw mode; the mode is
  // restored by RestoreTerminal and by the destructor. Installs the
  // process's SIGWINCH handler: at most one PtyProxy exists at a time.
  static absl::StatusOr<std::unique_ptr<PtyProxy>> Create(const Options& options);
  ~PtyProxy();
  PtyProxy(const PtyProxy&) = delete;
  PtyProxy& operator=(const PtyProxy&) = delete;

  // Starts argv (once) on the pty slave and the pump thread. The child gets
  // the spawn core's treatment (process/spawn.h: default signals, empty
  // mask, PR_SET_PDEATHSIG tied to the calling thread). Returns its pid;
  // the caller reaps it (waitpid), then calls Finish.
  absl::StatusOr<pid_t> Start(const std::vector<std::string>& argv);

  // After the child exited: forwards what is left on the pty (until it has
  // been quiet for a moment, at most 2 s while something in the sandbox
  // keeps writing) and stops the pump. Idempotent.
  void Finish();

  // Start, wait for the child, Finish: the child's exit code as a shell
  // reports it.
  absl::StatusOr<int> Run(const std::vector<std::string>& argv);

  // From any thread, for a prompt. After Pause returns the pump neither
  // writes to user_out nor reads user_in (the caller may draw on the
  // terminal and read keys) until Resume; Pause has switched off the mouse
  // reports, focus events and paste brackets the agent had on. Resume
  // expects the prompt to have left the main screen showing (an ncurses
  // endwin does): it puts back the modes the agent had set, writes the
  // output held meanwhile and, when the prompt covered the agent's
  // alternate screen, has the agent redraw it (the window is one row
  // shorter for a moment: a SIGWINCH for the sandbox's foreground job).
  void Pause();
  void Resume();

  // Puts the developer's terminal mode back (TCSADRAIN). Idempotent; the
  // pump keeps running.
  void RestoreTerminal();

 private:
  PtyProxy(const Options& options, int master, std::string slave_path)
      : options_(options), master_(master), slave_path_(std::move(slave_path)) {}

  void Pump();
  // Reads what the pty has (nonblocking) into `*out`; false on EIO/EOF.
  bool ReadPty(std::string* out);
  // Output to the developer (or held, while paused). Precondition: mu_.
  void Emit(std::string&& bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CopyWindowSize();
  void RequestRedraw();
  void Poke();

  const Options options_;
  const int master_;
  const std::string slave_path_;
  int slave_ = -1;  // the proxy's own hold on the slave, Start to Finish
  int wake_[2] = {-1, -1};   // Pause/Resume/Finish wake the pump's poll
  int winch_[2] = {-1, -1};  // the SIGWINCH handler's self-pipe
  struct sigaction old_winch_ {};
  bool raw_ = false;  // the developer's terminal is in raw mode
  termios saved_mode_{};
  std::thread pump_;

  absl::Mutex mu_;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  std::string held_ ABSL_GUARDED_BY(mu_);  // output while paused
  // The modes the output written so far has set in the terminal.
  TerminalModes modes_ ABSL_GUARDED_BY(mu_);
  bool paused_on_alternate_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_PTY_PROXY_H_
