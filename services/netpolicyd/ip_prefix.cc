#include "services/netpolicyd/ip_prefix.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"
#include "services/vocab/cidr.h"

namespace lazaret::netpolicyd {
namespace {

bool ParseBytes(absl::string_view text, IpPrefix::Family* family, std::array<uint8_t, 16>* out) {
  std::string s(text);
  *out = {};
  if (s.find(':') != std::string::npos) {
    *family = IpPrefix::Family::kIpv6;
    return inet_pton(AF_INET6, s.c_str(), out->data()) == 1;
  }
  *family = IpPrefix::Family::kIpv4;
  return inet_pton(AF_INET, s.c_str(), out->data()) == 1;
}

}  // namespace

IpPrefix IpPrefix::Make(Family family, const std::array<uint8_t, 16>& bytes, int length) {
  std::array<uint8_t, 16> cut = {};
  int full = length / 8;
  for (int i = 0; i < full; ++i) cut[i] = bytes[i];
  if (int rest = length % 8; rest != 0) {
    cut[full] = static_cast<uint8_t>(bytes[full] & (0xff << (8 - rest)));
  }
  return IpPrefix(family, cut, length);
}

absl::StatusOr<IpPrefix> IpPrefix::Parse(absl::string_view text) {
  // The one strict CIDR syntax (lazaret_vocab), as configd checked it.
  absl::StatusOr<vocab::Cidr> cidr = vocab::Cidr::Parse(text);
  if (!cidr.ok()) return cidr.status();
  return IpPrefix(cidr->family() == vocab::Cidr::Family::kIpv4 ? Family::kIpv4 : Family::kIpv6,
                  cidr->bytes(), cidr->prefix_length());
}

absl::StatusOr<IpPrefix> IpPrefix::ParseAddress(absl::string_view text) {
  Family family;
  std::array<uint8_t, 16> bytes;
  if (!ParseBytes(text, &family, &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not an IPv4 or IPv6 address"));
  }
  return IpPrefix(family, bytes, family == Family::kIpv4 ? 32 : 128);
}

bool IpPrefix::Contains(const IpPrefix& other) const {
  if (family_ != other.family_ || other.length_ < length_) return false;
  return other.Truncated(length_).bytes_ == bytes_;
}

std::string IpPrefix::Address() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(is_ipv4() ? AF_INET : AF_INET6, bytes_.data(), buf, sizeof(buf));
  return buf;
}

std::string IpPrefix::ToString() const { return absl::StrCat(Address(), "/", length_); }

IpPrefix IpPrefix::Ipv4Mapped() const {
  std::array<uint8_t, 16> b = {};
  b[10] = 0xff;
  b[11] = 0xff;
  for (int i = 0; i < 4; ++i) b[12 + i] = bytes_[i];
  return Make(Family::kIpv6, b, 96 + length_);
}

IpPrefix IpPrefix::Nat64() const {
  std::array<uint8_t, 16> b = {0x00, 0x64, 0xff, 0x9b};
  for (int i = 0; i < 4; ++i) b[12 + i] = bytes_[i];
  return Make(Family::kIpv6, b, 96 + length_);
}

IpPrefix IpPrefix::SixToFour() const {
  std::array<uint8_t, 16> b = {0x20, 0x02};
  for (int i = 0; i < 4; ++i) b[2 + i] = bytes_[i];
  return Make(Family::kIpv6, b, 16 + length_);
}

}  // namespace lazaret::netpolicyd
