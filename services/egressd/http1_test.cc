#include "services/egressd/http1.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lazaret::egressd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kPh[] = "lzs-0123456789abcdef0123456789abcdef";
constexpr char kValue[] = "sk-REAL-SECRET-VALUE";
constexpr char kHost[] = "api.example.com";

RequestGuard* NewGuard() {
  SecretSpec s;
  s.name = "api";
  s.placeholder = kPh;
  s.value = kValue;
  s.hosts = {kHost};
  s.inject = SecretSpec::Inject::kHeader;
  s.header = "x-api-key";
  return new RequestGuard({s}, {{.host = "ruled.example.com", .allow = {{"GET", "/ok"}}}});
}

// Reads from a blocking fd until `done(buf)` or EOF or 10 s.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string buf;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done(buf) && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char tmp[65536];
    const ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n <= 0) break;
    buf.append(tmp, static_cast<size_t>(n));
  }
  return buf;
}

std::string ReadToEof(int fd) {
  return ReadUntil(fd, [](const std::string&) { return false; });
}

void WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Whether `buf` holds one whole request (Content-Length or chunked body).
bool WholeRequest(const std::string& buf) {
  const size_t end = buf.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const std::string head = absl::AsciiStrToLower(buf.substr(0, end));
  const size_t cl = head.find("content-length: ");
  if (cl != std::string::npos) {
    size_t len = 0;
    const size_t eol = head.find("\r\n", cl);
    if (!absl::SimpleAtoi(head.substr(cl + 16, eol - cl - 16), &len)) return true;
    return buf.size() >= end + 4 + len;
  }
  if (absl::StrContains(head, "transfer-encoding: chunked")) {
    return absl::StrContains(buf.substr(end), "\r\n0\r\n\r\n");
  }
  return true;
}

// The content of a chunked body (extensions and trailers ignored).
std::string Dechunk(absl::string_view body) {
  std::string out;
  while (true) {
    const size_t eol = body.find("\r\n");
    if (eol == absl::string_view::npos) return out + "<cut>";
    size_t len = 0;
    if (!absl::SimpleHexAtoi(body.substr(0, std::min(eol, body.find(';'))), &len)) {
      return out + "<bad>";
    }
    if (len == 0) return out;
    const absl::string_view piece = body.substr(eol + 2, len);
    out.append(piece.data(), piece.size());
    body.remove_prefix(std::min(body.size(), eol + 2 + len + 2));
  }
}

// An upstream: each connection the proxy opens is a socketpair whose far
// end runs `handler` on a thread.
class FakeUpstream {
 public:
  using Handler = std::function<void(int fd)>;
  explicit FakeUpstream(Handler handler) : handler_(std::move(handler)) {}
  ~FakeUpstream() {
    for (std::thread& t : threads_) t.join();
  }
  Http1UpstreamOpener Opener() {
    return [this](const std::string& host) -> absl::StatusOr<std::unique_ptr<ByteStream>> {
      hosts_.push_back(host);
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return absl::InternalError("socketpair");
      }
      threads_.emplace_back([this, fd = sv[1]] {
        handler_(fd);
        close(fd);
      });
      return std::unique_ptr<ByteStream>(new SocketStream(fs::UniqueFd(sv[0])));
    };
  }
  size_t opens() const { return hosts_.size(); }

 private:
  Handler handler_;
  std::vector<std::thread> threads_;
  std::vector<std::string> hosts_;
};

// Answers each request on the connection with `response(request)`.
FakeUpstream::Handler Answering(std::function<std::string(const std::string&)> response,
                                std::vector<std::string>* requests, std::mutex* mu) {
  return [=](int fd) {
    while (true) {
      std::string req = ReadUntil(fd, WholeRequest);
      if (req.empty() || !WholeRequest(req)) return;
      {
        std::lock_guard<std::mutex> lock(*mu);
        requests->push_back(req);
      }
      WriteAll(fd, response(req));
    }
  };
}

