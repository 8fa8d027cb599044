// The terminal as a channel to the host, end to end, as a developer meets
// it: `lazaret run` in a tmux window (tmux as the developer's terminal,
// `set-clipboard on`), the sandbox's output through the session worker's
// filter. An agent's OSC 52 clipboard write leaves tmux's paste buffers
// alone by default and lands there with `[terminal] clipboard_write = true`
// in a --config file; a title set to a command line and then asked for
// (CSI 21 t) never reaches the terminal, so nothing is typed into the host
// shell after the session; less and vim work full screen (open, scroll,
// quit, the screen restored), and less through a detach and an attach.
// Each case first shows on the host, without Lazaret, that what it looks
// for would be seen (tmux takes the clipboard write; the raw output of the
// pane, read with pipe-pane, holds the title report).
//
// Part of the run e2e binary (the mode's shared service set); runs as
// root, rootful and rootless. Host vim is copied into the workspace with
// its libraries (the sandbox image has no editor).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/run_e2e_support.h"
#include "tests/support/test_support.h"
#include "tests/support/tmux_session.h"

namespace lazaret::test::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// base64("echo LAZARET-CLIP-MARK")
constexpr char kClipMark[] = "echo LAZARET-CLIP-MARK";
constexpr char kClipScript[] =
    "printf '\\033]52;c;%s\\007' 'ZWNobyBMQVpBUkVULUNMSVAtTUFSSw=='\n"
    "printf 'CLIP-SENT\\n'\n"
    "sleep 2\n";
constexpr char kTitleScript[] =
    "printf '\\033]2;%s\\007' 'echo LAZARET-TITLE-RAN'\n"
    "printf '\\033[21t'\n"
    "printf 'TITLE-SENT\\n'\n";
constexpr auto kStart = std::chrono::seconds(60);
constexpr auto kEnd = std::chrono::seconds(60);

class TerminalE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ASSERT_TRUE(test::TmuxSession::Available()) << "tmux is not installed (deploy/setup-host.sh)";
    ws_ = std::make_unique<UserDir>("termws");
    aux_ = std::make_unique<UserDir>("termaux");
    dir_ = std::make_unique<test::TempDir>("laz-term-e2e");
    tmux_ = std::make_unique<test::TmuxSession>(dir_->path());
    // A window that keeps the server up, then the option every case needs:
    // tmux takes OSC 52 from its panes into a paste buffer.
    ASSERT_TRUE(tmux_->NewWindow("idle", 80, 24, "sleep 900"));
    ASSERT_EQ(tmux_->Tmux({"set-option", "-s", "set-clipboard", "on"}).exit_code, 0);
  }
  void TearDown() override {
    // Closing a terminal only detaches: stop what a failed case left.
    for (const std::string& id : PsSessions()) Lazaret("/", {"stop", id});
    tmux_->Tmux({"kill-server"});
    EXPECT_TRUE(
        test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(60)))
        << "containers left behind";
  }

  // A shell line that runs `lazaret ARGS` as the mode's user in the
  // workspace, with a fixed TERM and locale.
  std::string LazaretLine(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {test::Binary("lazaret")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string line;
    for (const std::string& a : AsMode(argv, {{"TERM", "xterm-256color"}, {"LANG", "C.UTF-8"}})) {
      line += " " + test::ShellQuote(a);
    }
    return line;
  }
  // Opens `window` running `command` in the workspace, waits for `shown`
  // on its screen (unless empty) and for it to end; its exit status.
  int RunInWindow(const std::string& window, const std::string& command,
                  const std::string& shown = "") {
    EXPECT_TRUE(tmux_->NewWindow(window, 80, 24,
                                 "cd " + test::ShellQuote(ws_->path()) + " && " + command));
    if (!shown.empty()) {
      EXPECT_TRUE(tmux_->WaitForText(window, shown, kStart));
    }
    EXPECT_TRUE(tmux_->WaitForExit(window, kStart + kEnd));
    return tmux_->PaneExitStatus(window);
  }
  // Every paste buffer's content (empty when there is none).
  std::string Buffers() const {
    std::string out;
    const CommandResult list = tmux_->Tmux({"list-buffers", "-F", "#{buffer_name}"});
    for (const std::string& name : Lines(list.out)) {
      out += tmux_->Tmux({"show-buffer", "-b", name}).out + "\n";
    }
    return out;
  }
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) out.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
  void DeleteBuffers() const {
    for (const std::string& name :
         Lines(tmux_->Tmux({"list-buffers", "-F", "#{buffer_name}"}).out)) {
      tmux_->Tmux({"delete-buffer", "-b", name});
    }
  }

  std::unique_ptr<UserDir> ws_;
  std::unique_ptr<UserDir> aux_;
  std::unique_ptr<test::TempDir> dir_;
  std::unique_ptr<test::TmuxSession> tmux_;
};

