#include "tests/e2e/net_e2e_world.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/e2e/net_e2e_hosts.h"

namespace lazaret::test::e2e::net {
namespace {

constexpr char kSandboxImage[] = "localhost/lazaret-sandbox:trixie";
constexpr char kUserConfigMarker[] = "# written by net_e2e_test, removed at its end\n";

NetWorld* world = nullptr;

std::vector<TestDnsRecord> Records() {
  using T = DnsRecordType;
  return {
      {kNameOk, T::kA, kPublicV4, 300},
      {kNameOk, T::kAaaa, kPublicV6, 300},
      {kNameWild, T::kA, "198.51.100.4", 300},
      {kNameWildApex, T::kA, kPublicV4, 300},
      {kNameChain, T::kCname, "hop.lzt-cdn.test", 300},
      {"hop.lzt-cdn.test", T::kCname, "end.lzt-cdn.test", 300},
      {"end.lzt-cdn.test", T::kA, kPublicCname, 300},
      {kNamePrivate, T::kA, kPrivate10, 300},
      {kNameHostAddr, T::kA, kPublicHostSide, 300},
      {kNameSecret, T::kA, kPublicV4, 300},
      {kNameLate, T::kA, "198.51.100.5", 300},
      {kNameFree, T::kA, kPublicV4, 300},
      {kNameBypass, T::kA, kPublicV4, 300},
      {kNameEgressApi, T::kA, kPublicV4, 300},
      {kNameEgressOther, T::kA, kPublicV4, 300},
      {kNameEgressPlain, T::kA, kPublicV4, 300},
  };
}

std::string Profile(const std::string& name, const std::string& body, const std::string& probe) {
  return absl::StrCat("[profiles.", name, "]\nimage = \"", kSandboxImage, "\"\n", body,
                      "[[profiles.", name, ".volumes]]\nhost = \"", probe,
                      "\"\ncontainer = \"/opt/probe\"\nmode = \"ro\"\n\n");
}

}  // namespace

NetWorld& NetWorld::Get() {
  if (world == nullptr) {
    world = new NetWorld();
    world->Build();
  }
  return *world;
}

void NetWorld::Destroy() {
  delete world;
  world = nullptr;
}

void NetWorld::Build() {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(NetTestHostSpecs());
  if (!hosts.ok()) {
    error_ = absl::StrCat("test hosts: ", hosts.status().ToString());
    return;
  }
  hosts_ = std::move(*hosts);
  // Built after the test hosts, so their host-side addresses count.
  absl::StatusOr<std::unique_ptr<Listeners>> l = Listeners::Start("", {"0.0.0.0", "::"}, 0);
  if (!l.ok()) {
    error_ = absl::StrCat("host listener: ", l.status().ToString());
    return;
  }
  host_listener_ = std::move(*l);
  absl::Status dns_started;
  absl::Status inside = hosts_->Find("pub")->RunInside([&] {
    TestDnsServerOptions options;
    options.listen = absl::StrCat(kDnsServer, ":53");
    options.records = Records();
    absl::StatusOr<std::unique_ptr<TestDnsServer>> dns = TestDnsServer::Start(options);
    dns_started = dns.status();
    if (dns.ok()) dns_ = std::move(*dns);
  });
  if (!inside.ok() || !dns_started.ok()) {
    error_ = absl::StrCat("test DNS server: ", inside.ToString(), " ", dns_started.ToString());
    return;
  }

  probe_dir_ = std::make_unique<UserDir>("netprobe");
  const std::string probe = probe_dir_->path() + "/net_probe";
  if (test::Run({"cp", test::Binary("lazaret_net_probe"), probe}).exit_code != 0) {
    error_ = "cannot copy the probe";
    return;
  }
  chmod(probe.c_str(), 0755);
  config_dir_ = std::make_unique<UserDir>("netcfg");
  ws_pub_ = std::make_unique<UserDir>("netws-pub");
  ws_names_ = std::make_unique<UserDir>("netws-names");
  ws_kill_ = std::make_unique<UserDir>("netws-kill");
  // Open egress: every name resolves (the tests of addresses need that);
  // netnames answers listed names only.
  const std::string pub_body = absl::StrCat("egress = \"open\"\nallow_egress = [\"", kSubnetCidr,
                                            "\", \"10.203.0.3/32\", \"172.20.99.0/24\"]\n");
  config_text_ =
      absl::StrCat("[network]\ndefault_deny = ", DefaultDenyWith({"172.20.99.0/24"}), "\n\n",
                   Profile(kPubProfile, pub_body, probe_dir_->path()),
                   Profile(kKillProfile, pub_body, probe_dir_->path()),
                   Profile(kNamesProfile,
                           absl::StrCat("egress = \"names\"\ndefault_allow = []\n"
                                        "allow_domains = [\"",
                                        kNameOk, "\", \"*.wild.lzt.test\", \"", kNameChain,
                                        "\", \"", kNamePrivate, "\", \"", kNameHostAddr, "\"]\n"),
                           probe_dir_->path()));
  config_ = config_dir_->Write("net.toml", config_text_);

  // The upstream resolver is the user's own setting.
  user_config_ = std::make_unique<UserConfig>(
      kUserConfigMarker, absl::StrCat("[network]\ndns_upstream = [\"", kDnsServer, ":53\"]\n"));
  if (!user_config_->error().empty()) error_ = user_config_->error();
}

NetWorld::~NetWorld() {
  pub_.reset();
  names_.reset();
  extra_sessions_.clear();
  extra_workspaces_.clear();
  user_config_.reset();
  dns_.reset();
  host_listener_.reset();
  hosts_.reset();
}

NetSession* NetWorld::Shared(const std::string& profile, std::unique_ptr<NetSession>* slot) {
  std::string& err = profile == kPubProfile ? pub_error_ : names_error_;
  if (*slot == nullptr && err.empty()) {
    absl::StatusOr<std::unique_ptr<NetSession>> s = StartSession(profile);
    if (s.ok()) {
      *slot = std::move(*s);
    } else {
      err = s.status().ToString();
    }
  }
  return slot->get();
}

NetSession* NetWorld::Pub() { return Shared(kPubProfile, &pub_); }

NetSession* NetWorld::SharedSession(const std::string& profile) {
  if (extra_workspaces_.count(profile) == 0) {
    extra_errors_[profile] = absl::StrCat("no profile ", profile, ": AddProfile it first");
    return nullptr;
  }
  std::unique_ptr<NetSession>& slot = extra_sessions_[profile];
  if (slot == nullptr && extra_errors_[profile].empty()) {
    absl::StatusOr<std::unique_ptr<NetSession>> s = StartSession(profile);
    if (s.ok()) {
      slot = *std::move(s);
    } else {
      extra_errors_[profile] = s.status().ToString();
    }
  }
  return slot.get();
}
NetSession* NetWorld::Names() { return Shared(kNamesProfile, &names_); }

absl::Status NetWorld::AddProfile(const std::string& name, const std::string& body) {
  if (config_dir_ == nullptr) return absl::FailedPreconditionError("the world was not built");
  if (name == kPubProfile || name == kKillProfile || name == kNamesProfile ||
      extra_workspaces_.count(name) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("profile ", name, " is already in the config"));
  }
  extra_workspaces_[name] = std::make_unique<UserDir>("netws-" + name);
  absl::StrAppend(&config_text_, Profile(name, body, probe_dir_->path()));
  config_ = config_dir_->Write("net.toml", config_text_);
  return absl::OkStatus();
}

std::string NetWorld::Workspace(const std::string& profile) const {
  if (auto it = extra_workspaces_.find(profile); it != extra_workspaces_.end()) {
    return it->second->path();
  }
  if (profile == kPubProfile) return ws_pub_->path();
  if (profile == kNamesProfile) return ws_names_->path();
  return ws_kill_->path();
}

absl::StatusOr<std::unique_ptr<NetSession>> NetWorld::StartSession(const std::string& profile) {
  const std::string ws = Workspace(profile);
  return NetSession::Start(ws, config_, profile, config_dir_->path() + "/" + profile + ".log");
}

}  // namespace lazaret::test::e2e::net
