// A small authoritative DNS server for tests: it answers configured names
// with configured A, AAAA and CNAME records over UDP and TCP on an
// address:port the test chooses, and counts the queries it saw per name, so
// a test can prove that a refused name never left the machine. Runs in test
// processes (and as the lazaret-test-dns-server binary for end-to-end
// tests), unprivileged; it trusts its configuration and distrusts every
// packet: malformed queries are counted as unparsed and answered FORMERR or
// not at all. It encodes on its own, not through the code it tests.
#ifndef LAZARET_TESTS_SUPPORT_TEST_DNS_SERVER_H_
#define LAZARET_TESTS_SUPPORT_TEST_DNS_SERVER_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::test {

enum class DnsRecordType { kA, kAaaa, kCname };

struct TestDnsRecord {
  std::string name;  // any case, with or without the trailing dot
  DnsRecordType type = DnsRecordType::kA;
  std::string value;  // an address for A/AAAA, a name for CNAME
  uint32_t ttl = 300;
};

// "NAME=TYPE:VALUE", TYPE one of A, AAAA, CNAME (any case), optionally
// followed by "@TTL": "api.example.test=A:10.1.2.3@60".
absl::StatusOr<TestDnsRecord> ParseTestDnsRecord(absl::string_view text);

// "127.0.0.1:5353", "[::1]:0" (port 0: the kernel picks one).
absl::StatusOr<sockaddr_storage> ParseListenAddress(absl::string_view text, socklen_t* length);

struct TestDnsServerOptions {
  std::string listen = "127.0.0.1:0";
  std::vector<TestDnsRecord> records;
  // Every UDP answer is sent empty with TC=1 (the asker must retry over TCP).
  bool truncate_udp = false;
  // UDP queries are counted but never answered (timeouts, retries).
  bool silent_udp = false;
  // Answers carry this RCODE and no records (2 SERVFAIL, 5 REFUSED); 0: normal.
  int forced_rcode = 0;
};

struct SeenQuery {
  std::string name;  // lowercase, no trailing dot
  uint16_t qtype = 0;
  bool tcp = false;
};

// One server on one address and port, UDP and TCP; serves from a thread
// until destroyed. Names are matched case-insensitively. A name with records
// of other types only gets an empty NOERROR; an unknown name NXDOMAIN. A
// CNAME is followed (up to 8 links) and the chain is in the answer.
class TestDnsServer {
 public:
  static absl::StatusOr<std::unique_ptr<TestDnsServer>> Start(TestDnsServerOptions options);
  ~TestDnsServer();
  TestDnsServer(const TestDnsServer&) = delete;
  TestDnsServer& operator=(const TestDnsServer&) = delete;

  uint16_t port() const { return port_; }
  // "127.0.0.1:5353" or "[::1]:5353": what dns_upstream takes.
  std::string address() const;

  // Queries seen for `name` (any case, trailing dot or not), UDP and TCP.
  int QueryCount(absl::string_view name) const;
  int TotalQueries() const;
  // Datagrams or TCP messages that were not a parseable query.
  int UnparsedQueries() const { return unparsed_.load(); }
  std::map<std::string, int> Counts() const;
  std::vector<SeenQuery> Queries() const;
  // "name count" lines, sorted by name.
  std::string CountsText() const;

  // Replaces the records (for TTL or rebinding scenarios mid-test).
  void SetRecords(std::vector<TestDnsRecord> records);
  // Called after each query is counted (the binary writes its counts file).
  void SetOnQuery(std::function<void()> on_query);

 private:
  TestDnsServer(TestDnsServerOptions options, int udp_fd, int tcp_fd, int wake_fd, uint16_t port);
  void Serve();
  void ServeTcpConnection(int fd);
  // The answer to `query`, or empty for no answer.
  std::string Answer(absl::string_view query, bool tcp);

  const TestDnsServerOptions options_;
  const int udp_fd_;
  const int tcp_fd_;
  const int wake_fd_;
  const uint16_t port_;
  mutable std::mutex mu_;
  std::vector<TestDnsRecord> records_ ABSL_GUARDED_BY(mu_);
  std::vector<SeenQuery> seen_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_query_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> unparsed_{0};
  std::thread thread_;
};

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_SUPPORT_TEST_DNS_SERVER_H_