TEST_F(TerminalE2eTest, ClipboardWriteIsBlockedByDefaultAndAllowedByTheSetting) {
  ws_->Write("clip.sh", kClipScript);
  // On the host, tmux takes the write: the premise of the attack.
  EXPECT_EQ(RunInWindow("host", "sh clip.sh"), 0);
  ASSERT_THAT(Buffers(), HasSubstr(kClipMark)) << "tmux did not take OSC 52 from a pane";
  DeleteBuffers();
  ASSERT_THAT(Buffers(), Not(HasSubstr(kClipMark)));

  // Through Lazaret, by default: removed, tmux's buffers stay as they were.
  EXPECT_EQ(RunInWindow("blocked", LazaretLine({"run", "--", "sh", "/workspace/clip.sh"}),
                        "CLIP-SENT"),
            0);
  EXPECT_THAT(Buffers(), Not(HasSubstr(kClipMark)));

  // With clipboard_write = true in the user's own --config file: it passes.
  const std::string config = aux_->Write("clip.toml", "[terminal]\nclipboard_write = true\n");
  EXPECT_EQ(RunInWindow("allowed",
                        LazaretLine({"run", "--config", config, "--", "sh", "/workspace/clip.sh"}),
                        "CLIP-SENT"),
            0);
  EXPECT_THAT(Buffers(), HasSubstr(kClipMark));
}

TEST_F(TerminalE2eTest, ATitleReportNeverReachesTheHostShell) {
  ws_->Write("title.sh", kTitleScript);
  // Each window waits for its GO file (so pipe-pane sees every byte), runs
  // its command, then reads for 2 s whatever the terminal typed into it
  // once the command had ended, as the host shell would.
  auto run = [&](const std::string& window, const std::string& command) {
    const std::string go = aux_->path() + "/" + window + ".go";
    const std::string raw = aux_->path() + "/" + window + ".raw";
    const std::string typed = aux_->path() + "/" + window + ".typed";
    const std::string line = "while [ ! -e " + go + " ]; do sleep 0.1; done; " + command +
                             "; stty -icanon -echo min 0 time 20; head -c 4096 > " + typed +
                             "; stty sane";
    EXPECT_TRUE(tmux_->NewWindow(window, 80, 24,
                                 "cd " + test::ShellQuote(ws_->path()) + " && " + line));
    EXPECT_EQ(tmux_->Tmux({"pipe-pane", "-o", "-t", "=" + window + ":", "cat > " + raw}).exit_code,
              0);
    EXPECT_EQ(test::Run({"touch", go}).exit_code, 0);
    EXPECT_TRUE(tmux_->WaitForText(window, "TITLE-SENT", kStart));
    const std::string title = tmux_->Format(window, "#{pane_title}");
    EXPECT_TRUE(tmux_->WaitForExit(window, kEnd + std::chrono::seconds(10)));
    // pipe-pane's cat has written what the pane showed.
    EXPECT_TRUE(test::WaitFor(
        [&] { return test::ReadFile(raw).find("TITLE-SENT") != std::string::npos; },
        std::chrono::seconds(5)));
    return std::vector<std::string>{test::ReadFile(raw), test::ReadFile(typed), title};
  };
  // On the host the request reaches the terminal.
  const std::vector<std::string> host = run("host", "sh title.sh");
  ASSERT_THAT(host[0], HasSubstr("\x1b[21t")) << "pipe-pane did not see the pane's output";

  const std::vector<std::string> through =
      run("lazaret", LazaretLine({"run", "--", "sh", "/workspace/title.sh"}));
  // The title itself is text and shows; the report request never reaches
  // the terminal, so nothing comes back to be typed into the host shell.
  EXPECT_THAT(through[0], HasSubstr("\x1b]2;echo LAZARET-TITLE-RAN\a"));
  EXPECT_EQ(through[2], "echo LAZARET-TITLE-RAN");
  EXPECT_THAT(through[0], Not(HasSubstr("[21t")));
  EXPECT_THAT(through[1], Not(HasSubstr("LAZARET-TITLE-RAN")));
}

