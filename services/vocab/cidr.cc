#include "services/vocab/cidr.h"

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace lazaret::vocab {
namespace {

// Keeps the first `len` bits of `bytes`, zeroes the rest.
std::array<uint8_t, 16> Masked(std::array<uint8_t, 16> bytes, int len, int nbytes) {
  for (int i = 0; i < nbytes; ++i) {
    const int bits_here = len - i * 8;
    if (bits_here >= 8) continue;
    if (bits_here <= 0) {
      bytes[i] = 0;
    } else {
      bytes[i] &= static_cast<uint8_t>(0xff << (8 - bits_here));
    }
  }
  return bytes;
}

std::string AddressText(const std::array<uint8_t, 16>& bytes, bool v4) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
  return buf;
}

}  // namespace

absl::StatusOr<Cidr> Cidr::Parse(absl::string_view text) {
  const std::string quoted = absl::StrCat("\"", text, "\"");
  if (text.empty()) return absl::InvalidArgumentError("empty CIDR");
  if (text.size() > 64) return absl::InvalidArgumentError(absl::StrCat(quoted, " is too long"));
  const size_t slash = text.find('/');
  absl::string_view addr = text.substr(0, slash);
  const bool v4 = addr.find(':') == absl::string_view::npos;
  std::array<uint8_t, 16> bytes{};
  const std::string addr_str(addr);
  if (inet_pton(v4 ? AF_INET : AF_INET6, addr_str.c_str(), bytes.data()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(quoted, " is not a valid ", v4 ? "IPv4" : "IPv6",
                                                   " network (expected e.g. ",
                                                   v4 ? "\"10.0.0.0/8\"" : "\"fd00::/8\"", ")"));
  }
  const int max_len = v4 ? 32 : 128;
  if (slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(quoted, " has no prefix length; did you mean \"", addr, "/", max_len, "\"?"));
  }
  absl::string_view len_text = text.substr(slash + 1);
  int len = 0;
  bool len_ok =
      !len_text.empty() && len_text.size() <= 3 && (len_text.size() == 1 || len_text[0] != '0');
  for (char c : len_text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) len_ok = false;
  }
  if (len_ok) {
    for (char c : len_text) len = len * 10 + (c - '0');
    len_ok = len <= max_len;
  }
  if (!len_ok) {
    return absl::InvalidArgumentError(absl::StrCat(quoted, " has an invalid prefix length (0 to ",
                                                   max_len, " for ", v4 ? "IPv4" : "IPv6", ")"));
  }
  const int nbytes = v4 ? 4 : 16;
  std::array<uint8_t, 16> net = Masked(bytes, len, nbytes);
  if (net != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(quoted, " has host bits set; did you mean \"",
                                                   AddressText(net, v4), "/", len, "\"?"));
  }
  return Cidr(v4 ? Family::kIpv4 : Family::kIpv6, net, len);
}

std::string Cidr::ToString() const {
  return absl::StrCat(AddressText(bytes_, family_ == Family::kIpv4), "/", prefix_length_);
}

bool Cidr::Covers(const Cidr& other) const {
  if (family_ != other.family_ || prefix_length_ > other.prefix_length_) return false;
  return Masked(other.bytes_, prefix_length_, address_bytes()) == bytes_;
}

}  // namespace lazaret::vocab
