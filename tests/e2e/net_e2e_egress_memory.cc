#include "tests/e2e/net_e2e_egress_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::test::e2e::net {
namespace {

constexpr size_t kChunk = 1 << 20;
// Mappings larger than this are address space reserved by the Go runtime,
// not memory in use: left out.
constexpr uint64_t kMaxMapping = uint64_t{4} << 30;

// Searches [begin, end) of `fd` with pread, in chunks that overlap by the
// longest needle less one byte, so a needle across a chunk boundary is
// found once. Unreadable stretches are skipped.
void SearchRange(int fd, uint64_t begin, uint64_t end, const std::vector<std::string>& needles,
                 MemoryScan* scan, uint64_t* bytes) {
  size_t longest = 1;
  for (const std::string& n : needles) longest = std::max(longest, n.size());
  std::string buf(kChunk + longest, '\0');
  std::string carry;
  for (uint64_t at = begin; at < end;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, end - at));
    const ssize_t n = pread(fd, buf.data(), want, static_cast<off_t>(at));
    if (n <= 0) {
      // An unreadable page (a guard page, a hole): skip to the next one.
      carry.clear();
      at = (at / 4096 + 1) * 4096;
      continue;
    }
    std::string window = carry + buf.substr(0, static_cast<size_t>(n));
    for (const std::string& needle : needles) {
      for (size_t pos = window.find(needle); pos != std::string::npos;
           pos = window.find(needle, pos + 1)) {
        // A match wholly inside the carried bytes was counted last time.
        if (pos + needle.size() > carry.size()) ++scan->hits[needle];
      }
    }
    carry = window.substr(window.size() - std::min(window.size(), longest - 1));
    *bytes += static_cast<uint64_t>(n);
    at += static_cast<uint64_t>(n);
  }
}

}  // namespace

MemoryScan ScanProcessMemory(pid_t pid, const std::vector<std::string>& needles) {
  MemoryScan scan;
  for (const std::string& n : needles) scan.hits[n] = 0;
  const std::string proc = absl::StrCat("/proc/", pid);

  // The sandbox's memory file: its data extents only (it is sparse).
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    char target[512];
    const ssize_t len = readlink(entry.path().c_str(), target, sizeof(target) - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    if (!absl::StartsWith(target, "/memfd:runsc-memory")) continue;
    const int fd = open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      scan.error = absl::StrCat("opening ", entry.path().string(), ": ", strerror(errno));
      return scan;
    }
    for (off_t at = 0;;) {
      const off_t data = lseek(fd, at, SEEK_DATA);
      if (data < 0) break;  // ENXIO: no data after `at`
      const off_t hole = lseek(fd, data, SEEK_HOLE);
      if (hole <= data) break;
      SearchRange(fd, static_cast<uint64_t>(data), static_cast<uint64_t>(hole), needles, &scan,
                  &scan.file_bytes);
      if (scan.file_bytes > kMaxScanBytes) {
        close(fd);
        scan.error = "the memory file is larger than the scan's bound";
        return scan;
      }
      at = hole;
    }
    close(fd);
  }
  if (ec) {
    scan.error = absl::StrCat("listing ", proc, "/fd: ", ec.message());
    return scan;
  }

  // Its own mappings: anonymous and readable (the sandbox kernel's heap,
  // stacks); files and memfds are left out (the memfd was read above).
  std::ifstream maps(proc + "/maps");
  const int mem = open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (!maps || mem < 0) {
    scan.error = absl::StrCat("reading ", proc, "/maps and mem: ", strerror(errno));
    if (mem >= 0) close(mem);
    return scan;
  }
  for (std::string line; std::getline(maps, line);) {
    std::vector<std::string> t = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (t.size() < 5 || t[1].empty() || t[1][0] != 'r') continue;
    if (t.size() >= 6 && !(t[5] == "[heap]" || t[5] == "[stack]")) continue;
    const std::vector<std::string> range = absl::StrSplit(t[0], '-');
    uint64_t begin = 0, end = 0;
    if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &begin) ||
        !absl::SimpleHexAtoi(range[1], &end) || end <= begin || end - begin > kMaxMapping) {
      continue;
    }
    SearchRange(mem, begin, end, needles, &scan, &scan.heap_bytes);
    if (scan.file_bytes + scan.heap_bytes > kMaxScanBytes) {
      scan.error = "the mappings are larger than the scan's bound";
      break;
    }
  }
  close(mem);
  return scan;
}

}  // namespace lazaret::test::e2e::net
