// Persistence cost, in two parts.
//
// Through Lazaret: in real sandbox sessions, unpack 10,000 small files
// (100 directories of 100; `--dirs N` takes N directories, as ctest does to
// stay brief) (a
// tar built on the host into the workspace) and read them all back, in a
// persistent directory and in a plain host directory bound into the same
// sandbox (the workspace); prints persistent/plain for both (target at most
// 1.3x). A tmpfs directory of the same sandbox (/tmp when the sandbox
// mounts tmpfs there, else /dev/shm) and a persistent directory mounted by
// fuse-overlayfs (a second profile whose layer record names that driver,
// one round: it is slow) are printed as context.
//
// Without Lazaret: the same work in a bare `podman run --runtime=runsc` of
// the same image, binding (a) a plain host directory, (b) a kernel overlay
// mounted here by hand (an empty lower, upper and work on the host's file
// system) and (c) the same overlay with its upper and work on a
// loop-mounted ext4 image (the capped layout, docs/persistence.md). Their
// ratios are gVisor's own cost of an overlay bind; the rest of Lazaret's
// ratio is Lazaret's.
//
// Each part runs its kinds in rounds within one sandbox, the order
// reversed every round, and reports medians, so that a noisy shared
// machine does not decide a ratio. Fails only when a measurement could not
// be made. Runs as root against the e2e_up_rootful fixture's services
// (the bare part mounts on the host and binds root's directories).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/persist_e2e_world.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e::persist {
namespace {

constexpr int kFilesPerDir = 100;
constexpr int kRounds = 3;
// Directories of kFilesPerDir files each (--dirs).
int g_dirs = 100;

int Files() { return g_dirs * kFilesPerDir; }

// Inside the sandbox, with $kinds (words) each naming a variable that
// holds its directory, $rounds and $tar: one line per kind and round,
// "round=R kind=K unpack=NS read=NS files=N". Reading is one tar of the
// whole tree into a pipe (every file opened and read, in one process, so
// that process starts do not drown the file system's share). The tar is
// read once first, so every unpack finds it in the page cache.
constexpr char kScript[] = R"sh(
set -e
t() { date +%s%N; }
cat "$tar" > /dev/null
order=$kinds
for r in $(seq 1 $rounds); do
  for kind in $order; do
    eval dir=\$$kind
    rm -rf "$dir"; mkdir -p "$dir"
    s=$(t); tar -xf "$tar" -C "$dir"; e=$(t); u=$((e - s))
    s=$(t); tar -cf - -C "$dir" . | wc -c > /dev/null; e=$(t); rd=$((e - s))
    n=$(find "$dir" -type f | wc -l)
    rm -rf "$dir"
    echo round=$r kind=$kind unpack=$u read=$rd files=$n
  done
  order=$(for k in $order; do echo $k; done | tac | tr '\n' ' ')
done
)sh";

// The sandbox's tmpfs directory: /tmp when tmpfs is mounted there.
constexpr char kLazaretDirs[] = R"sh(
fs=$(awk '$2 == "/tmp" { print $3 }' /proc/mounts | tail -n 1)
if [ "$fs" = tmpfs ]; then tmpfs=/tmp/laz-bench; else tmpfs=/dev/shm/laz-bench; fi
echo tmpfs_dir=$tmpfs
persist=/root/laz-bench
plain=/workspace/laz-bench
tar=/workspace/files.tar
)sh";

// Times per kind and phase, in milliseconds, from the script's lines.
struct Times {
  std::map<std::string, std::map<std::string, std::vector<double>>> ms;
  std::map<std::string, std::string> other;  // key=value lines besides rounds
};

// Adds `out`'s lines to `times` with `prefix` before each kind; "" or the
// first line that is not Files() files.
std::string Parse(const std::string& out, const std::string& prefix, Times* times) {
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::map<std::string, std::string> v;
    for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq != absl::string_view::npos)
        v[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    if (!v.count("round")) {
      times->other.insert(v.begin(), v.end());
      continue;
    }
    if (v["files"] != std::to_string(Files())) {
      return absl::StrCat("not ", Files(), " files unpacked in the ", v["kind"],
                          " directory: ", line);
    }
    for (const char* phase : {"unpack", "read"}) {
      double ns = 0;
      if (!absl::SimpleAtod(v[phase], &ns) || ns <= 0) {
        return absl::StrCat("no ", phase, " time: ", line);
      }
      times->ms[prefix + v["kind"]][phase].push_back(ns / 1e6);
    }
  }
  return "";
}