class Http1Test : public ::testing::Test {
 protected:
  // Runs ServeHttp1 on one end of a socketpair; returns the client end.
  int Start(FakeUpstream* upstream, const std::string& host = kHost, bool plaintext = false) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    opener_ = upstream->Opener();
    server_ = std::thread([this, fd = sv[0], host, plaintext] {
      SocketStream stream{fs::UniqueFd(fd)};
      ServeHttp1(stream, host, plaintext, opener_, *guard_,
                 [this](RequestRecord r) {
                   std::lock_guard<std::mutex> lock(mu_);
                   records_.push_back(std::move(r));
                 },
                 limits_);
    });
    client_ = sv[1];
    return sv[1];
  }
  void Stop() {
    if (client_ >= 0) {
      shutdown(client_, SHUT_WR);
    }
    if (server_.joinable()) server_.join();
    if (client_ >= 0) close(client_);
    client_ = -1;
  }
  void TearDown() override { Stop(); }

  // Sends `request` and expects a proxy refusal with `status` that closes
  // the connection and never reaches the upstream.
  void ExpectRefused(const std::string& request, int status, const std::string& body_has = "",
                     const std::string& host = kHost) {
    FakeUpstream upstream([](int) {});
    const int fd = Start(&upstream, host);
    WriteAll(fd, request);
    const std::string response = ReadToEof(fd);
    EXPECT_THAT(response, StartsWith(absl::StrCat("HTTP/1.1 ", status, " "))) << response;
    EXPECT_THAT(response, HasSubstr("Connection: close"));
    if (!body_has.empty()) {
      EXPECT_THAT(response, HasSubstr(body_has));
    }
    Stop();
    EXPECT_EQ(upstream.opens(), 0u);
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(records_.size(), 1u);
    EXPECT_EQ(records_[0].status, status);
    EXPECT_FALSE(records_[0].refused.empty());
  }

  std::unique_ptr<RequestGuard> guard_{NewGuard()};
  Http1Limits limits_;
  Http1UpstreamOpener opener_;
  std::thread server_;
  int client_ = -1;
  std::mutex mu_;
  std::vector<RequestRecord> records_;
};

std::string EchoResponse(const std::string& req) {
  // Echoes the request head in the body and the key in a header.
  const std::string body = req.substr(0, req.find("\r\n\r\n"));
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(),
                      "\r\nX-Seen: ", absl::StrContains(req, kValue) ? kValue : "none",
                      "\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n", body);
}

TEST_F(Http1Test, InjectsForwardsRedactsAndLogs) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(EchoResponse, &requests, &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, absl::StrCat("GET /v1/x?a=1 HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: ", kPh,
                            "\r\nAccept-Encoding: gzip\r\nConnection: x-drop\r\nX-Drop: 1\r\n\r\n"));
  const std::string response = ReadUntil(fd, [](const std::string& b) {
    const size_t e = b.find("\r\n\r\n");
    size_t len = 0;
    const size_t cl = b.find("Content-Length: ");
    return e != std::string::npos && cl != std::string::npos &&
           absl::SimpleAtoi(b.substr(cl + 16, b.find("\r\n", cl) - cl - 16), &len) &&
           b.size() >= e + 4 + len;
  });
  Stop();
  ASSERT_EQ(requests.size(), 1u);
  // The upstream got the value, origin form, identity encoding, no hop-by-hop.
  EXPECT_THAT(requests[0], StartsWith("GET /v1/x?a=1 HTTP/1.1\r\nHost: api.example.com\r\n"));
  EXPECT_THAT(requests[0], HasSubstr(absl::StrCat("X-Api-Key: ", kValue, "\r\n")));
  EXPECT_THAT(requests[0], HasSubstr("accept-encoding: identity\r\n"));
  EXPECT_THAT(requests[0], Not(HasSubstr("gzip")));
  EXPECT_THAT(requests[0], Not(HasSubstr("X-Drop")));
  EXPECT_THAT(requests[0], Not(HasSubstr("Connection")));
  // The client never sees the value: not in headers, not in the body.
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(response, Not(HasSubstr(kValue)));
  EXPECT_THAT(response, HasSubstr(absl::StrCat("X-Seen: ", RedactionMask(sizeof(kValue) - 1))));
  EXPECT_THAT(response, Not(HasSubstr("Keep-Alive")));
  const size_t body_at = response.find("\r\n\r\n") + 4;
  EXPECT_EQ(response.size() - body_at, requests[0].find("\r\n\r\n"));  // same length
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].protocol, "HTTP/1.1");
  EXPECT_EQ(records_[0].host, kHost);
  EXPECT_EQ(records_[0].method, "GET");
  EXPECT_EQ(records_[0].path, "/v1/x?a=1");
  EXPECT_EQ(records_[0].status, 200);
  EXPECT_EQ(records_[0].response_bytes, response.size() - body_at);
  EXPECT_THAT(records_[0].secrets, ::testing::ElementsAre("api"));
  EXPECT_EQ(records_[0].rule, "no HTTP rule for api.example.com");
  EXPECT_EQ(records_[0].refused, "");
}

