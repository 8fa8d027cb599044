#include "services/netpolicyd/dns_message.h"

#include <sys/random.h>

#include <cerrno>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lazaret::netpolicyd::dns {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxNameWire = 255;
constexpr int kMaxChain = 16;
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagTc = 0x0200;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed DNS message: ", what));
}

class Reader {
 public:
  explicit Reader(absl::string_view m) : m_(m) {}

  bool U16(size_t& at, uint16_t* v) const {
    if (at + 2 > m_.size()) return false;
    *v = static_cast<uint16_t>((Byte(at) << 8) | Byte(at + 1));
    at += 2;
    return true;
  }
  bool U32(size_t& at, uint32_t* v) const {
    uint16_t hi, lo;
    if (!U16(at, &hi) || !U16(at, &lo)) return false;
    *v = (static_cast<uint32_t>(hi) << 16) | lo;
    return true;
  }

  // Reads the name at `at` and moves `at` past it (past the first pointer
  // when compressed). Each pointer must point before the previous one's
  // target (or before itself, for the first), so the walk always ends.
  absl::Status ReadName(size_t& at, Name* out) const {
    out->clear();
    size_t pos = at;
    size_t limit = at;  // the next pointer must point below this
    bool jumped = false;
    size_t wire = 1;  // the root label
    while (true) {
      if (pos >= m_.size()) return Malformed("name runs past the end");
      uint8_t len = Byte(pos);
      if ((len & 0xC0) == 0xC0) {
        if (pos + 1 >= m_.size()) return Malformed("cut pointer");
        size_t target = ((len & 0x3F) << 8) | Byte(pos + 1);
        if (target >= limit || target >= pos) return Malformed("pointer does not point backwards");
        if (!jumped) at = pos + 2;
        jumped = true;
        limit = target;
        pos = target;
        continue;
      }
      if ((len & 0xC0) != 0) return Malformed("unknown label type");
      if (len == 0) {
        if (!jumped) at = pos + 1;
        return absl::OkStatus();
      }
      if (len > kMaxLabel) return Malformed("label longer than 63 octets");
      if (pos + 1 + len > m_.size()) return Malformed("label runs past the end");
      wire += 1 + len;
      if (wire > kMaxNameWire) return Malformed("name longer than 255 octets");
      out->emplace_back(m_.substr(pos + 1, len));
      pos += 1 + len;
    }
  }

 private:
  uint8_t Byte(size_t at) const { return static_cast<uint8_t>(m_[at]); }
  absl::string_view m_;
};

void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

void Set16(std::string& out, size_t at, uint16_t v) {
  out[at] = static_cast<char>(v >> 8);
  out[at + 1] = static_cast<char>(v & 0xff);
}

Name Lower(const Name& name) {
  Name lower = name;
  for (auto& label : lower) absl::AsciiStrToLower(&label);
  return lower;
}

// Writes names, each suffix compressed against the ones written before.
class NameWriter {
 public:
  explicit NameWriter(std::string* out) : out_(out) {}
  void Write(const Name& name) {
    Name lower = Lower(name);
    for (size_t i = 0; i < name.size(); ++i) {
      Name suffix(lower.begin() + i, lower.end());
      auto it = offsets_.find(suffix);
      if (it != offsets_.end()) {
        Put16(*out_, static_cast<uint16_t>(0xC000 | it->second));
        return;
      }
      if (out_->size() < 0x3FFF) offsets_.emplace(std::move(suffix), out_->size());
      out_->push_back(static_cast<char>(name[i].size()));
      out_->append(name[i]);
    }
    out_->push_back('\0');
  }

 private:
  std::string* out_;
  std::map<Name, size_t> offsets_;
};

void PutHeader(std::string& out, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an) {
  Put16(out, id);
  Put16(out, flags);
  Put16(out, qd);
  Put16(out, an);
  Put16(out, 0);
  Put16(out, 0);
}

absl::Status CheckName(const Name& name) {
  size_t wire = 1;
  for (const auto& label : name) {
    if (label.empty() || label.size() > kMaxLabel) return Malformed("bad label");
    wire += 1 + label.size();
  }
  if (wire > kMaxNameWire) return Malformed("name longer than 255 octets");
  return absl::OkStatus();
}

}  // namespace

bool SameName(const Name& a, const Name& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!absl::EqualsIgnoreCase(a[i], b[i])) return false;
  }
  return true;
}

