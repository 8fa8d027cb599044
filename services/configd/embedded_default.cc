#include "services/configd/embedded_default.h"

#include "absl/strings/str_cat.h"

namespace lazaret::config {

const std::string& EmbeddedDefaultToml() {
  static const std::string* const kText =
      new std::string(absl::StrCat(R"toml(
# Lazaret's built-in defaults (the lowest layer). See docs/configuration.md.
default_profile = ")toml",
                                   kDefaultProfileName, R"toml("

[storage]
data_root = "~/.local/share/lazaret"

[network]
# Unlisted names are asked for: a query for a name outside the lists is
# held until you allow it (once, for the session, or for the profile) or
# refuse it. "open" reaches every public address and name; "names" only the
# listed ones.
egress = "ask"
ask_timeout = 120         # seconds a held name waits for a decision
ask_unattended = "deny"   # no approver attached: refuse unlisted names at once
trust_host_ca = false     # true: the sandbox trusts the CAs the host adds
# Used only with egress = "open".
default_allow = ["0.0.0.0/0", "::/0"]
# Common developer hosts, reachable in every mode without asking.
default_allow_domains = [
  "deb.debian.org", "security.debian.org",                     # Debian
  "registry.npmjs.org",                                        # npm
  "pypi.org", "files.pythonhosted.org",                        # PyPI
  "crates.io", "index.crates.io", "static.crates.io",          # crates.io
  "proxy.golang.org", "sum.golang.org",                        # Go modules
  "github.com", "api.github.com", "codeload.github.com",
  "*.githubusercontent.com",                                   # GitHub
  "api.anthropic.com",                                         # Anthropic
  "api.openai.com", "auth.openai.com", "chatgpt.com",          # OpenAI
  "generativelanguage.googleapis.com", "oauth2.googleapis.com",  # Google
]
# Never reachable from a sandbox unless a trusted layer says otherwise:
# private, shared, loopback, link-local (cloud metadata), multicast and
# reserved ranges, and the IPv6 forms that embed IPv4 addresses.
default_deny = [
  "0.0.0.0/8",        # "this network"
  "10.0.0.0/8",       # RFC 1918
  "100.64.0.0/10",    # RFC 6598 carrier-grade NAT / tailnets
  "127.0.0.0/8",      # loopback
  "169.254.0.0/16",   # link-local, 169.254.169.254 cloud metadata
  "172.16.0.0/12",    # RFC 1918
  "192.0.0.0/24",     # IETF protocol assignments
  "192.168.0.0/16",   # RFC 1918
  "198.18.0.0/15",    # benchmarking, used inside some private networks
  "224.0.0.0/4",      # multicast
  "240.0.0.0/4",      # reserved, 255.255.255.255 broadcast
  "::/128",           # unspecified
  "::1/128",          # loopback
  "::ffff:0:0/96",    # IPv4-mapped
  "64:ff9b::/96",     # NAT64 well-known prefix
  "64:ff9b:1::/48",   # NAT64 local-use prefix
  "100::/64",         # discard-only
  "2002::/16",        # 6to4 (embeds IPv4 addresses)
  "fc00::/7",         # unique local
  "fe80::/10",        # link-local
  "fec0::/10",        # deprecated site-local
  "ff00::/8",         # multicast
]

[escalation]
enabled = true
socket_dir = "{runtime_dir}/escalation"
auto_approve = []
command_timeout = 60    # seconds an approved command may run on the host
approval_timeout = 300  # seconds a request waits for you before it is denied
rate_limit = 10         # requests per second one session may send (bursts of twice that)
approver = "inline"     # "inline": lazaret run prompts when no lazaret approve is attached; "remote": never

[session]
on_detach = "keep"      # no terminal attached: the agent runs on ("stop": stop cleanly at once)
detached_limit = "12h"  # a kept session with no terminal attached this long is stopped cleanly

[terminal]
clipboard_write = false  # true: the sandbox's OSC 52 clipboard writes reach your terminal

[profiles.)toml",
                                   kDefaultProfileName, R"toml(]
image = ")toml",
                                   kDefaultSandboxImage, R"toml("
)toml"));
  return *kText;
}

}  // namespace lazaret::config
