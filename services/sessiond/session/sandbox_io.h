// The sandbox's podman client and its terminal or pipes, in the session
// worker. A tty session's podman runs on a pty the worker owns (a new
// session, the slave its controlling terminal and stdin/stdout/stderr): the
// pump thread passes everything it reads through the terminal output
// filter (services/terminal/output_filter.h, the profile's [terminal]
// policy) before the attach hub (attach_hub.h) tracks, keeps or sends any
// of it, and writes the input holder's keys to the pty. A stream session's
// podman gets three pipes: stdout and stderr are read apart (and only
// while the hub takes more), stdin is written from the input holder and
// closed at its end.
//
// Runs in the session worker (lazaret-sessiond --session-worker, as the
// user). The output is the sandbox's, untrusted: filtered (tty), bounded,
// never interpreted here. The input is the attached developer's, written
// as it came.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_IO_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_IO_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "services/sessiond/session/attach_hub.h"
#include "services/terminal/output_filter.h"

namespace lazaret::cli::session {

class SandboxIo : public AttachHub::Io {
 public:
  struct Options {
    bool tty = false;
    // Tty: the pty's size until a client holding the input says otherwise.
    uint32_t rows = 24;
    uint32_t cols = 80;
    terminal::OutputPolicy policy;
  };

  // Opens the pty (with its size) or the pipes.
  static absl::StatusOr<std::unique_ptr<SandboxIo>> Create(const Options& options);
  ~SandboxIo() override;
  SandboxIo(const SandboxIo&) = delete;
  SandboxIo& operator=(const SandboxIo&) = delete;

  // Where the output goes. Precondition: before Start; `hub` outlives
  // Finish.
  void SetHub(AttachHub* hub) { hub_ = hub; }

  // Starts argv (once) on the pty or the pipes and the pump thread. The
  // child dies with the calling thread (PR_SET_PDEATHSIG). Returns its pid;
  // the caller reaps it, then calls Finish.
  absl::StatusOr<pid_t> Start(const std::vector<std::string>& argv);

  // After the child exited: passes on what is left (until quiet for a
  // moment, at most 2 s while something in the sandbox keeps writing) and
  // stops the pump. Idempotent.
  void Finish();

  // AttachHub::Io. WriteInput waits while more than a bounded amount of
  // input is not yet taken (the client's stream then waits too).
  void WriteInput(std::string bytes) override;
  void CloseInput() override;
  bool Resize(uint32_t rows, uint32_t cols) override;
  void Redraw() override;

 private:
  explicit SandboxIo(const Options& options) : options_(options), filter_(options.policy) {}

  void Pump();
  void PumpStream();
  // Reads what `fd` has (nonblocking), at most a burst; false on EOF/EIO.
  static bool ReadSome(int fd, std::string* out);
  void Poke();
  // True when the size changed.
  bool SetSize(uint32_t rows, uint32_t cols);

  const Options options_;
  AttachHub* hub_ = nullptr;
  terminal::OutputFilter filter_;  // the pump thread's
  int master_ = -1;                // tty
  std::string slave_path_;
  int slave_ = -1;  // our own hold on the slave, Start to Finish
  int stdin_w_ = -1, stdout_r_ = -1, stderr_r_ = -1;  // stream
  int child_ends_[3] = {-1, -1, -1};  // the child's ends, closed after Start
  int wake_[2] = {-1, -1};
  std::thread pump_;

  absl::Mutex mu_;
  std::string to_child_ ABSL_GUARDED_BY(mu_);
  bool input_closing_ ABSL_GUARDED_BY(mu_) = false;
  bool input_gone_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t rows_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t cols_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex redraw_mu_;  // one momentary resize at a time
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_IO_H_