TEST_F(Http1Test, KeepAliveReusesTheUpstream) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string&) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); },
      &requests, &mu));
  const int fd = Start(&upstream);
  for (int i = 0; i < 3; ++i) {
    WriteAll(fd, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
    const std::string r = ReadUntil(fd, [](const std::string& b) { return absl::EndsWith(b, "ok"); });
    EXPECT_THAT(r, StartsWith("HTTP/1.1 200 OK")) << i;
  }
  Stop();
  EXPECT_EQ(upstream.opens(), 1u);
  EXPECT_EQ(records_.size(), 3u);
}

TEST_F(Http1Test, ChunkedBodyIsRechunkedAndCounted) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string&) {
        return std::string("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nabc\r\n0\r\n\r\n");
      },
      &requests, &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, "POST /up HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  const std::string r =
      ReadUntil(fd, [](const std::string& b) { return absl::EndsWith(b, "0\r\n\r\n"); });
  Stop();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_THAT(requests[0], HasSubstr("Transfer-Encoding: chunked\r\n\r\n"));
  EXPECT_EQ(Dechunk(requests[0].substr(requests[0].find("\r\n\r\n") + 4)), "hello world");
  EXPECT_TRUE(absl::EndsWith(requests[0], "\r\n0\r\n\r\n"));
  EXPECT_THAT(requests[0], Not(HasSubstr("X-Trailer")));
  EXPECT_THAT(r, StartsWith("HTTP/1.1 201 Created\r\n"));
  EXPECT_THAT(r, HasSubstr("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].request_bytes, 11u);
  EXPECT_EQ(records_[0].response_bytes, 3u);
}

TEST_F(Http1Test, PlaceholderInBodyAbortsTheRequest) {
  std::atomic<bool> got_whole{false};
  FakeUpstream upstream([&](int fd) {
    const std::string req = ReadToEof(fd);
    got_whole = absl::StrContains(req, "tail");
  });
  const int fd = Start(&upstream);
  WriteAll(fd, absl::StrCat("POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 100\r\n\r\n",
                            "{\"k\":\"", std::string(kPh).substr(0, 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  WriteAll(fd, absl::StrCat(std::string(kPh).substr(10), "\"}", std::string(100 - 6 - 36 - 2 - 4, ' '),
                            "tail"));
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 403 "));
  EXPECT_THAT(r, HasSubstr("placeholder of secret \"api\""));
  EXPECT_FALSE(got_whole);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_THAT(records_[0].refused, HasSubstr("request body"));
}

// Server-sent events: each event reaches the client before the upstream
// sends the next one (it waits for the client to have it).
TEST_F(Http1Test, ServerSentEventsFlowEventByEvent) {
  constexpr int kEvents = 5;
  std::mutex ev_mu;
  std::condition_variable ev_cv;
  int client_has = 0;
  std::atomic<bool> in_time{true};
  FakeUpstream upstream([&](int fd) {
    ReadUntil(fd, WholeRequest);
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < kEvents; ++i) {
      const std::string ev = absl::StrCat("data: {\"n\":", i, "}\n\n");
      WriteAll(fd, absl::StrCat(absl::Hex(ev.size()), "\r\n", ev, "\r\n"));
      std::unique_lock<std::mutex> lock(ev_mu);
      if (!ev_cv.wait_for(lock, std::chrono::seconds(2), [&] { return client_has > i; })) {
        in_time = false;
      }
    }
    WriteAll(fd, "0\r\n\r\n");
  });
  const int fd = Start(&upstream);
  WriteAll(fd, "GET /events HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  std::string got;
  for (int i = 0; i < kEvents; ++i) {
    const auto start = std::chrono::steady_clock::now();
    got += ReadUntil(fd, [&](const std::string& b) {
      return absl::StrContains(got + b, absl::StrCat("data: {\"n\":", i, "}\n\n"));
    });
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "event " << i;
    std::lock_guard<std::mutex> lock(ev_mu);
    client_has = i + 1;
    ev_cv.notify_all();
  }
  got += ReadUntil(fd, [&](const std::string& b) { return absl::EndsWith(got + b, "0\r\n\r\n"); });
  Stop();
  EXPECT_TRUE(in_time);
  EXPECT_THAT(got, HasSubstr("Content-Type: text/event-stream"));
  EXPECT_THAT(got, HasSubstr("data: {\"n\":4}"));
}

TEST_F(Http1Test, UpstreamUnreachableIs502WithReason) {
  const int fd = [&] {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    opener_ = [](const std::string& host) -> absl::StatusOr<std::unique_ptr<ByteStream>> {
      return absl::UnavailableError(absl::StrCat("connecting to ", host, ":443: refused"));
    };
    server_ = std::thread([this, fd = sv[0]] {
      SocketStream stream{fs::UniqueFd(fd)};
      ServeHttp1(stream, kHost, false, opener_, *guard_,
                 [this](RequestRecord r) { records_.push_back(std::move(r)); }, limits_);
    });
    client_ = sv[1];
    return sv[1];
  }();
  WriteAll(fd, absl::StrCat("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-api-key: ", kPh,
                            "\r\n\r\n"));
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 502 "));
  EXPECT_THAT(r, HasSubstr("connecting to api.example.com:443: refused"));
  EXPECT_THAT(r, Not(HasSubstr(kValue)));
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].status, 502);
}

TEST_F(Http1Test, CompressedResponseToInjectedRequestIsRefused) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string&) {
        return std::string("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nxyz");
      },
      &requests, &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, absl::StrCat("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-api-key: ", kPh,
                            "\r\n\r\n"));
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 502 "));
  EXPECT_THAT(r, HasSubstr("compressed"));
}