absl::StatusOr<Query> ParseQuery(absl::string_view message) {
  Reader r(message);
  size_t at = 0;
  uint16_t id, flags, qd, an, ns, ar;
  if (!r.U16(at, &id) || !r.U16(at, &flags) || !r.U16(at, &qd) || !r.U16(at, &an) ||
      !r.U16(at, &ns) || !r.U16(at, &ar)) {
    return Malformed("shorter than a header");
  }
  if ((flags & kFlagQr) != 0) return Malformed("a response, not a query");
  if (((flags >> 11) & 0xF) != 0) return Malformed("opcode is not QUERY");
  if (qd != 1) return Malformed("not exactly one question");
  if (an != 0 || ns != 0) return Malformed("a query with answer or authority records");
  Query q;
  q.id = id;
  q.recursion_desired = (flags & kFlagRd) != 0;
  if (absl::Status s = r.ReadName(at, &q.question.name); !s.ok()) return s;
  if (!r.U16(at, &q.question.qtype) || !r.U16(at, &q.question.qclass)) {
    return Malformed("cut question");
  }
  return q;
}

std::optional<uint16_t> PeekId(absl::string_view message) {
  if (message.size() < 2) return std::nullopt;
  return static_cast<uint16_t>((static_cast<uint8_t>(message[0]) << 8) |
                               static_cast<uint8_t>(message[1]));
}

std::string BuildQuery(uint16_t id, const Question& question) {
  std::string out;
  PutHeader(out, id, kFlagRd, 1, 0);
  NameWriter(&out).Write(question.name);
  Put16(out, question.qtype);
  Put16(out, question.qclass);
  return out;
}

uint16_t RandomId() {
  uint16_t id = 0;
  while (getrandom(&id, sizeof(id), 0) != static_cast<ssize_t>(sizeof(id))) {
    if (errno != EINTR) abort();  // the kernel's generator never fails otherwise
  }
  return id;
}

absl::StatusOr<Response> ParseResponse(absl::string_view message, uint16_t id,
                                       const Question& question) {
  Reader r(message);
  size_t at = 0;
  uint16_t got_id, flags, qd, an, ns, ar;
  if (!r.U16(at, &got_id) || !r.U16(at, &flags) || !r.U16(at, &qd) || !r.U16(at, &an) ||
      !r.U16(at, &ns) || !r.U16(at, &ar)) {
    return Malformed("shorter than a header");
  }
  if (got_id != id) return Malformed("id does not match the query");
  if ((flags & kFlagQr) == 0) return Malformed("not a response");
  if (((flags >> 11) & 0xF) != 0) return Malformed("opcode is not QUERY");
  if (qd != 1) return Malformed("not exactly one question");
  Response resp;
  resp.id = got_id;
  resp.rcode = static_cast<Rcode>(flags & 0xF);
  resp.truncated = (flags & kFlagTc) != 0;
  if (absl::Status s = r.ReadName(at, &resp.question.name); !s.ok()) return s;
  if (!r.U16(at, &resp.question.qtype) || !r.U16(at, &resp.question.qclass)) {
    return Malformed("cut question");
  }
  if (!SameName(resp.question.name, question.name) || resp.question.qtype != question.qtype ||
      resp.question.qclass != question.qclass) {
    return Malformed("question does not match the query");
  }
  for (uint16_t i = 0; i < an; ++i) {
    ResourceRecord rr;
    uint16_t cls, rdlength;
    if (absl::Status s = r.ReadName(at, &rr.owner); !s.ok()) return s;
    if (!r.U16(at, &rr.type) || !r.U16(at, &cls) || !r.U32(at, &rr.ttl) || !r.U16(at, &rdlength)) {
      return Malformed("cut record");
    }
    size_t rdata = at;
    if (rdata + rdlength > message.size()) return Malformed("record data runs past the end");
    at = rdata + rdlength;
    if (rr.ttl > 0x7FFFFFFF) rr.ttl = 0;  // RFC 2181 8
    if (cls != kClassIn) continue;
    if (rr.type == kTypeA || rr.type == kTypeAaaa) {
      size_t want = rr.type == kTypeA ? 4 : 16;
      if (rdlength != want) return Malformed("address record of the wrong length");
      for (size_t b = 0; b < want; ++b) rr.address[b] = static_cast<uint8_t>(message[rdata + b]);
    } else if (rr.type == kTypeCname) {
      size_t name_at = rdata;
      if (absl::Status s = r.ReadName(name_at, &rr.target); !s.ok()) return s;
      if (name_at != rdata + rdlength) return Malformed("CNAME data is not one name");
    } else {
      continue;
    }
    resp.answers.push_back(std::move(rr));
  }
  return resp;
}

