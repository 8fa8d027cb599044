// IPv4/IPv6 prefixes as bytes, for the policy compiler's arithmetic
// (containment, masking, the embedded-IPv4 forms). Runs in
// lazaret-netpolicyd, unprivileged. A prefix is parsed by the one strict
// CIDR syntax (services/vocab/cidr.h: inet_pton, a decimal length, host
// bits zero) because live rules come from the command line; configuration
// text has been checked by lazaret-configd already.
#ifndef LAZARET_SERVICES_NETPOLICYD_IP_PREFIX_H_
#define LAZARET_SERVICES_NETPOLICYD_IP_PREFIX_H_

#include <array>
#include <compare>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::netpolicyd {

class IpPrefix {
 public:
  enum class Family { kIpv4 = 0, kIpv6 = 1 };

  // "10.0.0.0/8", "fd00::/8". Host bits must be zero.
  static absl::StatusOr<IpPrefix> Parse(absl::string_view text);
  // "10.0.2.2", "fe80::2" (no zone): the host prefix /32 or /128.
  static absl::StatusOr<IpPrefix> ParseAddress(absl::string_view text);
  // `bytes` (4 or 16 of them used) cut to `length` bits.
  static IpPrefix Make(Family family, const std::array<uint8_t, 16>& bytes, int length);
  static IpPrefix Default(Family family) { return Make(family, {}, 0); }

  Family family() const { return family_; }
  bool is_ipv4() const { return family_ == Family::kIpv4; }
  int length() const { return length_; }
  int max_length() const { return is_ipv4() ? 32 : 128; }
  bool is_host() const { return length_ == max_length(); }
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }

  // True when every address of `other` is in this prefix (same family).
  bool Contains(const IpPrefix& other) const;
  // This prefix's address cut to `length` bits (<= length()).
  IpPrefix Truncated(int length) const { return Make(family_, bytes_, length); }

  // "10.0.0.0/8"; Address() without the length.
  std::string ToString() const;
  std::string Address() const;

  // The IPv6 forms that embed an IPv4 prefix: ::ffff:a.b.c.d/96+n,
  // 64:ff9b::a.b.c.d/96+n and 2002:aabb:ccdd::/16+n. IPv4 only.
  IpPrefix Ipv4Mapped() const;
  IpPrefix Nat64() const;
  IpPrefix SixToFour() const;

  // Ordered by family, address, then length: the router's digest order.
  auto operator<=>(const IpPrefix&) const = default;

 private:
  IpPrefix(Family family, std::array<uint8_t, 16> bytes, int length)
      : family_(family), bytes_(bytes), length_(length) {}
  Family family_;
  std::array<uint8_t, 16> bytes_;
  int length_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_IP_PREFIX_H_
