// DNS messages as the relay needs them: queries from the sandbox, fresh
// queries to the upstream resolvers, their responses, and the answers sent
// back. Pure and bounded. Runs in lazaret-netpolicyd, unprivileged. Query
// bytes come from the sandbox and responses from the network: every length,
// label and compression pointer is checked (labels <= 63 octets, names <=
// 255 octets on the wire, pointers only backwards, so no loops), nothing is
// read past the message, and only A, AAAA and CNAME records of class IN on
// the queried name's chain are ever taken from a response.
#ifndef LAZARET_SERVICES_NETPOLICYD_DNS_MESSAGE_H_
#define LAZARET_SERVICES_NETPOLICYD_DNS_MESSAGE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::netpolicyd::dns {

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypeAaaa = 28;
inline constexpr uint16_t kClassIn = 1;
// Answers over UDP larger than this are sent truncated (TC=1): the relay
// sends no EDNS, so the classic limit holds.
inline constexpr size_t kMaxUdpAnswer = 512;

enum class Rcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

// A name as labels, as received (case kept).
using Name = std::vector<std::string>;

struct Question {
  Name name;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
};

struct Query {
  uint16_t id = 0;
  bool recursion_desired = false;
  Question question;
};

struct ResourceRecord {
  Name owner;
  uint16_t type = 0;  // kTypeA, kTypeAaaa or kTypeCname
  uint32_t ttl = 0;
  std::array<uint8_t, 16> address = {};  // A: the first 4 bytes
  Name target;                           // CNAME
};

struct Response {
  uint16_t id = 0;
  Rcode rcode = Rcode::kNoError;
  bool truncated = false;
  Question question;
  // The answer section's A, AAAA and CNAME records of class IN, in order.
  std::vector<ResourceRecord> answers;
};

// The queried name's CNAME chain and the addresses at its end.
struct Chain {
  std::vector<ResourceRecord> cnames;     // from the query name on
  std::vector<ResourceRecord> addresses;  // of the query type, owned by the chain's end
};

// A query from the sandbox: a header with QR=0, opcode QUERY, exactly one
// question and no answer or authority records (additional records, EDNS,
// are ignored). Anything else is InvalidArgument.
absl::StatusOr<Query> ParseQuery(absl::string_view message);

// The id of a message too broken to parse, to answer FORMERR to it.
std::optional<uint16_t> PeekId(absl::string_view message);

// A fresh query for the upstream: `id`, RD=1, the one question, nothing else.
std::string BuildQuery(uint16_t id, const Question& question);

// 16 random bits from the kernel (getrandom).
uint16_t RandomId();

// A response to the query BuildQuery made: the id must be `id` and the
// question `question` (name case-insensitively, type and class), QR=1.
absl::StatusOr<Response> ParseResponse(absl::string_view message, uint16_t id,
                                       const Question& question);

// Follows the chain from `question.name` through the response's CNAMEs (at
// most 16 links) and collects the addresses of the question's type owned
// by its end. Records off the chain are ignored.
Chain FollowChain(const Response& response, const Question& question);

// The answer to `query`: its id and question, QR=1, RD as asked, RA=1,
// `rcode`, then `answers` in order (names compressed). Over UDP an answer
// longer than kMaxUdpAnswer is sent with TC=1 and no records.
std::string BuildAnswer(const Query& query, Rcode rcode, const std::vector<ResourceRecord>& answers,
                        bool udp);

// FORMERR with `id`, no question.
std::string BuildFormErr(uint16_t id);

// Case-insensitive name equality (ASCII only, as DNS defines it).
bool SameName(const Name& a, const Name& b);

// Presentation form for logs: labels joined by '.', with '.', '\\' and bytes
// outside printable ASCII escaped as \DDD; "." for the root.
std::string NameText(const Name& name);

// "A", "AAAA", "CNAME", "MX", ... or "TYPE<n>".
std::string TypeName(uint16_t type);

}  // namespace lazaret::netpolicyd::dns

#endif  // LAZARET_SERVICES_NETPOLICYD_DNS_MESSAGE_H_
