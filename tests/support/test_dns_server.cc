#include "tests/support/test_dns_server.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace lazaret::test {
namespace {

constexpr uint16_t kTypeA = 1;
constexpr uint16_t kTypeCname = 5;
constexpr uint16_t kTypeAaaa = 28;
constexpr size_t kUdpLimit = 512;

std::string Normalize(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

uint16_t Get16(absl::string_view b, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(b[at]) << 8) |
                               static_cast<uint8_t>(b[at + 1]));
}

void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

void Put32(std::string& out, uint32_t v) {
  Put16(out, static_cast<uint16_t>(v >> 16));
  Put16(out, static_cast<uint16_t>(v & 0xffff));
}

void Set16(std::string& out, size_t at, uint16_t v) {
  out[at] = static_cast<char>(v >> 8);
  out[at + 1] = static_cast<char>(v & 0xff);
}

struct ParsedQuery {
  uint16_t id = 0;
  uint16_t flags = 0;
  std::string name;      // lowercase, no trailing dot
  std::string question;  // the question section as received
  uint16_t qtype = 0;
};

// Queries are never compressed; a pointer or anything odd is unparsed.
bool ParseQuery(absl::string_view b, ParsedQuery* q) {
  if (b.size() < 12) return false;
  q->id = Get16(b, 0);
  q->flags = Get16(b, 2);
  if ((q->flags & 0x8000) != 0 || Get16(b, 4) != 1) return false;
  size_t at = 12;
  std::string name;
  while (true) {
    if (at >= b.size()) return false;
    size_t len = static_cast<uint8_t>(b[at]);
    if (len == 0) {
      ++at;
      break;
    }
    if (len > 63 || at + 1 + len > b.size()) return false;
    if (!name.empty()) name.push_back('.');
    name.append(b.data() + at + 1, len);
    at += 1 + len;
    if (name.size() > 253) return false;
  }
  if (at + 4 > b.size()) return false;
  q->qtype = Get16(b, at);
  q->name = Normalize(name);
  q->question = std::string(b.substr(12, at + 4 - 12));
  return true;
}

// Writes names with compression against every name written before.
class NameWriter {
 public:
  explicit NameWriter(std::string* out) : out_(out) {}
  void Remember(const std::string& name, size_t offset) { offsets_.emplace(name, offset); }
  void Write(const std::string& name) {
    std::string rest = name;
    while (!rest.empty()) {
      auto it = offsets_.find(rest);
      if (it != offsets_.end()) {
        Put16(*out_, static_cast<uint16_t>(0xC000 | it->second));
        return;
      }
      if (out_->size() < 0x3FFF) offsets_.emplace(rest, out_->size());
      size_t dot = rest.find('.');
      std::string label = rest.substr(0, dot);
      out_->push_back(static_cast<char>(label.size()));
      out_->append(label);
      rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
    }
    out_->push_back('\0');
  }

 private:
  std::string* out_;
  std::map<std::string, size_t> offsets_;
};

std::string HeaderOnly(uint16_t id, uint16_t flags, absl::string_view question) {
  std::string out;
  Put16(out, id);
  Put16(out, flags);
  Put16(out, question.empty() ? 0 : 1);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, 0);
  out.append(question.data(), question.size());
  return out;
}

}  // namespace

absl::StatusOr<TestDnsRecord> ParseTestDnsRecord(absl::string_view text) {
  size_t eq = text.find('=');
  size_t colon = text.find(':', eq == absl::string_view::npos ? 0 : eq);
  if (eq == absl::string_view::npos || eq == 0 || colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("record '", text, "': want NAME=TYPE:VALUE"));
  }
  TestDnsRecord r;
  r.name = Normalize(text.substr(0, eq));
  std::string type = absl::AsciiStrToUpper(text.substr(eq + 1, colon - eq - 1));
  absl::string_view value = text.substr(colon + 1);
  // An AAAA value holds colons but never '@'.
  if (size_t at = value.rfind('@'); at != absl::string_view::npos) {
    if (!absl::SimpleAtoi(value.substr(at + 1), &r.ttl)) {
      return absl::InvalidArgumentError(absl::StrCat("record '", text, "': bad TTL"));
    }
    value = value.substr(0, at);
  }
  r.value = std::string(value);
  unsigned char buf[16];
  if (type == "A") {
    r.type = DnsRecordType::kA;
    if (inet_pton(AF_INET, r.value.c_str(), buf) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("record '", text, "': bad IPv4 address"));
    }
  } else if (type == "AAAA") {
    r.type = DnsRecordType::kAaaa;
    if (inet_pton(AF_INET6, r.value.c_str(), buf) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("record '", text, "': bad IPv6 address"));
    }
  } else if (type == "CNAME") {
    r.type = DnsRecordType::kCname;
    r.value = Normalize(r.value);
    if (r.value.empty()) return absl::InvalidArgumentError("empty CNAME target");
  } else {
    return absl::InvalidArgumentError(absl::StrCat("record '", text, "': type A, AAAA or CNAME"));
  }
  return r;
}

