// libFuzzer target for the DNS parsers of lazaret-netpolicyd: queries come
// from the sandbox and responses from the network. Properties: nothing
// crashes or reads out of bounds; an answer built for a query that parsed
// parses back as a response to that query with the same records.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "services/netpolicyd/dns_message.h"

namespace dns = lazaret::netpolicyd::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  absl::string_view message(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    // As an upstream response to "a.test" A (the seeds carry that question).
    dns::Question question{{"a", "test"}, dns::kTypeA, dns::kClassIn};
    auto id = dns::PeekId(message);
    if (!id.has_value()) return 0;
    auto response = dns::ParseResponse(message, *id, question);
    if (!response.ok()) return 0;
    dns::Chain chain = dns::FollowChain(*response, question);
    if (chain.cnames.size() > 16) abort();
    dns::Query query{*id, true, question};
    std::vector<dns::ResourceRecord> records = chain.cnames;
    records.insert(records.end(), chain.addresses.begin(), chain.addresses.end());
    std::string answer = dns::BuildAnswer(query, dns::Rcode::kNoError, records, false);
    auto back = dns::ParseResponse(answer, *id, question);
    if (!back.ok() || back->answers.size() != records.size()) abort();
    return 0;
  }
  auto query = dns::ParseQuery(message);
  if (!query.ok()) return 0;
  (void)dns::NameText(query->question.name);
  std::string answer = dns::BuildAnswer(*query, dns::Rcode::kRefused, {}, true);
  auto back = dns::ParseResponse(answer, query->id, query->question);
  if (!back.ok() || back->rcode != dns::Rcode::kRefused) abort();
  std::string upstream = dns::BuildQuery(query->id, query->question);
  auto again = dns::ParseQuery(upstream);
  if (!again.ok() || !dns::SameName(again->question.name, query->question.name)) abort();
  return 0;
}
