# The configuration loader's core: TOML schema, merge, narrowing, expansion.
# It needs only Abseil, toml++ (header-only, TOML_EXCEPTIONS=0),
# persist_layout, host_paths (services/common/profile_paths), and lazaret_vocab's auto_approve rules, path checks,
# CIDRs, domain patterns, escaping, HTTP rules, port forwards, profile names, shell
# words and UTF-8, so the libFuzzer build in tests/fuzz can compile it with
# clang on its own.
# Included by services/configd/CMakeLists.txt and tests/fuzz/CMakeLists.txt.
set(LAZARET_CONFIG_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/diagnostics.cc
  ${CMAKE_CURRENT_LIST_DIR}/dns_upstream.cc
  ${CMAKE_CURRENT_LIST_DIR}/embedded_default.cc
  ${CMAKE_CURRENT_LIST_DIR}/loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/narrowing.cc
  ${CMAKE_CURRENT_LIST_DIR}/network_narrowing.cc
  ${CMAKE_CURRENT_LIST_DIR}/persist_coherence.cc
  ${CMAKE_CURRENT_LIST_DIR}/resolve.cc
  ${CMAKE_CURRENT_LIST_DIR}/schema.cc
  ${CMAKE_CURRENT_LIST_DIR}/schema_values.cc
  ${CMAKE_CURRENT_LIST_DIR}/toml_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/../common/persist_layout.cc
  ${CMAKE_CURRENT_LIST_DIR}/../common/profile_paths/host_paths.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/auto_approve.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/auto_approve_classes.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/auto_approve_runners.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/cidr.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/domain_pattern.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/escape.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/host_path.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/http_rule.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/port_spec.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/profile_name.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/shell_words.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/text_scan.cc
  ${CMAKE_CURRENT_LIST_DIR}/../vocab/utf8.cc
)
set(LAZARET_CONFIG_TOML_DEFINITIONS TOML_EXCEPTIONS=0 TOML_HEADER_ONLY=1 TOML_ENABLE_FORMATTERS=0)
set(LAZARET_CONFIG_ABSL_LIBS absl::status absl::statusor absl::strings absl::str_format)