absl::StatusOr<sockaddr_storage> ParseListenAddress(absl::string_view text, socklen_t* length) {
  sockaddr_storage ss{};
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': want ADDR:PORT"));
  }
  std::string host(text.substr(0, colon));
  uint32_t port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': bad port"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': bad IPv6 address"));
    }
    *length = sizeof(sockaddr_in6);
    return ss;
  }
  auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
  a4->sin_family = AF_INET;
  a4->sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': bad IPv4 address"));
  }
  *length = sizeof(sockaddr_in);
  return ss;
}

absl::StatusOr<std::unique_ptr<TestDnsServer>> TestDnsServer::Start(TestDnsServerOptions options) {
  socklen_t len = 0;
  auto addr = ParseListenAddress(options.listen, &len);
  if (!addr.ok()) return addr.status();
  const int family = addr->ss_family;
  const bool any_port = (family == AF_INET ? reinterpret_cast<sockaddr_in*>(&*addr)->sin_port
                                           : reinterpret_cast<sockaddr_in6*>(&*addr)->sin6_port) == 0;
  // Port 0: TCP takes the port the kernel gave UDP. Another program may
  // hold that TCP port already; then the pair is tried again on a new one.
  for (int attempt = 0;; ++attempt) {
    int udp = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int tcp = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int wake = eventfd(0, EFD_CLOEXEC);
    int err = 0;
    auto fail = [&](const std::string& what) {
      err = errno;
      for (int fd : {udp, tcp, wake}) {
        if (fd >= 0) close(fd);
      }
      return absl::InternalError(absl::StrCat(what, " ", options.listen, ": ", strerror(err)));
    };
    if (udp < 0 || tcp < 0 || wake < 0) return fail("socket");
    int one = 1;
    setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(udp, reinterpret_cast<sockaddr*>(&*addr), len) != 0) return fail("bind udp");
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof(bound);
    getsockname(udp, reinterpret_cast<sockaddr*>(&bound), &bound_len);
    if (bind(tcp, reinterpret_cast<sockaddr*>(&bound), bound_len) != 0) {
      absl::Status s = fail("bind tcp");
      if (any_port && err == EADDRINUSE && attempt < 64) continue;
      return s;
    }
    if (listen(tcp, 16) != 0) return fail("listen");
    uint16_t port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                            : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    auto server =
        std::unique_ptr<TestDnsServer>(new TestDnsServer(std::move(options), udp, tcp, wake, port));
    server->thread_ = std::thread([s = server.get()] { s->Serve(); });
    return server;
  }
}

TestDnsServer::TestDnsServer(TestDnsServerOptions options, int udp_fd, int tcp_fd, int wake_fd,
                             uint16_t port)
    : options_(std::move(options)),
      udp_fd_(udp_fd),
      tcp_fd_(tcp_fd),
      wake_fd_(wake_fd),
      port_(port),
      records_(options_.records) {
  for (auto& r : records_) r.name = Normalize(r.name);
}

TestDnsServer::~TestDnsServer() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(udp_fd_);
  close(tcp_fd_);
  close(wake_fd_);
}

std::string TestDnsServer::address() const {
  size_t colon = options_.listen.rfind(':');
  return absl::StrCat(options_.listen.substr(0, colon), ":", port_);
}

