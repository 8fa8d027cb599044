// Helpers shared by the multi-process tests: temporary directories, running
// real binaries with captured output, and waiting for conditions.
#ifndef LAZARET_TESTS_SUPPORT_TEST_SUPPORT_H_
#define LAZARET_TESTS_SUPPORT_TEST_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <cstdint>
#include <string>
#include <vector>

namespace lazaret::test {

// A directory under /tmp removed (recursively) on destruction. Short paths
// on purpose: Unix socket paths must stay under 108 bytes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "laz");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv (execvp, no shell) with the current environment plus `env`
// overrides (an empty value unsets the variable), feeding `input` to stdin.
CommandResult Run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env = {},
                  const std::string& input = "");

// Directory holding the built binaries (lazaret, lazaret-*).
std::string BinDir();
std::string Binary(const std::string& name);

// Polls `pred` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// True when the process exists and is not a zombie.
bool ProcessAlive(pid_t pid);

// Reads a field of /proc/<pid>/status ("CapEff") as hex; ~0 if missing.
uint64_t ProcStatusHex(pid_t pid, const std::string& field);

// Makes this process the reaper of orphaned descendants (so a daemon that
// `lazaret up` detached is reaped by the test, not left as a zombie) and
// reaps whatever has exited. Call ReapOrphans() before liveness checks.
void BecomeSubreaper();
void ReapOrphans();

std::string ReadFile(const std::string& path);

// `s` quoted for a POSIX shell.
std::string ShellQuote(const std::string& s);

// What a client reads from a stream server until EOF (or 5 s of silence):
// over TCP to address:port ("<refused>" when the connect fails), or over
// the Unix socket `path` ("<no connect>" when it fails).
std::string ReadTcpUntilEof(const std::string& address, uint16_t port);
std::string ReadUnixUntilEof(const std::string& path);

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_SUPPORT_TEST_SUPPORT_H_