// Copies the host's vim into <workspace>/vimkit with every library ldd
// lists but the C library (the image's newer one runs it), and writes
// vimkit/vim.sh, which runs it with those libraries.
void CopyHostVim(const UserDir& ws) {
  const CommandResult which = test::Run({"sh", "-c", "readlink -f \"$(command -v vim)\""});
  const std::string vim = Trim(which.out);
  ASSERT_FALSE(vim.empty()) << "vim is not installed on the host (deploy/setup-host.sh)";
  const CommandResult ldd = test::Run({"ldd", vim});
  ASSERT_EQ(ldd.exit_code, 0) << ldd.err;
  std::vector<std::string> files = {vim};
  size_t start = 0;
  while (start < ldd.out.size()) {
    size_t end = ldd.out.find('\n', start);
    if (end == std::string::npos) end = ldd.out.size();
    const std::string line = ldd.out.substr(start, end - start);
    start = end + 1;
    const size_t arrow = line.find("=> /");
    if (arrow == std::string::npos) continue;
    const std::string path = line.substr(arrow + 3, line.find(' ', arrow + 3) - (arrow + 3));
    // The image's own C library and loader run it; the host's others
    // (libsodium, libgpm, ... which the image lacks) come along.
    if (path.find("/libc.so") != std::string::npos ||
        path.find("/libm.so") != std::string::npos) {
      continue;
    }
    files.push_back(path);
  }
  const std::string kit = ws.path() + "/vimkit";
  ASSERT_EQ(mkdir(kit.c_str(), 0755), 0) << kit;
  ASSERT_EQ(chown(kit.c_str(), Env().uid, Env().gid), 0) << kit;
  for (const std::string& f : files) {
    const std::string name = f == vim ? "vim" : f.substr(f.rfind('/') + 1);
    const std::string copy = ws.Write("vimkit/" + name, test::ReadFile(f));
    ASSERT_EQ(chmod(copy.c_str(), 0755), 0) << copy;
  }
  const std::string script =
      ws.Write("vimkit/vim.sh",
               "#!/bin/sh\n"
               "LD_LIBRARY_PATH=/workspace/vimkit exec /workspace/vimkit/vim -u NONE -i NONE -N "
               "-n \"$@\"\n");
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
}

std::string NumberedLines(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) {
    char line[32];
    std::snprintf(line, sizeof(line), "line %03d\n", i);
    out += line;
  }
  return out;
}

TEST_F(TerminalE2eTest, LessAndVimWorkFullScreen) {
  ws_->Write("lines.txt", NumberedLines(200));
  ASSERT_NO_FATAL_FAILURE(CopyHostVim(*ws_));
  ASSERT_TRUE(tmux_->NewWindow(
      "agent", 80, 24, "cd " + test::ShellQuote(ws_->path()) + " && exec" + LazaretLine({"run"})));
  ASSERT_TRUE(tmux_->WaitForText("agent", "/workspace#", kStart));
  ASSERT_TRUE(tmux_->Literal("agent", "clear; echo BEFORE-PAGER"));
  ASSERT_TRUE(tmux_->Keys("agent", {"Enter"}));
  ASSERT_TRUE(tmux_->WaitForText("agent", "BEFORE-PAGER"));

  // less: the alternate screen, scrolling to the end and back, and the
  // shell's screen back after q.
  ASSERT_TRUE(tmux_->Literal("agent", "less lines.txt"));
  ASSERT_TRUE(tmux_->Keys("agent", {"Enter"}));
  ASSERT_TRUE(tmux_->WaitForText("agent", "line 023"));
  EXPECT_EQ(tmux_->Format("agent", "#{alternate_on}"), "1");
  EXPECT_THAT(tmux_->Capture("agent"), Not(HasSubstr("BEFORE-PAGER")));
  ASSERT_TRUE(tmux_->Keys("agent", {"G"}));
  EXPECT_TRUE(tmux_->WaitForText("agent", "line 200"));
  ASSERT_TRUE(tmux_->Keys("agent", {"g"}));
  EXPECT_TRUE(tmux_->WaitForText("agent", "line 001"));
  ASSERT_TRUE(tmux_->Keys("agent", {"q"}));
  EXPECT_TRUE(tmux_->WaitForTextGone("agent", "line 023"));
  EXPECT_EQ(tmux_->Format("agent", "#{alternate_on}"), "0");
  EXPECT_THAT(tmux_->Capture("agent"), HasSubstr("BEFORE-PAGER"));

  // vim: the same, with its queries and modes on the way.
  ASSERT_TRUE(tmux_->Literal("agent", "clear; echo BEFORE-VIM; /workspace/vimkit/vim.sh lines.txt"));
  ASSERT_TRUE(tmux_->Keys("agent", {"Enter"}));
  ASSERT_TRUE(tmux_->WaitForText("agent", "line 023", kStart));
  EXPECT_EQ(tmux_->Format("agent", "#{alternate_on}"), "1");
  ASSERT_TRUE(tmux_->Keys("agent", {"G"}));
  EXPECT_TRUE(tmux_->WaitForText("agent", "line 200"));
  ASSERT_TRUE(tmux_->Keys("agent", {"g", "g"}));
  EXPECT_TRUE(tmux_->WaitForText("agent", "line 001"));
  ASSERT_TRUE(tmux_->Literal("agent", ":q"));
  ASSERT_TRUE(tmux_->Keys("agent", {"Enter"}));
  EXPECT_TRUE(tmux_->WaitForTextGone("agent", "line 023"));
  EXPECT_EQ(tmux_->Format("agent", "#{alternate_on}"), "0");
  EXPECT_THAT(tmux_->Capture("agent"), HasSubstr("BEFORE-VIM"));

  ASSERT_TRUE(tmux_->Literal("agent", "exit"));
  ASSERT_TRUE(tmux_->Keys("agent", {"Enter"}));
  EXPECT_TRUE(tmux_->WaitForExit("agent", kEnd));
  EXPECT_EQ(tmux_->PaneExitStatus("agent"), 0);
}