void TestDnsServer::Serve() {
  while (true) {
    pollfd fds[3] = {{udp_fd_, POLLIN, 0}, {tcp_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      char buf[4096];
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof(peer);
      ssize_t n =
          recvfrom(udp_fd_, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&peer), &peer_len);
      if (n > 0) {
        std::string answer = Answer(absl::string_view(buf, n), /*tcp=*/false);
        if (!answer.empty()) {
          sendto(udp_fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&peer),
                 peer_len);
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      int fd = accept4(tcp_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        ServeTcpConnection(fd);
        close(fd);
      }
    }
  }
}

void TestDnsServer::ServeTcpConnection(int fd) {
  timeval tv{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  auto read_full = [fd](char* p, size_t n) {
    while (n > 0) {
      ssize_t r = read(fd, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  };
  while (true) {
    unsigned char len_bytes[2];
    if (!read_full(reinterpret_cast<char*>(len_bytes), 2)) return;
    size_t len = (len_bytes[0] << 8) | len_bytes[1];
    std::string msg(len, '\0');
    if (!read_full(msg.data(), len)) return;
    std::string answer = Answer(msg, /*tcp=*/true);
    if (answer.empty()) return;
    std::string framed;
    Put16(framed, static_cast<uint16_t>(answer.size()));
    framed += answer;
    if (write(fd, framed.data(), framed.size()) != static_cast<ssize_t>(framed.size())) return;
  }
}

std::string TestDnsServer::Answer(absl::string_view query, bool tcp) {
  ParsedQuery q;
  if (!ParseQuery(query, &q)) {
    ++unparsed_;
    if (query.size() < 12) return "";
    return HeaderOnly(Get16(query, 0), 0x8000 | 1, "");  // FORMERR
  }
  std::vector<TestDnsRecord> records;
  std::function<void()> on_query;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(SeenQuery{q.name, q.qtype, tcp});
    records = records_;
    on_query = on_query_;
  }
  if (on_query) on_query();
  if (!tcp && options_.silent_udp) return "";
  uint16_t flags = 0x8000 | (q.flags & 0x7800) | 0x0400 | (q.flags & 0x0100) | 0x0080;
  if (options_.forced_rcode != 0) {
    return HeaderOnly(q.id, flags | (options_.forced_rcode & 0xf), q.question);
  }
  bool known = std::any_of(records.begin(), records.end(),
                           [&](const TestDnsRecord& r) { return r.name == q.name; });
  if (!known) return HeaderOnly(q.id, flags | 3, q.question);  // NXDOMAIN

  std::string out = HeaderOnly(q.id, flags, q.question);
  NameWriter names(&out);
  names.Remember(q.name, 12);
  uint16_t count = 0;
  auto put_rr = [&](const TestDnsRecord& r, uint16_t type) {
    names.Write(r.name);
    Put16(out, type);
    Put16(out, 1);
    Put32(out, r.ttl);
    size_t rdlen_at = out.size();
    Put16(out, 0);
    size_t start = out.size();
    unsigned char buf[16];
    if (type == kTypeA) {
      inet_pton(AF_INET, r.value.c_str(), buf);
      out.append(reinterpret_cast<char*>(buf), 4);
    } else if (type == kTypeAaaa) {
      inet_pton(AF_INET6, r.value.c_str(), buf);
      out.append(reinterpret_cast<char*>(buf), 16);
    } else {
      names.Write(r.value);
    }
    Set16(out, rdlen_at, static_cast<uint16_t>(out.size() - start));
    ++count;
  };
  std::string current = q.name;
  for (int hop = 0; hop < 8; ++hop) {
    auto cname = std::find_if(records.begin(), records.end(), [&](const TestDnsRecord& r) {
      return r.name == current && r.type == DnsRecordType::kCname;
    });
    if (cname == records.end()) break;
    put_rr(*cname, kTypeCname);
    current = cname->value;
  }
  for (const auto& r : records) {
    if (r.name != current) continue;
    if (r.type == DnsRecordType::kA && q.qtype == kTypeA) put_rr(r, kTypeA);
    if (r.type == DnsRecordType::kAaaa && q.qtype == kTypeAaaa) put_rr(r, kTypeAaaa);
  }
  Set16(out, 6, count);
  if (!tcp && (options_.truncate_udp || out.size() > kUdpLimit)) {
    return HeaderOnly(q.id, flags | 0x0200, q.question);  // TC
  }
  return out;
}

int TestDnsServer::QueryCount(absl::string_view name) const {
  std::string n = Normalize(name);
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(seen_.begin(), seen_.end(), [&](const SeenQuery& q) { return q.name == n; }));
}

int TestDnsServer::TotalQueries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(seen_.size());
}

std::map<std::string, int> TestDnsServer::Counts() const {
  std::map<std::string, int> counts;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& q : seen_) ++counts[q.name];
  return counts;
}

std::vector<SeenQuery> TestDnsServer::Queries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

std::string TestDnsServer::CountsText() const {
  std::string text;
  for (const auto& [name, count] : Counts()) absl::StrAppend(&text, name, " ", count, "\n");
  return text;
}

void TestDnsServer::SetRecords(std::vector<TestDnsRecord> records) {
  for (auto& r : records) r.name = Normalize(r.name);
  std::lock_guard<std::mutex> lock(mu_);
  records_ = std::move(records);
}

void TestDnsServer::SetOnQuery(std::function<void()> on_query) {
  std::lock_guard<std::mutex> lock(mu_);
  on_query_ = std::move(on_query);
}

}  // namespace lazaret::test
