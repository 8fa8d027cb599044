#include "services/sessiond/workspace/snapshot.h"

#include <sys/stat.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "services/sessiond/workspace/walk.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/common/status_util.h"

namespace lazaret::cli::workspace {

absl::StatusOr<GitDirSnapshot> TakeGitDirSnapshot(const std::string& session_id,
                                                  std::vector<ScanRoot> roots, bool quarantine,
                                                  const ScanLimits& limits) {
  GitDirSnapshot snap;
  snap.session_id = session_id;
  snap.quarantine = quarantine;
  clock_gettime(CLOCK_REALTIME, &snap.since);
  const int depth = AffordableDepth(limits.max_depth);
  for (ScanRoot& r : roots) {
    struct stat st {};
    // A volume that is a single file holds no repository (and its mode is
    // the developer's to watch); only directories are walked.
    if (lstat(r.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (r.root_git_protected && lstat(absl::StrCat(r.path, "/.git").c_str(), &st) != 0) {
      r.root_git_protected = false;  // a .git the agent makes there is its own
    }
    r.owner_uid.reset();
    r.owner_gid.reset();
    if (r.hand_back_ownership) {
      if (st.st_uid != 0) r.owner_uid = st.st_uid;
      if (st.st_gid != 0) r.owner_gid = st.st_gid;
    }
    snap.roots.push_back(std::move(r));
  }
  for (size_t i = 0; i < snap.roots.size(); ++i) {
    Walk w(Purpose::kSnapshot, snap.roots[i], snap.since, limits, depth, nullptr);
    LAZ_RETURN_IF_ERROR(w.Run());
    snap.complete = snap.complete && w.complete();
    for (const FoundGitDir& f : w.git_dirs()) snap.prints[{i, f.rel}] = f.print;
  }
  return snap;
}

std::string SerializeSnapshot(const GitDirSnapshot& s) {
  common::v1::WorkspaceSnapshot m;
  m.set_session_id(s.session_id);
  m.set_since_seconds(static_cast<int64_t>(s.since.tv_sec));
  m.set_since_nanos(static_cast<int32_t>(s.since.tv_nsec));
  m.set_quarantine(s.quarantine);
  m.set_complete(s.complete);
  for (const ScanRoot& r : s.roots) {
    common::v1::WorkspaceSnapshot::Root* root = m.add_roots();
    root->set_path(r.path);
    root->set_root_git_protected(r.root_git_protected);
    root->set_hand_back_ownership(r.hand_back_ownership);
    if (r.owner_uid.has_value()) root->set_owner_uid(*r.owner_uid);
    if (r.owner_gid.has_value()) root->set_owner_gid(*r.owner_gid);
  }
  for (const auto& [key, print] : s.prints) {
    common::v1::WorkspaceSnapshot::GitDir* g = m.add_git_dirs();
    g->set_root(static_cast<uint32_t>(key.first));
    g->set_path(key.second);
    g->set_fingerprint(print);
  }
  return m.SerializeAsString();
}

absl::StatusOr<GitDirSnapshot> ParseSnapshot(const std::string& bytes) {
  common::v1::WorkspaceSnapshot m;
  if (!m.ParseFromString(bytes)) return absl::InvalidArgumentError("not a workspace scan snapshot");
  if (m.session_id().empty() || m.since_seconds() <= 0 || m.since_nanos() < 0 ||
      m.since_nanos() >= 1000000000) {
    return absl::InvalidArgumentError("the snapshot has no session or start time");
  }
  GitDirSnapshot s;
  s.session_id = m.session_id();
  s.since.tv_sec = static_cast<time_t>(m.since_seconds());
  s.since.tv_nsec = m.since_nanos();
  s.quarantine = m.quarantine();
  s.complete = m.complete();
  for (const common::v1::WorkspaceSnapshot::Root& r : m.roots()) {
    if (r.path().empty() || r.path()[0] != '/' || r.path().find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("the snapshot names a root that is not an absolute path");
    }
    ScanRoot root{r.path(), r.root_git_protected()};
    root.hand_back_ownership = r.hand_back_ownership();
    if (r.has_owner_uid()) root.owner_uid = static_cast<uid_t>(r.owner_uid());
    if (r.has_owner_gid()) root.owner_gid = static_cast<gid_t>(r.owner_gid());
    s.roots.push_back(std::move(root));
  }
  for (const common::v1::WorkspaceSnapshot::GitDir& g : m.git_dirs()) {
    if (g.root() >= s.roots.size() || g.path().empty() || g.path()[0] == '/' ||
        g.path().find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("the snapshot names a git directory outside its roots");
    }
    s.prints[{g.root(), g.path()}] = g.fingerprint();
  }
  return s;
}

}  // namespace lazaret::cli::workspace
