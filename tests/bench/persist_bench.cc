// Persistence cost: in ONE real sandbox session, unpack 10,000 small files
// (a tar built on the host into the workspace) into a persistent directory
// (a fuse-overlayfs from lazaret-mount-helper) and into a tmpfs directory
// (/tmp when the sandbox mounts tmpfs there, else /dev/shm), then read them
// all back; prints both times and the ratios (target at most 1.5x). Fails
// only when a measurement could not be made. Runs as root against the
// e2e_up_<mode> fixture's services.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/persist_e2e_world.h"

namespace lazaret::test::e2e::persist {
namespace {

constexpr int kFiles = 10000;

// Inside the sandbox: key=value lines, times in nanoseconds.
constexpr char kScript[] = R"sh(
set -e
t() { date +%s%N; }
fs=$(awk '$2 == "/tmp" { print $3 }' /proc/mounts | tail -n 1)
if [ "$fs" = tmpfs ]; then tmp=/tmp/laz-bench; else tmp=/dev/shm/laz-bench; fi
echo tmpfs_dir=$tmp
echo tmp_fs=${fs:-none}
rm -rf /root/laz-bench "$tmp"
mkdir -p /root/laz-bench "$tmp"
for run in 1 2; do
  s=$(t); tar -xf /workspace/files.tar -C /root/laz-bench; e=$(t)
  echo persist_unpack_$run=$((e - s))
  s=$(t); tar -xf /workspace/files.tar -C "$tmp"; e=$(t)
  echo tmpfs_unpack_$run=$((e - s))
  s=$(t); n=$(find /root/laz-bench -type f -exec cat {} + | wc -c); e=$(t)
  echo persist_read_$run=$((e - s)) persist_bytes=$n
  s=$(t); n=$(find "$tmp" -type f -exec cat {} + | wc -c); e=$(t)
  echo tmpfs_read_$run=$((e - s)) tmpfs_bytes=$n
  echo persist_files=$(find /root/laz-bench -type f | wc -l)
  echo tmpfs_files=$(find "$tmp" -type f | wc -l)
  rm -rf /root/laz-bench/* "$tmp"/*
done
)sh";

std::map<std::string, std::string> Values(const std::string& out) {
  std::map<std::string, std::string> v;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq != absl::string_view::npos)
        v[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  return v;
}

double Ms(const std::map<std::string, std::string>& v, const std::string& key) {
  double ns = 0;
  auto it = v.find(key);
  if (it == v.end() || !absl::SimpleAtod(it->second, &ns) || ns <= 0) return -1;
  return ns / 1e6;
}

int Main() {
  if (geteuid() != 0) {
    std::fprintf(stderr, "persist_bench: run as root (the e2e fixtures' services)\n");
    return 1;
  }
  PersistWorld world;
  if (!world.error().empty()) {
    std::fprintf(stderr, "persist_bench: %s\n", world.error().c_str());
    return 1;
  }
  UserDir ws("pbench");
  // 10,000 files of 100 bytes in 100 directories, tarred on the host.
  CommandResult made = RunAs(
      ws.path(), {"sh", "-c",
                  "mkdir src && cd src && for d in $(seq 0 99); do mkdir d$d; for f in $(seq 0 "
                  "99); do printf '%0100d' $f > d$d/f$f; done; done && cd .. && "
                  "tar -cf files.tar -C src . && rm -r src"});
  if (made.exit_code != 0) {
    std::fprintf(stderr, "persist_bench: building the tar failed: %s\n", made.err.c_str());
    return 1;
  }
  CommandResult r = RunIn(ws.path(), kBench, kScript);
  std::printf("%s", r.out.c_str());
  if (r.exit_code != 0) {
    std::fprintf(stderr, "persist_bench: the session failed (exit %d): %s\n", r.exit_code,
                 r.err.c_str());
    return 1;
  }
  const auto v = Values(r.out);
  const std::string want = std::to_string(kFiles);
  if (v.count("persist_files") == 0 || v.at("persist_files") != want ||
      v.at("tmpfs_files") != want) {
    std::fprintf(stderr, "persist_bench: not %d files unpacked in each directory\n", kFiles);
    return 1;
  }
  bool ok = true;
  // The second run is the measurement (the first warms the page cache).
  for (const char* phase : {"unpack", "read"}) {
    const double p = Ms(v, std::string("persist_") + phase + "_2");
    const double t = Ms(v, std::string("tmpfs_") + phase + "_2");
    if (p < 0 || t < 0) {
      std::fprintf(stderr, "persist_bench: no %s time\n", phase);
      ok = false;
      continue;
    }
    std::printf(
        "%s %d files: persistent (fuse-overlayfs) %.1f ms, tmpfs (%s) %.1f ms, ratio %.2fx "
        "(target <= 1.5x%s) [first run: %.1f ms vs %.1f ms]\n",
        phase, kFiles, p, v.at("tmpfs_dir").c_str(), t, p / t, p / t <= 1.5 ? ", met" : ", MISSED",
        Ms(v, std::string("persist_") + phase + "_1"), Ms(v, std::string("tmpfs_") + phase + "_1"));
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace lazaret::test::e2e::persist

int main() { return lazaret::test::e2e::persist::Main(); }