TEST_F(TerminalE2eTest, LessKeepsItsScreenThroughDetachAndAttach) {
  ws_->Write("lines.txt", NumberedLines(200));
  ASSERT_TRUE(tmux_->NewWindow(
      "run", 80, 24, "cd " + test::ShellQuote(ws_->path()) + " && exec" + LazaretLine({"run"})));
  ASSERT_TRUE(tmux_->WaitForText("run", "/workspace#", kStart));
  ASSERT_TRUE(tmux_->Literal("run", "clear; echo BEFORE-PAGER; less lines.txt"));
  ASSERT_TRUE(tmux_->Keys("run", {"Enter"}));
  ASSERT_TRUE(tmux_->WaitForText("run", "line 023"));
  const std::vector<std::string> ids = PsSessions();
  ASSERT_EQ(ids.size(), 1u);

  // Ctrl-\ then d, as bytes: the client detaches, less keeps running.
  ASSERT_EQ(tmux_->Tmux({"send-keys", "-t", "=run:", "-H", "1c", "64"}).exit_code, 0);
  ASSERT_TRUE(tmux_->WaitForExit("run", std::chrono::seconds(20)));
  EXPECT_EQ(tmux_->PaneExitStatus("run"), 0);

  // Another terminal of another size: less's screen is there, at the new
  // size, scrolls, and the shell's screen comes back after q.
  ASSERT_TRUE(tmux_->NewWindow("att", 100, 30,
                               "cd / && exec" + LazaretLine({"attach", ids[0]})));
  EXPECT_TRUE(tmux_->WaitForText("att", "line 001", kStart));
  ASSERT_TRUE(tmux_->Keys("att", {"G"}));
  EXPECT_TRUE(tmux_->WaitForText("att", "line 200"));
  EXPECT_TRUE(tmux_->WaitForText("att", "line 172"));  // 29 rows of text at 100x30
  EXPECT_EQ(tmux_->Format("att", "#{alternate_on}"), "1");
  ASSERT_TRUE(tmux_->Keys("att", {"q"}));
  EXPECT_TRUE(tmux_->WaitForTextGone("att", "line 200"));
  EXPECT_EQ(tmux_->Format("att", "#{alternate_on}"), "0");
  ASSERT_TRUE(tmux_->Literal("att", "exit"));
  ASSERT_TRUE(tmux_->Keys("att", {"Enter"}));
  EXPECT_TRUE(tmux_->WaitForExit("att", kEnd));
  EXPECT_EQ(tmux_->PaneExitStatus("att"), 0);
}

}  // namespace
}  // namespace lazaret::test::e2e
