// Persistence cost: in real sandbox sessions, unpack 10,000 small files
// (a tar built on the host into the workspace) and read them all back in
// a persistent directory and in a tmpfs directory of the same sandbox (/tmp
// when the sandbox mounts tmpfs there, else /dev/shm); prints the times
// and the ratio (target at most 1.5x). Two more measurements say where
// the time goes: the same work in a plain host directory bound into the
// same sandbox (the workspace: gVisor's cost for any host file, the floor
// of a persistent directory) and in a persistent directory mounted by
// fuse-overlayfs (a second profile whose layer record names that driver).
// Fails only when a measurement could not be made. Runs as root against
// the e2e_up_<mode> fixture's services.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/persist_e2e_world.h"

namespace lazaret::test::e2e::persist {
namespace {

constexpr int kFiles = 10000;

// Inside the sandbox, for each directory kind in $kinds: key=value
// lines, times in nanoseconds. The tar is read once first, so every
// unpack finds it in the page cache.
constexpr char kScript[] = R"sh(
set -e
t() { date +%s%N; }
fs=$(awk '$2 == "/tmp" { print $3 }' /proc/mounts | tail -n 1)
if [ "$fs" = tmpfs ]; then tmpfs=/tmp/laz-bench; else tmpfs=/dev/shm/laz-bench; fi
echo tmpfs_dir=$tmpfs
persist=/root/laz-bench
bind=/workspace/laz-bench
cat /workspace/files.tar > /dev/null
for kind in $kinds; do
  eval dir=\$$kind
  rm -rf "$dir"; mkdir -p "$dir"
  s=$(t); tar -xf /workspace/files.tar -C "$dir"; e=$(t)
  echo ${kind}_unpack=$((e - s))
  s=$(t); n=$(find "$dir" -type f -exec cat {} + | wc -c); e=$(t)
  echo ${kind}_read=$((e - s)) ${kind}_bytes=$n
  echo ${kind}_files=$(find "$dir" -type f | wc -l)
  rm -rf "$dir"
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
  // The second profile's layer is fuse-overlayfs's before its first mount.
  if (std::string e = world.RecordLayers(kBenchFuse, {"root"}, "fuse-overlayfs"); !e.empty()) {
    std::fprintf(stderr, "persist_bench: %s\n", e.c_str());
    return 1;
  }
  std::map<std::string, std::string> v;
  for (const auto& [profile, kinds] : {std::pair<const char*, const char*>{kBench, "tmpfs bind persist"},
                                       {kBenchFuse, "persist"}}) {
    CommandResult r = RunIn(ws.path(), profile, absl::StrCat("kinds='", kinds, "'\n", kScript));
    std::printf("%s:\n%s", profile, r.out.c_str());
    if (r.exit_code != 0) {
      std::fprintf(stderr, "persist_bench: the %s session failed (exit %d): %s\n", profile,
                   r.exit_code, r.err.c_str());
      return 1;
    }
    for (auto& [key, value] : Values(r.out)) {
      v[profile == std::string(kBench) ? key : absl::StrCat("fuse", key)] = value;
    }
  }
  const std::string want = std::to_string(kFiles);
  for (const char* kind : {"tmpfs", "bind", "persist", "fusepersist"}) {
    auto it = v.find(absl::StrCat(kind, "_files"));
    if (it == v.end() || it->second != want) {
      std::fprintf(stderr, "persist_bench: not %d files unpacked in the %s directory\n", kFiles,
                   kind);
      return 1;
    }
  }
  bool ok = true;
  for (const char* phase : {"unpack", "read"}) {
    auto ms = [&](const char* kind) { return Ms(v, absl::StrCat(kind, "_", phase)); };
    const double p = ms("persist"), t = ms("tmpfs"), b = ms("bind"), f = ms("fusepersist");
    if (p < 0 || t < 0 || b < 0 || f < 0) {
      std::fprintf(stderr, "persist_bench: no %s time\n", phase);
      ok = false;
      continue;
    }
    std::printf(
        "%s %d files: persistent (kernel overlayfs) %.1f ms, tmpfs (%s) %.1f ms, ratio %.2fx "
        "(target <= 1.5x%s)\n",
        phase, kFiles, p, v.at("tmpfs_dir").c_str(), t, p / t, p / t <= 1.5 ? ", met" : ", MISSED");
    std::printf("  plain host directory (the workspace bind) %.1f ms: persistent/plain %.2fx\n", b,
                p / b);
    std::printf("  persistent through fuse-overlayfs %.1f ms: fuse-overlayfs/kernel %.2fx, "
                "fuse-overlayfs/tmpfs %.2fx\n",
                f, f / p, f / t);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace lazaret::test::e2e::persist

int main() { return lazaret::test::e2e::persist::Main(); }