Chain FollowChain(const Response& response, const Question& question) {
  Chain chain;
  Name current = question.name;
  for (int hop = 0; hop < kMaxChain; ++hop) {
    const ResourceRecord* next = nullptr;
    for (const auto& rr : response.answers) {
      if (rr.type == kTypeCname && SameName(rr.owner, current)) {
        next = &rr;
        break;
      }
    }
    if (next == nullptr) break;
    chain.cnames.push_back(*next);
    current = next->target;
  }
  if (question.qtype != kTypeA && question.qtype != kTypeAaaa) return chain;
  for (const auto& rr : response.answers) {
    if (rr.type == question.qtype && SameName(rr.owner, current)) chain.addresses.push_back(rr);
  }
  return chain;
}

std::string BuildAnswer(const Query& query, Rcode rcode, const std::vector<ResourceRecord>& answers,
                        bool udp) {
  uint16_t flags = kFlagQr | kFlagRa | static_cast<uint16_t>(rcode);
  if (query.recursion_desired) flags |= kFlagRd;
  std::string out;
  PutHeader(out, query.id, flags, 1, 0);
  NameWriter names(&out);
  names.Write(query.question.name);
  Put16(out, query.question.qtype);
  Put16(out, query.question.qclass);
  size_t question_end = out.size();
  uint16_t count = 0;
  for (const auto& rr : answers) {
    size_t data_bytes = rr.type == kTypeA ? 4 : rr.type == kTypeAaaa ? 16 : 0;
    if ((rr.type != kTypeCname && data_bytes == 0) || !CheckName(rr.owner).ok() ||
        (rr.type == kTypeCname && !CheckName(rr.target).ok()) || count == 0xFFFF) {
      continue;
    }
    names.Write(rr.owner);
    Put16(out, rr.type);
    Put16(out, kClassIn);
    Put16(out, static_cast<uint16_t>(rr.ttl >> 16));
    Put16(out, static_cast<uint16_t>(rr.ttl & 0xFFFF));
    size_t length_at = out.size();
    Put16(out, 0);
    size_t start = out.size();
    if (rr.type == kTypeCname) {
      names.Write(rr.target);
    } else {
      out.append(reinterpret_cast<const char*>(rr.address.data()), data_bytes);
    }
    Set16(out, length_at, static_cast<uint16_t>(out.size() - start));
    ++count;
  }
  if (udp && out.size() > kMaxUdpAnswer) {
    out.resize(question_end);
    Set16(out, 2, flags | kFlagTc);
    count = 0;
  }
  Set16(out, 6, count);
  return out;
}

std::string BuildFormErr(uint16_t id) {
  std::string out;
  PutHeader(out, id, kFlagQr | kFlagRa | static_cast<uint16_t>(Rcode::kFormErr), 0, 0);
  return out;
}

std::string NameText(const Name& name) {
  if (name.empty()) return ".";
  std::string text;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i > 0) text.push_back('.');
    for (unsigned char c : name[i]) {
      if (c == '.' || c == '\\') {
        text.push_back('\\');
        text.push_back(static_cast<char>(c));
      } else if (c > 0x20 && c < 0x7F) {
        text.push_back(static_cast<char>(c));
      } else {
        absl::StrAppendFormat(&text, "\\%03d", c);
      }
    }
  }
  return text;
}

std::string TypeName(uint16_t type) {
  switch (type) {
    case kTypeA:
      return "A";
    case 2:
      return "NS";
    case kTypeCname:
      return "CNAME";
    case 6:
      return "SOA";
    case 12:
      return "PTR";
    case 15:
      return "MX";
    case 16:
      return "TXT";
    case kTypeAaaa:
      return "AAAA";
    case 33:
      return "SRV";
    case 64:
      return "SVCB";
    case 65:
      return "HTTPS";
    case 255:
      return "ANY";
    default:
      return absl::StrCat("TYPE", type);
  }
}

}  // namespace lazaret::netpolicyd::dns