double Median(std::vector<double> xs) {
  if (xs.empty()) return -1;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

// "1234 ms (1200, 1234, 1300)": the median and every round.
std::string Cell(const std::vector<double>& xs) {
  std::vector<std::string> each;
  for (double x : xs) each.push_back(absl::StrCat(static_cast<int>(x + 0.5)));
  return absl::StrCat(static_cast<int>(Median(xs) + 0.5), " ms (", absl::StrJoin(each, ", "), ")");
}

std::string LoadAverage() {
  std::string s = test::ReadFile("/proc/loadavg");
  std::vector<std::string> w = absl::StrSplit(s, ' ');
  return w.size() >= 3 ? absl::StrCat(w[0], " ", w[1], " ", w[2]) : "unknown";
}

// The directories of the bare podman run, mounted in `root` (a fresh
// directory of root's): plain/, overlay/ (merged; upper and work beside
// it), ext4/ (merged; upper and work in a loop-mounted ext4 image, as the
// mount helper lays out a capped profile). Unmounts everything it mounted
// when destroyed.
class BareDirs {
 public:
  explicit BareDirs(const std::string& root) : root_(root) {}
  ~BareDirs() {
    for (auto it = mounted_.rbegin(); it != mounted_.rend(); ++it) {
      test::Run({"/usr/bin/umount", *it});
    }
  }
  BareDirs(const BareDirs&) = delete;
  BareDirs& operator=(const BareDirs&) = delete;

  // "" on success, else what failed.
  std::string Make() {
    const std::string r = root_;
    if (std::string e =
            HostCommand({"/usr/bin/mkdir", "-p", r + "/plain", r + "/lower", r + "/ov/upper",
                         r + "/ov/work", r + "/ov/merged", r + "/ext4"});
        !e.empty()) {
      return e;
    }
    if (std::string e = Overlay(r + "/ov"); !e.empty()) return e;
    // The capped layout: preallocated, no reserved blocks, nodev,nosuid.
    const std::string img = r + "/persist.img";
    for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
             {"/usr/bin/fallocate", "-l", "1GiB", img},
             {"/usr/sbin/mkfs.ext4", "-F", "-q", "-m", "0", img},
             {"/usr/bin/mount", "-o", "loop,nodev,nosuid", img, r + "/ext4"}}) {
      if (std::string e = HostCommand(argv); !e.empty()) return e;
    }
    mounted_.push_back(r + "/ext4");
    if (std::string e = HostCommand(
            {"/usr/bin/mkdir", r + "/ext4/upper", r + "/ext4/work", r + "/ext4/merged"});
        !e.empty()) {
      return e;
    }
    return Overlay(r + "/ext4");
  }

 private:
  // The helper's options (userxattr, nodev) on an empty lower.
  std::string Overlay(const std::string& dir) {
    std::string e = HostCommand({"/usr/bin/mount", "-t", "overlay", "overlay", "-o",
                                 absl::StrCat("lowerdir=", root_, "/lower,upperdir=", dir,
                                              "/upper,workdir=", dir, "/work,userxattr,nodev"),
                                 dir + "/merged"});
    if (e.empty()) mounted_.push_back(dir + "/merged");
    return e;
  }

  std::string root_;
  std::vector<std::string> mounted_;
};

