// lazaret-test-dns-server: TestDnsServer as a process, for end-to-end tests
// that need an upstream resolver on an address of their choosing.
//   lazaret-test-dns-server --listen ADDR:PORT --record NAME=TYPE:VALUE[@TTL]...
//       [--counts-file PATH] [--truncate-udp] [--silent-udp]
// Prints "listening ADDR:PORT" once serving (port 0: the port it got). On
// SIGUSR1 prints the per-name query counts ("name count" lines, then
// "end"); with --counts-file rewrites that file (atomically) after every
// query and at exit. SIGTERM or SIGINT ends it.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "tests/support/test_dns_server.h"

namespace {

void WriteCounts(const lazaret::test::TestDnsServer& server, const std::string& path) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << server.CountsText();
  }
  rename(tmp.c_str(), path.c_str());
}

int Usage(const char* why) {
  fprintf(stderr,
          "lazaret-test-dns-server: %s\nusage: lazaret-test-dns-server --listen ADDR:PORT "
          "--record NAME=TYPE:VALUE[@TTL]... [--counts-file PATH] [--truncate-udp] "
          "[--silent-udp]\n",
          why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  lazaret::test::TestDnsServerOptions options;
  options.listen.clear();
  std::string counts_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--listen") {
      const char* v = value();
      if (v == nullptr) return Usage("--listen needs ADDR:PORT");
      options.listen = v;
    } else if (arg == "--record") {
      // One or more records follow, up to the next flag.
      bool any = false;
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        auto record = lazaret::test::ParseTestDnsRecord(argv[++i]);
        if (!record.ok()) return Usage(std::string(record.status().message()).c_str());
        options.records.push_back(*record);
        any = true;
      }
      if (!any) return Usage("--record needs NAME=TYPE:VALUE");
    } else if (arg == "--counts-file") {
      const char* v = value();
      if (v == nullptr) return Usage("--counts-file needs a path");
      counts_file = v;
    } else if (arg == "--truncate-udp") {
      options.truncate_udp = true;
    } else if (arg == "--silent-udp") {
      options.silent_udp = true;
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.listen.empty()) return Usage("--listen is required");

  auto server = lazaret::test::TestDnsServer::Start(options);
  if (!server.ok()) {
    fprintf(stderr, "lazaret-test-dns-server: %s\n",
            std::string(server.status().message()).c_str());
    return 1;
  }
  lazaret::test::TestDnsServer& s = **server;
  if (!counts_file.empty()) {
    WriteCounts(s, counts_file);
    s.SetOnQuery([&s, counts_file] { WriteCounts(s, counts_file); });
  }
  printf("listening %s\n", s.address().c_str());
  fflush(stdout);
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGUSR1) {
      printf("%send\n", s.CountsText().c_str());
      fflush(stdout);
      continue;
    }
    break;
  }
  s.SetOnQuery(nullptr);
  if (!counts_file.empty()) WriteCounts(s, counts_file);
  return 0;
}
