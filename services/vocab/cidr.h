// IPv4/IPv6 networks in CIDR notation, strictly parsed. Part of
// lazaret_vocab: runs anywhere (lazaret-configd checks configuration with
// it, the sidecar's router its route table, the CLI `lazaret net`'s
// arguments). Input is untrusted text.
#ifndef LAZARET_SERVICES_VOCAB_CIDR_H_
#define LAZARET_SERVICES_VOCAB_CIDR_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

class Cidr {
 public:
  enum class Family { kIpv4, kIpv6 };

  // Accepts "a.b.c.d/n" (n 0..32) and IPv6 "x:y::/n" (n 0..128). The prefix
  // length is required, decimal without sign or leading zeros. Host bits
  // must be zero: "10.1.2.3/8" is an error whose message names the network
  // that was probably meant ("did you mean 10.0.0.0/8?"). Zone ids, octal
  // or shortened IPv4 forms and surrounding spaces are refused.
  static absl::StatusOr<Cidr> Parse(absl::string_view text);

  Family family() const { return family_; }
  int prefix_length() const { return prefix_length_; }
  // The network address: 4 bytes used for IPv4, 16 for IPv6, the rest 0.
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }

  // Canonical text: inet_ntop of the network, "/", the length.
  std::string ToString() const;

  // True when every address of `other` is in this network (same family).
  bool Covers(const Cidr& other) const;

  // True when the two networks share an address (one covers the other).
  bool Overlaps(const Cidr& other) const { return Covers(other) || other.Covers(*this); }

  bool operator==(const Cidr& o) const {
    return family_ == o.family_ && prefix_length_ == o.prefix_length_ && bytes_ == o.bytes_;
  }

 private:
  Cidr(Family f, std::array<uint8_t, 16> bytes, int len)
      : family_(f), bytes_(bytes), prefix_length_(len) {}
  int address_bytes() const { return family_ == Family::kIpv4 ? 4 : 16; }

  Family family_;
  std::array<uint8_t, 16> bytes_;  // network address; only the first 4 for IPv4
  int prefix_length_;
};

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_CIDR_H_
