// Typed, bounded reads from one parsed configuration layer, for the schema
// (schema.cc): each read checks type, size and content and reports every
// problem to Diagnostics with the file, key path and position. Part of
// lazaret_config (runs in lazaret-configd and the loader fuzzer). The table
// comes from untrusted text, so nothing is returned that was not checked.
#ifndef LAZARET_SERVICES_CONFIGD_TOML_READER_H_
#define LAZARET_SERVICES_CONFIGD_TOML_READER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "services/configd/diagnostics.h"
#include "services/configd/schema.h"
#include "services/configd/toml.h"
#include "services/vocab/auto_approve.h"
#include "services/vocab/cidr.h"
#include "services/vocab/http_rule.h"
#include "services/vocab/port_spec.h"

namespace lazaret::config {

// Whether `s` has a control character (below 0x20, or DEL).
bool HasControlChar(absl::string_view s);

// `s` in double quotes for a diagnostic, with '"' and '\' escaped and
// control characters written as \u00XX.
std::string QuoteValue(absl::string_view s);

class TomlReader {
 public:
  // `file` and `diags` must outlive the reader.
  TomlReader(Layer layer, const std::string& file, Diagnostics& diags)
      : layer_(layer), file_(file), diags_(diags) {}

  Origin At(const std::string& key_path, uint32_t line, uint32_t column) const;
  Origin At(const std::string& key_path, const toml::node& n) const;

  // "expected <expected>, found <the node's type>".
  void TypeError(const toml::node& n, const std::string& path, const char* expected);

  // Each returns nothing (after reporting why) for a value that fails.
  // parent[key] when it is a table; null when absent.
  const toml::table* Table(const toml::table& parent, const char* key, const std::string& path);
  // At most kMaxStringBytes, no NUL.
  std::optional<Setting<std::string>> String(const toml::node& n, const std::string& path);
  // At most kMaxListEntries entries.
  const toml::array* Array(const toml::node& n, const std::string& path);
  // A host path template using only `tokens` (host_paths.h).
  std::optional<Setting<std::string>> PathTemplate(const toml::node& n, const std::string& path,
                                                   unsigned tokens);
  // A list of networks in CIDR form.
  std::optional<SettingList<vocab::Cidr>> CidrList(const toml::node& n, const std::string& path);
  // A list of DNS names (domain_pattern.h), canonical.
  std::optional<SettingList<std::string>> DomainList(const toml::node& n, const std::string& path);
  // network.dns_upstream: resolver addresses (dns_upstream.h), canonical,
  // none listed twice.
  std::optional<SettingList<std::string>> DnsUpstreamList(const toml::node& n,
                                                          const std::string& path);
  // profiles.<name>.ports: at most `max` forwards (vocab::ParsePortSpec), no host
  // port twice on the same address.
  std::optional<SettingList<vocab::PortSpec>> PortList(const toml::node& n, const std::string& path,
                                                size_t max);
  // profiles.<name>.http."<host>".allow: "METHOD /path-prefix" entries
  // (vocab::ParseHttpAllow).
  std::optional<SettingList<vocab::HttpAllow>> HttpAllowList(const toml::node& n,
                                                             const std::string& path);
  // escalation.auto_approve: each entry is a string (the prefix form) or a
  // table with exactly one of `prefix` or `exact`, and passes
  // vocab::CheckAutoApproveEntry in its form.
  std::optional<SettingList<vocab::CommandPrefix>> AutoApprove(const toml::node& n,
                                                        const std::string& path);
  // An integer number of seconds in [min, max].
  std::optional<Setting<uint32_t>> Seconds(const toml::node& n, const std::string& path,
                                           int64_t min, int64_t max);
  // A size in bytes in [min, max]: a string ParseByteSize accepts
  // ("4GiB"), or an integer number of bytes.
  std::optional<Setting<uint64_t>> ByteSize(const toml::node& n, const std::string& path,
                                            uint64_t min, uint64_t max);
  // A duration in seconds in [min, max]: a string ParseDuration accepts
  // ("12h").
  std::optional<Setting<uint32_t>> Duration(const toml::node& n, const std::string& path,
                                            uint32_t min, uint32_t max);
  // An integer in [min, max] counted in `unit` ("requests per second").
  std::optional<Setting<uint32_t>> Count(const toml::node& n, const std::string& path, int64_t min,
                                         int64_t max, const std::string& unit, int64_t example);

 private:
  // A list of strings, each turned into a T by `parse` (which reports its
  // own diagnostic and returns nullopt for an entry it refuses). nullopt
  // when the list or any entry is refused; every entry is checked.
  template <typename T, typename Parse>
  std::optional<SettingList<T>> StringList(const toml::node& n, const std::string& path,
                                           Parse parse);

  std::optional<Setting<vocab::CommandPrefix>> AutoApproveEntry(const toml::node& n,
                                                         const std::string& path);

  Layer layer_;
  const std::string& file_;
  Diagnostics& diags_;
};

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_TOML_READER_H_