TEST_F(Http1Test, HeadResponseHasNoBody) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string& req) {
        return std::string(absl::StartsWith(req, "HEAD ")
                               ? "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
                               : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      },
      &requests, &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, "HEAD / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
               "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  std::string r = ReadUntil(fd, [](const std::string& b) {
    size_t count = 0;
    for (size_t at = b.find("\r\n\r\n"); at != std::string::npos; at = b.find("\r\n\r\n", at + 1)) {
      ++count;
    }
    return count >= 2 && absl::EndsWith(b, "ok");
  });
  Stop();
  EXPECT_EQ(r, "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
               "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

TEST_F(Http1Test, AbsoluteFormForwardedInOriginForm) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string&) { return std::string("HTTP/1.1 204 No Content\r\n\r\n"); }, &requests,
      &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, "GET https://api.example.com:443/p?q=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  ReadUntil(fd, [](const std::string& b) { return absl::StrContains(b, "\r\n\r\n"); });
  Stop();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_THAT(requests[0], StartsWith("GET /p?q=1 HTTP/1.1\r\n"));
}

TEST_F(Http1Test, RuleRefusalIs403) {
  ExpectRefused("POST /ok HTTP/1.1\r\nHost: ruled.example.com\r\n\r\n", 403,
                "profiles.<profile>.http.\"ruled.example.com\".allow", "ruled.example.com");
}

TEST_F(Http1Test, HugeHeadIs431) {
  ExpectRefused(absl::StrCat("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Big: ",
                             std::string(70 * 1024, 'a'), "\r\n\r\n"),
                431);
}

TEST_F(Http1Test, TooManyFieldsIs431) {
  std::string req = "GET / HTTP/1.1\r\nHost: api.example.com\r\n";
  for (int i = 0; i < 101; ++i) absl::StrAppend(&req, "X-F", i, ": v\r\n");
  ExpectRefused(req + "\r\n", 431);
}

TEST_F(Http1Test, LengthAndChunkedIs400) {
  ExpectRefused("POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n"
                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400);
}

TEST_F(Http1Test, DifferingLengthsAre400) {
  ExpectRefused("POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n"
                "Content-Length: 6\r\n\r\nhello!",
                400);
}

// Found by the fuzzer: http-parser reads "Content-Length :8" as a length.
TEST_F(Http1Test, SpaceBeforeColonIs400) {
  ExpectRefused("POST /up HTTP/1.1\r\nHost: api.example.com\r\nContent-Length :5\r\n\r\n"
                "GET /smuggled HTTP/1.1\r\n\r\n",
                400, "not a token");
}

TEST_F(Http1Test, OtherTransferEncodingIs501) {
  ExpectRefused("POST / HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: gzip, chunked\r\n"
                "\r\n0\r\n\r\n",
                501);
}

TEST_F(Http1Test, ObsFoldIs400) {
  ExpectRefused("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-A: 1\r\n  folded\r\n\r\n", 400,
                "obs-fold");
}

