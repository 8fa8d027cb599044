#include "services/netpolicyd/trace_message.h"

#include <sys/socket.h>

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "pkg/sentry/seccheck/points/common.pb.h"
#include "services/vocab/escape.h"

namespace lazaret::netpolicyd {
namespace {

// wire.HeaderStructSize: u16 header size, u16 message type, u32 dropped
// count, in the Sentry's (the host's) byte order.
constexpr size_t kHeaderSize = 8;
// The handshake is a one-field message; the Sentry reads ours into 10 KiB.
constexpr size_t kMaxHandshake = 1024;
// The largest sockaddr a connect(2) may pass (sizeof(struct
// sockaddr_storage)).
constexpr size_t kMaxSockaddr = 128;

// Field numbers of pkg/sentry/seccheck/points/{syscall,common}.proto
// (third_party/gvisor): gvisor.syscall.Connect, its Exit and the
// gvisor.common.ContextData.
constexpr int kConnectContext = 1;  // ContextData context_data
constexpr int kConnectExit = 2;     // Exit exit
constexpr int kConnectAddress = 6;  // bytes address
constexpr int kExitErrno = 2;       // int64 errorno
constexpr int kContextTime = 1;     // int64 time_ns
constexpr int kContextProcess = 9;  // string process_name

// The last occurrence wins, as in a generated parse.
std::optional<std::string> LastBytes(const google::protobuf::UnknownFieldSet& set, int number) {
  std::optional<std::string> out;
  for (int i = 0; i < set.field_count(); ++i) {
    const google::protobuf::UnknownField& f = set.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      out = f.length_delimited();
    }
  }
  return out;
}

std::optional<uint64_t> LastVarint(const google::protobuf::UnknownFieldSet& set, int number) {
  std::optional<uint64_t> out;
  for (int i = 0; i < set.field_count(); ++i) {
    const google::protobuf::UnknownField& f = set.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      out = f.varint();
    }
  }
  return out;
}

// A process name kept to kMaxTraceProcessName bytes, escaped to plain
// ASCII (EscapeForTerminal): valid UTF-8 for the log's protobufs, and
// nothing a terminal would act on.
std::string PrintableProcess(absl::string_view name) {
  return vocab::EscapeForTerminal(name.substr(0, kMaxTraceProcessName));
}

uint16_t Host16(absl::string_view b, size_t at) {
  uint16_t v;
  std::memcpy(&v, b.data() + at, sizeof(v));
  return v;
}

uint32_t Host32(absl::string_view b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, sizeof(v));
  return v;
}

}  // namespace

absl::StatusOr<uint32_t> ParseTraceHandshake(absl::string_view bytes) {
  if (bytes.size() > kMaxHandshake) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace handshake of ", bytes.size(), " bytes (at most ", kMaxHandshake, ")"));
  }
  gvisor::common::Handshake hs;
  if (!hs.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("trace handshake does not parse");
  }
  if (hs.version() < kTraceWireVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace wire version ", hs.version(), " is older than ", kTraceWireVersion));
  }
  return hs.version();
}

std::string TraceHandshakeReply() {
  gvisor::common::Handshake hs;
  hs.set_version(kTraceWireVersion);
  return hs.SerializeAsString();
}

std::optional<std::pair<IpPrefix, uint16_t>> ParseInetSockaddr(absl::string_view b) {
  if (b.size() < 2 || b.size() > kMaxSockaddr) return std::nullopt;
  const uint16_t family = Host16(b, 0);
  std::array<uint8_t, 16> addr{};
  // sin_port / sin6_port are in network byte order at offset 2.
  auto port = [&] {
    return static_cast<uint16_t>((static_cast<uint8_t>(b[2]) << 8) | static_cast<uint8_t>(b[3]));
  };
  if (family == AF_INET) {
    if (b.size() < 16) return std::nullopt;  // sizeof(struct sockaddr_in)
    std::memcpy(addr.data(), b.data() + 4, 4);
    return std::make_pair(IpPrefix::Make(IpPrefix::Family::kIpv4, addr, 32), port());
  }
  if (family == AF_INET6) {
    if (b.size() < 24) return std::nullopt;  // SIN6_LEN_RFC2133: no scope id
    std::memcpy(addr.data(), b.data() + 8, 16);
    return std::make_pair(IpPrefix::Make(IpPrefix::Family::kIpv6, addr, 128), port());
  }
  return std::nullopt;
}

absl::StatusOr<TraceMessage> ParseTraceMessage(absl::string_view bytes) {
  if (bytes.size() > kMaxTraceMessage) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace message of ", bytes.size(), " bytes (at most ", kMaxTraceMessage, ")"));
  }
  if (bytes.size() < kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace message of ", bytes.size(), " bytes is shorter than its header"));
  }
  const uint16_t header_size = Host16(bytes, 0);
  // A later header may be longer (fields are only added), never shorter.
  if (header_size < kHeaderSize || header_size > bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace header size ", header_size, " outside the message of ", bytes.size()));
  }
  TraceMessage m;
  m.type = Host16(bytes, 2);
  m.dropped = Host32(bytes, 4);
  if (m.type != kTraceMessageConnect) return m;
  const absl::string_view payload = bytes.substr(header_size);
  // Decoded field by field rather than as gvisor.syscall.Connect: proto3
  // rejects a string that is not UTF-8, and a process may name itself
  // anything, so a generated parse would let the sandbox end its own log
  // with one prctl(PR_SET_NAME).
  google::protobuf::UnknownFieldSet connect;
  if (!connect.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::InvalidArgumentError("trace Connect message does not parse");
  }
  std::optional<std::string> exit_bytes = LastBytes(connect, kConnectExit);
  // Only the exit point carries the outcome; an enter point is not logged.
  if (!exit_bytes.has_value()) return m;
  std::optional<std::string> address = LastBytes(connect, kConnectAddress);
  if (!address.has_value()) return m;
  std::optional<std::pair<IpPrefix, uint16_t>> dst = ParseInetSockaddr(*address);
  if (!dst.has_value()) return m;
  google::protobuf::UnknownFieldSet exit;
  if (!exit.ParseFromString(*exit_bytes)) {
    return absl::InvalidArgumentError("trace Connect exit does not parse");
  }
  TraceConnect out;
  out.address = dst->first;
  out.port = dst->second;
  out.errno_value = static_cast<int64_t>(LastVarint(exit, kExitErrno).value_or(0));
  if (std::optional<std::string> ctx = LastBytes(connect, kConnectContext); ctx.has_value()) {
    google::protobuf::UnknownFieldSet context;
    if (!context.ParseFromString(*ctx)) {
      return absl::InvalidArgumentError("trace Connect context does not parse");
    }
    out.time_ns = static_cast<int64_t>(LastVarint(context, kContextTime).value_or(0));
    out.process = PrintableProcess(LastBytes(context, kContextProcess).value_or(""));
  }
  m.connect = std::move(out);
  return m;
}

}  // namespace lazaret::netpolicyd
