#include "tests/e2e/escalation_e2e_world.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace lazaret::test::e2e::esc {
namespace {

constexpr char kSandboxImage[] = "localhost/lazaret-sandbox:trixie";

EscWorld* world = nullptr;

const char* ProfileOf(Slot s) {
  switch (s) {
    case Slot::kOther:
      return kOtherProfile;
    case Slot::kOff:
      return kOffProfile;
    default:
      return kProfile;
  }
}

}  // namespace

std::string ProfileToml(const std::string& name, const std::string& probe_dir) {
  return absl::StrCat("[profiles.", name, "]\nimage = \"", kSandboxImage, "\"\n[[profiles.", name,
                      ".volumes]]\nhost = \"", probe_dir,
                      "\"\ncontainer = \"/opt/probe\"\nmode = \"ro\"\n\n");
}

EscWorld& EscWorld::Get() {
  if (world == nullptr) {
    world = new EscWorld();
    world->Build();
  }
  return *world;
}

void EscWorld::Destroy() {
  delete world;
  world = nullptr;
}

void EscWorld::Build() {
  probe_dir_ = std::make_unique<UserDir>("escprobe");
  const std::string raw = probe_dir_->path() + "/escalation_raw_client";
  if (test::Run({"cp", test::Binary("lazaret_escalation_raw_client"), raw}).exit_code != 0) {
    error_ = "cannot copy the raw client";
    return;
  }
  chmod(raw.c_str(), 0755);
  config_dir_ = std::make_unique<UserDir>("esccfg");
  scratch_ = std::make_unique<UserDir>("escscratch");
  config_ = config_dir_->Write(
      "esc.toml",
      absl::StrCat("[escalation]\nenabled = true\nauto_approve = [{ prefix = \"uname\", options = [\"-s\", \"-n\"] }, "
                   "{ exact = \"",
                   kExactEntry, "\" }]\ncommand_timeout = ", kCommandTimeout,
                   "\napproval_timeout = ", kApprovalTimeout, "\n\n",
                   ProfileToml(kProfile, probe_dir_->path()),
                   ProfileToml(kOtherProfile, probe_dir_->path())));
  off_config_ =
      config_dir_->Write("escoff.toml", absl::StrCat("[escalation]\nenabled = false\n\n",
                                                     ProfileToml(kOffProfile, probe_dir_->path())));
  const char* names[] = {"escws-a", "escws-b", "escws-other", "escws-off"};
  for (int i = 0; i < 4; ++i) slots_[i].workspace = std::make_unique<UserDir>(names[i]);
}

EscWorld::~EscWorld() {
  for (auto& s : slots_) s.session.reset();
}

net::NetSession* EscWorld::Session(Slot s) {
  Shared& sh = slot(s);
  if (sh.session == nullptr && sh.error.empty() && !sh.ended && error_.empty()) {
    const std::string profile = ProfileOf(s);
    absl::StatusOr<std::unique_ptr<net::NetSession>> started = net::NetSession::Start(
        sh.workspace->path(), s == Slot::kOff ? off_config_ : config_, profile,
        config_dir_->path() + "/" + profile + "-" + std::to_string(static_cast<int>(s)) + ".log");
    if (started.ok()) {
      sh.session = std::move(*started);
    } else {
      sh.error = started.status().ToString();
    }
  }
  return sh.session.get();
}

std::string EscWorld::SessionError(Slot s) const {
  const Shared& sh = slot(s);
  if (sh.ended) return "the session was ended by an earlier test";
  return sh.error.empty() ? error_ : sh.error;
}

std::string EscWorld::Workspace(Slot s) const { return slot(s).workspace->path(); }

int EscWorld::End(Slot s) {
  Shared& sh = slot(s);
  sh.ended = true;
  if (sh.session == nullptr) return -1;
  const int rc = sh.session->End();
  sh.session.reset();
  return rc;
}

absl::StatusOr<std::unique_ptr<net::NetSession>> EscWorld::StartOwn(const std::string& config,
                                                                    const std::string& profile,
                                                                    std::string* workspace) {
  own_workspaces_.push_back(std::make_unique<UserDir>("escws-own"));
  *workspace = own_workspaces_.back()->path();
  return net::NetSession::Start(*workspace, config, profile, *workspace + ".log");
}

}  // namespace lazaret::test::e2e::esc
