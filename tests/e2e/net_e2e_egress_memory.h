// Searches a host process's memory for strings, from the host: the
// egress tests (net_e2e_egress_test.cc) look for secrets' values in a
// gVisor sandbox, whose processes all live in runsc-sandbox's memory file
// (a memfd) and whose kernel lives in runsc-sandbox's own mappings. Runs in
// the test process as root (ptrace access to the process); reads are
// bounded and only the search result leaves this function, never the
// bytes read.
#ifndef LAZARET_TESTS_E2E_NET_E2E_EGRESS_MEMORY_H_
#define LAZARET_TESTS_E2E_NET_E2E_EGRESS_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lazaret::test::e2e::net {

struct MemoryScan {
  // Bytes searched in the memfds named "runsc-memory" among the process's
  // descriptors (their data extents only), and in its readable mappings
  // that no file or memfd backs.
  uint64_t file_bytes = 0;
  uint64_t heap_bytes = 0;
  // Occurrences of each needle.
  std::map<std::string, uint64_t> hits;
  // Why the scan could not be done ("" when it was).
  std::string error;
};

// At most this many bytes are read in all; more is an error.
inline constexpr uint64_t kMaxScanBytes = uint64_t{16} << 30;

MemoryScan ScanProcessMemory(pid_t pid, const std::vector<std::string>& needles);

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_EGRESS_MEMORY_H_