TEST_F(Http1Test, BareCrIs400) {
  ExpectRefused("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-A: 1\rX-B: 2\r\n\r\n", 400,
                "bare CR");
}

TEST_F(Http1Test, BareLfIs400) {
  ExpectRefused("GET / HTTP/1.1\nHost: api.example.com\n\n", 400);
}

TEST_F(Http1Test, NulIs400) {
  ExpectRefused(std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-A: a\0b\r\n\r\n", 48),
                400, "NUL");
}

TEST_F(Http1Test, HostMismatchIs421) {
  ExpectRefused("GET / HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", 421);
}

TEST_F(Http1Test, HostWithPortAndCaseMatches) {
  std::vector<std::string> requests;
  std::mutex mu;
  FakeUpstream upstream(Answering(
      [](const std::string&) { return std::string("HTTP/1.1 204 No Content\r\n\r\n"); }, &requests,
      &mu));
  const int fd = Start(&upstream);
  WriteAll(fd, "GET / HTTP/1.1\r\nHost: API.Example.com:443\r\n\r\n");
  const std::string r =
      ReadUntil(fd, [](const std::string& b) { return absl::StrContains(b, "\r\n\r\n"); });
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 204 "));
}

TEST_F(Http1Test, AbsoluteFormToAnotherHostIs421) {
  ExpectRefused("GET http://evil.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 421);
}

TEST_F(Http1Test, ConnectIs405) {
  ExpectRefused("CONNECT evil.example.com:443 HTTP/1.1\r\nHost: evil.example.com:443\r\n\r\n", 405);
}

TEST_F(Http1Test, UpgradeIs501) {
  ExpectRefused("GET /ws HTTP/1.1\r\nHost: api.example.com\r\nConnection: Upgrade\r\n"
                "Upgrade: websocket\r\n\r\n",
                501, "not supported through the lazaret egress proxy");
}

TEST_F(Http1Test, MissingHostIs400) {
  ExpectRefused("GET / HTTP/1.1\r\n\r\n", 400);
}

TEST_F(Http1Test, PlaceholderToAnotherHostIs403) {
  FakeUpstream upstream([](int) {});
  const int fd = Start(&upstream, "other.example.com");
  WriteAll(fd, absl::StrCat("GET / HTTP/1.1\r\nHost: other.example.com\r\nx-api-key: ", kPh,
                            "\r\n\r\n"));
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 403 "));
  EXPECT_THAT(r, HasSubstr("secret \"api\""));
  EXPECT_EQ(upstream.opens(), 0u);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].rule, "secret \"api\" is not sent to other.example.com");
}

TEST_F(Http1Test, PlaintextTakesHostFromHostAndNeverInjects) {
  FakeUpstream upstream([](int) {});
  const int fd = Start(&upstream, "", true);
  WriteAll(fd, absl::StrCat("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-api-key: ", kPh,
                            "\r\n\r\n"));
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 403 "));
  EXPECT_THAT(r, HasSubstr("https"));
  EXPECT_EQ(upstream.opens(), 0u);
}

TEST_F(Http1Test, PlaintextToHostNotInterceptedIs403) {
  FakeUpstream upstream([](int) {});
  const int fd = Start(&upstream, "", true);
  WriteAll(fd, "GET / HTTP/1.1\r\nHost: www.example.net\r\n\r\n");
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 403 "));
  EXPECT_EQ(upstream.opens(), 0u);
}

TEST_F(Http1Test, SlowHeadIs408) {
  limits_.head_seconds = 1;
  FakeUpstream upstream([](int) {});
  const int fd = Start(&upstream);
  WriteAll(fd, "GET / HTTP/1.1\r\nHost: api.exa");
  const std::string r = ReadToEof(fd);
  Stop();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 408 "));
}

TEST(ScanHttp1HeadTest, FindsTheEnd) {
  Http1Refusal refusal;
  EXPECT_EQ(ScanHttp1Head("GET / HTTP/1.1\r\nA: b\r\n\r\nrest", 1024, 10, &refusal), 24u);
  EXPECT_EQ(refusal.status, 0);
  EXPECT_EQ(ScanHttp1Head("GET / HTTP/1.1\r\nA: b\r\n\r", 1024, 10, &refusal), 0u);
  EXPECT_EQ(refusal.status, 0);
  EXPECT_EQ(ScanHttp1Head(std::string(100, 'a'), 50, 10, &refusal), 0u);
  EXPECT_EQ(refusal.status, 431);
}

}  // namespace
}  // namespace lazaret::egressd
