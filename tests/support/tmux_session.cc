#include "tests/support/tmux_session.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace lazaret::test {
namespace {

// A window's pane, matched by its exact name (tmux would otherwise take a
// prefix: "approve" would match "approve2").
std::string Target(const std::string& name) { return "=" + name + ":"; }

std::string Chomp(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

TmuxSession::TmuxSession(const std::string& dir) : socket_(dir + "/tmux") {}

TmuxSession::~TmuxSession() { Tmux({"kill-server"}); }

bool TmuxSession::Available() { return Run({"tmux", "-V"}).exit_code == 0; }

CommandResult TmuxSession::Tmux(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"tmux", "-S", socket_, "-f", "/dev/null"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

bool TmuxSession::NewWindow(const std::string& name, int width, int height,
                            const std::string& command,
                            const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = {
      "new-session", "-d", "-s", name, "-x", std::to_string(width), "-y", std::to_string(height)};
  for (const auto& [k, v] : env) {
    args.push_back("-e");
    args.push_back(k + "=" + v);
  }
  args.push_back(command);
  // In the same invocation, so the option is set before tmux can see the
  // program end.
  args.insert(args.end(), {";", "set-option", "-w", "-t", Target(name), "remain-on-exit", "on"});
  return Tmux(args).exit_code == 0;
}

bool TmuxSession::Resize(const std::string& name, int width, int height) const {
  return Tmux({"resize-window", "-t", Target(name), "-x", std::to_string(width), "-y",
               std::to_string(height)})
             .exit_code == 0;
}

bool TmuxSession::Keys(const std::string& name, const std::vector<std::string>& keys) const {
  return KeysToAll({name}, keys);
}

bool TmuxSession::Literal(const std::string& name, const std::string& text) const {
  return Tmux({"send-keys", "-t", Target(name), "-l", text}).exit_code == 0;
}

bool TmuxSession::KeysToAll(const std::vector<std::string>& names,
                            const std::vector<std::string>& keys) const {
  std::vector<std::string> args;
  for (const std::string& name : names) {
    if (!args.empty()) args.push_back(";");
    args.insert(args.end(), {"send-keys", "-t", Target(name)});
    args.insert(args.end(), keys.begin(), keys.end());
  }
  return Tmux(args).exit_code == 0;
}

std::string TmuxSession::Capture(const std::string& name, bool escapes) const {
  std::vector<std::string> args = {"capture-pane", "-p", "-t", Target(name)};
  if (escapes) args.push_back("-e");
  return Tmux(args).out;
}

std::string TmuxSession::Format(const std::string& name, const std::string& format) const {
  return Chomp(Tmux({"display-message", "-p", "-t", Target(name), format}).out);
}

bool TmuxSession::PaneDead(const std::string& name) const {
  return Format(name, "#{pane_dead}") == "1";
}

int TmuxSession::PaneExitStatus(const std::string& name) const {
  if (!PaneDead(name)) return -1;
  int status = -1;
  for (int attempt = 0; attempt < 50 && status < 0; ++attempt) {
    const std::string s = Format(name, "#{pane_dead_status}");
    const std::string sig = Format(name, "#{pane_dead_signal}");
    if (!s.empty()) {
      status = std::atoi(s.c_str());
    } else if (!sig.empty()) {
      status = 128 + std::atoi(sig.c_str());  // as a shell reports it
    } else {
      // The pane's pty said EOF but the server has not reaped the program:
      // tmux 3.3 can miss that SIGCHLD (measured: the program stays a zombie
      // of the server until the next one). Another SIGCHLD makes it look.
      const int server = std::atoi(Format(name, "#{pid}").c_str());
      if (server > 0) kill(server, SIGCHLD);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return status;
}

::testing::AssertionResult TmuxSession::WaitForText(const std::string& name,
                                                    const std::string& text,
                                                    std::chrono::milliseconds timeout,
                                                    bool escapes) const {
  std::string screen;
  if (WaitFor(
          [&] {
            screen = Capture(name, escapes);
            return screen.find(text) != std::string::npos;
          },
          timeout)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "no \"" << text << "\" in window " << name << " after " << timeout.count() << " ms:\n"
         << screen;
}

::testing::AssertionResult TmuxSession::WaitForTextGone(const std::string& name,
                                                        const std::string& text,
                                                        std::chrono::milliseconds timeout) const {
  std::string screen;
  if (WaitFor(
          [&] {
            screen = Capture(name);
            return screen.find(text) == std::string::npos;
          },
          timeout)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\"" << text << "\" still in window " << name << " after "
                                       << timeout.count() << " ms:\n"
                                       << screen;
}

::testing::AssertionResult TmuxSession::WaitForExit(const std::string& name,
                                                    std::chrono::milliseconds timeout) const {
  if (WaitFor([&] { return PaneDead(name); }, timeout)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "window " << name << " still runs after " << timeout.count() << " ms:\n"
         << Capture(name);
}

bool MarkedInCapture(const std::string& capture, const std::string& text) {
  const size_t pos = capture.find(text);
  if (pos == std::string::npos) return false;
  const size_t on = capture.rfind("\x1b[7m", pos);
  const size_t off = capture.rfind("\x1b[0m", pos);
  return on != std::string::npos && (off == std::string::npos || off < on);
}

}  // namespace lazaret::test
