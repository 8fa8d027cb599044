// Benchmark: resolving one profile from all three file layers (user
// config.toml = example.toml, a narrowing workspace lazaret.toml, and a
// --config file) exactly as lazaret-configd does per request: read, hash,
// trust lookup, parse, clamp, merge, expand and canonicalise. The baseline,
// measured in the same run, is toml++ alone parsing the same three texts.
// Prints the ratio and fails when a resolve takes 5 ms or more.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "services/common/profile_paths/host_paths.h"
#include "services/configd/layer_files.h"
#include "services/configd/toml.h"

namespace {

using namespace lazaret::config;  // NOLINT: a benchmark binary

constexpr double kBudgetMs = 5.0;

struct Fixture {
  std::string root;
  HostContext host;
  Selector selector;
  std::string texts[3];
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

const Fixture& GetFixture() {
  static const Fixture* const kFixture = [] {
    auto* f = new Fixture;
    char tmpl[] = "/tmp/lazaret-bench.XXXXXX";
    f->root = mkdtemp(tmpl);
    for (const char* d : {"/home", "/home/.config", "/home/.config/lazaret", "/ws", "/run"}) {
      mkdir((f->root + d).c_str(), 0700);
    }
    f->host.home = f->root + "/home";
    f->host.config_home = f->root + "/home/.config";
    f->host.state_home = f->root + "/home/.local/state";
    f->host.runtime_dir = f->root + "/run";
    f->texts[0] = ReadAll(std::string(LAZARET_SOURCE_DIR) + "/example.toml");
    f->texts[1] =
        "[escalation]\nauto_approve = [\"gh pr view\"]\n"
        "[profiles.claude-code]\nallow_egress = [\"160.79.104.0/23\"]\n"
        "env = { RUST_BACKTRACE = \"1\" }\n"
        "volumes = [{ host = \"{profile_dir}/npm-cache\", container = \"/cache/npm\", "
        "mode = \"ro\" }]\n";
    f->texts[2] =
        "[profiles.claude-code]\npersistent_dirs = [\"/root\", \"/usr/local\", \"/var/cache\"]\n";
    WriteAll(f->host.UserConfigFile(), f->texts[0]);
    WriteAll(f->root + "/ws/lazaret.toml", f->texts[1]);
    WriteAll(f->root + "/explicit.toml", f->texts[2]);
    f->selector = Selector{f->root + "/ws", f->root + "/explicit.toml"};
    return f;
  }();
  return *kFixture;
}

void BM_ResolveProfileThreeLayers(benchmark::State& state) {
  const Fixture& f = GetFixture();
  for (auto _ : state) {
    LoadedConfig loaded = LoadForSelector(f.host, f.selector);
    absl::StatusOr<ResolvedProfile> p = loaded.Profile("claude-code");
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(p->volumes.data());
  }
}
BENCHMARK(BM_ResolveProfileThreeLayers)->Unit(benchmark::kMicrosecond);

void BM_BaselineTomlParseThreeLayers(benchmark::State& state) {
  const Fixture& f = GetFixture();
  for (auto _ : state) {
    for (const std::string& t : f.texts) {
      toml::parse_result r = toml::parse(std::string_view(t), std::string_view("bench.toml"));
      benchmark::DoNotOptimize(r.succeeded());
    }
  }
}
BENCHMARK(BM_BaselineTomlParseThreeLayers)->Unit(benchmark::kMicrosecond);

// Remembers the mean real time per iteration of each benchmark, in ms.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.iterations == 0) {
        failed_ = true;
        continue;
      }
      ms_[r.benchmark_name()] = r.real_accumulated_time * 1e3 / static_cast<double>(r.iterations);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Ms(const std::string& name) const {
    auto it = ms_.find(name);
    return it == ms_.end() ? -1 : it->second;
  }
  bool failed() const { return failed_; }

 private:
  std::map<std::string, double> ms_;
  bool failed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double resolve = reporter.Ms("BM_ResolveProfileThreeLayers");
  const double baseline = reporter.Ms("BM_BaselineTomlParseThreeLayers");
  const std::string root = GetFixture().root;
  std::system(("rm -rf '" + root + "'").c_str());
  if (reporter.failed() || resolve < 0 || baseline <= 0) {
    std::fprintf(stderr, "config_resolve_bench: a benchmark did not run\n");
    return 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::printf(
      "\nconfig_resolve_bench: resolve (3 layers) %.3f ms, toml++ parse alone %.3f ms, "
      "ratio %.1fx; budget %.1f ms: %s\n",
      resolve, baseline, resolve / baseline, kBudgetMs,
      resolve < kBudgetMs ? "within" : "EXCEEDED");
  return resolve < kBudgetMs ? 0 : 1;
}