int Main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dirs" && i + 1 < argc && absl::SimpleAtoi(argv[i + 1], &g_dirs) && g_dirs > 0 &&
        g_dirs <= 1000) {
      ++i;
      continue;
    }
    std::fprintf(stderr, "usage: persist_bench [--dirs N]  (N directories of %d files, 1-1000)\n",
                 kFilesPerDir);
    return 2;
  }
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
  // Files of 100 bytes, kFilesPerDir in each of g_dirs directories, tarred
  // on the host.
  CommandResult made =
      RunAs(ws.path(), {"sh", "-c",
                        absl::StrCat("mkdir src && cd src && for d in $(seq 1 ", g_dirs,
                                     "); do mkdir d$d; for f in $(seq 1 ", kFilesPerDir,
                                     "); do printf '%0100d' $f > d$d/f$f; done; done && cd .. && "
                                     "tar -cf files.tar -C src . && rm -r src")});
  if (made.exit_code != 0) {
    std::fprintf(stderr, "persist_bench: building the tar failed: %s\n", made.err.c_str());
    return 1;
  }
  // The second profile's layer is fuse-overlayfs's before its first mount.
  if (std::string e = world.RecordLayers(kBenchFuse, {"root"}, "fuse-overlayfs"); !e.empty()) {
    std::fprintf(stderr, "persist_bench: %s\n", e.c_str());
    return 1;
  }
  Times times;
  std::printf("load average before: %s\n", LoadAverage().c_str());
  for (const auto& [profile, kinds, rounds] :
       {std::tuple<const char*, const char*, int>{kBench, "plain persist tmpfs", kRounds},
        {kBenchFuse, "persist", 1}}) {
    CommandResult r =
        RunIn(ws.path(), profile,
              absl::StrCat("kinds='", kinds, "'\nrounds=", rounds, "\n", kLazaretDirs, kScript));
    std::printf("%s:\n%s", profile, r.out.c_str());
    if (r.exit_code != 0) {
      std::fprintf(stderr, "persist_bench: the %s session failed (exit %d): %s\n", profile,
                   r.exit_code, r.err.c_str());
      return 1;
    }
    if (std::string e = Parse(r.out, profile == std::string(kBench) ? "" : "fuse", &times);
        !e.empty()) {
      std::fprintf(stderr, "persist_bench: %s: %s\n", profile, e.c_str());
      return 1;
    }
  }

  // How the persistent directory was held (driver, cap), for the record.
  CommandResult shown = Lazaret(ws.path(), {"state", "show", kBench});
  std::printf("lazaret state show %s (exit %d):\n%s%s\n", kBench, shown.exit_code,
              shown.out.c_str(), shown.err.c_str());
  CommandResult listed = test::Run({"/usr/bin/ls", "-l", world.ProfileDir(kBench)});
  std::printf("%s:\n%s\n", world.ProfileDir(kBench).c_str(), listed.out.c_str());

  // The same work without Lazaret.
  UserDir bare_root("pbare");
  {
    BareDirs bare(bare_root.path());
    if (std::string e = bare.Make(); !e.empty()) {
      std::fprintf(stderr, "persist_bench: preparing the bare run: %s\n", e.c_str());
      return 1;
    }
    const std::string& b = bare_root.path();
    CommandResult r =
        Podman({"--runtime-flag=network=host", "run", "--rm", "--runtime=runsc", "--network=none",
                "--pull=never", absl::StrCat("--volume=", ws.path(), ":/files:ro"),
                absl::StrCat("--volume=", b, "/plain:/plain:rw"),
                absl::StrCat("--volume=", b, "/ov/merged:/overlay:rw"),
                absl::StrCat("--volume=", b, "/ext4/merged:/ext4:rw"), kBaseImage, "sh", "-c",
                absl::StrCat("kinds='bare_plain bare_overlay bare_ext4'\nrounds=", kRounds,
                             "\nbare_plain=/plain/b\nbare_overlay=/overlay/b\nbare_ext4=/ext4/b\n"
                             "tar=/files/files.tar\n",
                             kScript)});
    std::printf("bare podman run --runtime=runsc:\n%s", r.out.c_str());
    if (r.exit_code != 0) {
      std::fprintf(stderr, "persist_bench: the bare podman run failed (exit %d): %s\n", r.exit_code,
                   r.err.c_str());
      return 1;
    }
    if (std::string e = Parse(r.out, "", &times); !e.empty()) {
      std::fprintf(stderr, "persist_bench: bare: %s\n", e.c_str());
      return 1;
    }
  }
  std::printf("load average after: %s\n\n", LoadAverage().c_str());

  for (const char* kind :
       {"plain", "persist", "tmpfs", "fusepersist", "bare_plain", "bare_overlay", "bare_ext4"}) {
    if (!times.ms.count(kind)) {
      std::fprintf(stderr, "persist_bench: no times for the %s directory\n", kind);
      return 1;
    }
  }
  auto med = [&](const char* kind, const char* phase) { return Median(times.ms[kind][phase]); };
  const std::string tmpfs_dir = times.other.count("tmpfs_dir") ? times.other["tmpfs_dir"] : "?";
  std::printf("%d files, medians of %d rounds (each round):\n", Files(), kRounds);
  const std::vector<std::pair<const char*, std::string>> rows = {
      {"plain", "Lazaret: a plain host directory (the workspace bind)"},
      {"persist", "Lazaret: persistent directory"},
      {"tmpfs", absl::StrCat("Lazaret: tmpfs (", tmpfs_dir, ")")},
      {"fusepersist", "Lazaret: persistent through fuse-overlayfs (1 round)"},
      {"bare_plain", "bare runsc: a plain host directory bound"},
      {"bare_overlay", "bare runsc: kernel overlay, upper on the host's file system"},
      {"bare_ext4", "bare runsc: kernel overlay, upper on a loop-mounted ext4"},
  };
  for (const auto& [kind, label] : rows) {
    std::printf("  %-62s unpack %-30s read %s\n", label.c_str(),
                Cell(times.ms[kind]["unpack"]).c_str(), Cell(times.ms[kind]["read"]).c_str());
  }
  for (const char* phase : {"unpack", "read"}) {
    const double ratio = med("persist", phase) / med("plain", phase);
    std::printf(
        "%s: persistent/plain %.2fx (target <= 1.3x%s); without Lazaret: overlay/plain %.2fx, "
        "overlay on ext4/plain %.2fx\n",
        phase, ratio, ratio <= 1.3 ? ", met" : ", MISSED",
        med("bare_overlay", phase) / med("bare_plain", phase),
        med("bare_ext4", phase) / med("bare_plain", phase));
  }
  return 0;
}

}  // namespace
}  // namespace lazaret::test::e2e::persist

int main(int argc, char** argv) { return lazaret::test::e2e::persist::Main(argc, argv); }
