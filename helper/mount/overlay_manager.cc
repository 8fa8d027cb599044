#include "helper/mount/overlay_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "helper/mount/overlay_paths.h"
#include "helper/mount/state_file.h"
#include "services/common/fs/dir.h"
#include "services/common/log.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::mounthelper {
namespace {

absl::Status CheckNoNesting(const std::vector<std::string>& dirs) {
  for (const std::string& a : dirs) {
    for (const std::string& b : dirs) {
      if (a != b && vocab::IsAtOrUnder(a, b)) {
        return absl::InvalidArgumentError(
            absl::StrCat("persistent_dirs ", b, " and ", a, " are nested; keep only ", b));
      }
    }
  }
  return absl::OkStatus();
}

// How long a reset or a look waits for the capped file system to be
// free (a sandbox's mount namespace going away after its session ended).
constexpr std::chrono::milliseconds kCappedBusyWait{15000};

uint64_t CapOf(const ProfileFacts& p) {
  return p.persistent_cap_bytes == 0 ? kDefaultPersistentCap : p.persistent_cap_bytes;
}

absl::Status UncappedLayerError(const ProfileFacts& p, const std::string& directory) {
  return absl::FailedPreconditionError(absl::StrCat(
      "profile '", p.name, "' has a layer of ", directory, " from before persistent_cap, ",
      UncappedPathsFor(p.profile_dir, directory).changes,
      ", which Lazaret never uses uncapped. Copy what you need from it, then run `lazaret state "
      "reset ", p.name, "` (which removes it); the next session starts ", directory,
      " afresh inside the cap"));
}

}  // namespace

bool IsValidImageId(const std::string& id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

OverlayManager::OverlayManager(SessionSource* sessions, OverlayOps* ops, std::string state_path,
                               uid_t owner, OverlayPreference preference)
    : sessions_(sessions),
      ops_(ops),
      state_path_(std::move(state_path)),
      owner_(owner),
      preference_(preference) {}

void OverlayManager::SaveLocked() {
  if (state_path_.empty()) return;
  absl::Status s = SaveState(state_path_, table_);
  if (!s.ok()) LAZ_LOG_ERROR << "saving the mount state: " << s;
}

absl::Status OverlayManager::Recover() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!state_path_.empty()) {
    LAZ_ASSIGN_OR_RETURN(SavedState saved, LoadState(state_path_));
    for (const SavedCapped& c : saved.capped) {
      if (!vocab::IsCleanAbsolutePath(c.profile_dir) || c.profile_dir == "/") {
        LAZ_LOG_WARNING << "ignoring a malformed record in " << state_path_;
        continue;
      }
      if (!ops_->IsMounted(PersistMountPath(c.profile_dir))) continue;
      LAZ_LOG_INFO << "re-adopting " << PersistMountPath(c.profile_dir) << " ("
                   << CappedKindName(c.mount.kind) << ")";
      table_.AddCapped(c.profile_dir, c.mount);
    }
    for (Mounted& m : saved.mounts) {
      // The paths are derived again; a record naming anything else is dropped.
      if (!CheckPersistentDir(m.directory).ok() || !vocab::IsCleanAbsolutePath(m.profile_dir) ||
          PersistPathsFor(m.profile_dir, m.directory).merged != m.merged ||
          !IsValidImageId(m.image_id)) {
        LAZ_LOG_WARNING << "ignoring a malformed record in " << state_path_;
        continue;
      }
      if (!ops_->IsMounted(m.merged)) {
        // The overlay is gone; its image mount may not be.
        (void)ops_->UnmountImage(m.image_id);
        continue;
      }
      LAZ_LOG_INFO << "re-adopting " << m.merged << " (held by " << absl::StrJoin(m.holders, ",")
                   << ")";
      table_.Add(std::move(m));
    }
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<Mounted> gone, CleanupLocked());
  for (const Mounted& m : gone) LAZ_LOG_INFO << "unmounted stale " << m.merged;
  SaveLocked();
  return absl::OkStatus();
}

absl::Status OverlayManager::MountLocked(const ProfileFacts& p, const std::string& directory,
                                         const std::string& image_id, const std::string& session) {
  const CappedMount* capped = table_.FindCapped(p.profile_dir);
  if (capped == nullptr || !ops_->IsMounted(PersistMountPath(p.profile_dir))) {
    // Never an upper layer outside the cap.
    return absl::InternalError(absl::StrCat("the capped file system of ", p.profile_dir,
                                            " is not mounted; not mounting ", directory));
  }
  LAZ_ASSIGN_OR_RETURN(CheckedOverlay o,
                       CheckOverlay(p.data_root, p.profile_dir, directory, owner_, true));
  const std::string base = PersistName(directory);
  LAZ_ASSIGN_OR_RETURN(std::optional<OverlayDriver> recorded, ReadLayerDriver(o.profile, base));
  LAZ_ASSIGN_OR_RETURN(OverlayDriver driver, ChooseDriver(recorded, directory));
  if (!recorded && preference_ == OverlayPreference::kAuto &&
      capped->kind == CappedKind::kFuse2fs) {
    // The kernel's overlayfs refuses a fuse2fs upper layer in a user
    // namespace (no tmpfile, no RENAME_WHITEOUT).
    driver = OverlayDriver::kFuse;
  }
  if (driver == OverlayDriver::kKernel && capped->kind == CappedKind::kFuse2fs) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the persistent data of profile '", p.name, "' is served by fuse2fs (rootless), and the "
        "kernel's overlayfs refuses a fuse2fs upper layer; ",
        recorded ? absl::StrCat("the layer of ", directory,
                                " was written by the kernel's overlayfs: reset it (lazaret state "
                                "reset ", p.name, " ", directory, ")")
                 : absl::StrCat("unset ", kOverlayEnv)));
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd root, ops_->MountImage(image_id));
  absl::StatusOr<fs::DirFd> lower = OpenLowerDir(root.get(), directory, image_id);
  if (lower.ok()) {
    absl::Status matched = MatchRootToLower(*lower, o);
    if (!matched.ok()) lower = matched;
  }
  absl::StatusOr<FuseProcess> proc =
      lower.ok() ? ops_->MountOverlay(*lower, o, driver)
                 : absl::StatusOr<FuseProcess>(lower.status());
  if (!recorded && preference_ == OverlayPreference::kAuto && absl::IsUnimplemented(proc.status())) {
    LAZ_LOG_WARNING << proc.status() << "; mounting " << directory << " with fuse-overlayfs";
    driver = OverlayDriver::kFuse;
    proc = ops_->MountOverlay(*lower, o, driver);
  }
  if (proc.ok()) {
    absl::Status w = recorded ? absl::OkStatus() : WriteLayerDriver(o.profile, base, driver);
    if (w.ok()) w = WriteImageRecord(o.profile, base, image_id);
    if (!w.ok()) {
      absl::Status u = ops_->UnmountOverlay(o.paths.merged, *proc);
      if (!u.ok()) LAZ_LOG_WARNING << u;
      proc = w;
    }
  }
  if (!proc.ok()) {
    absl::Status u = ops_->UnmountImage(image_id);
    if (!u.ok()) LAZ_LOG_WARNING << u;
    return proc.status();
  }
  Mounted m;
  m.profile = p.name;
  m.profile_dir = p.profile_dir;
  m.directory = directory;
  m.merged = o.paths.merged;
  m.image_id = image_id;
  m.pid = proc->pid;
  m.start_time = proc->start_time;
  m.holders.insert(session);
  LAZ_LOG_INFO << "mounted " << m.merged << " (" << directory << " of image "
               << image_id.substr(0, 12) << ", " << DriverName(driver) << ") for session "
               << session;
  table_.Add(std::move(m));
  return absl::OkStatus();
}

absl::StatusOr<OverlayDriver> OverlayManager::ChooseDriver(
    const std::optional<OverlayDriver>& recorded, const std::string& directory) const {
  if (recorded) {
    const bool refused = (preference_ == OverlayPreference::kKernel && *recorded != OverlayDriver::kKernel) ||
                         (preference_ == OverlayPreference::kFuse && *recorded != OverlayDriver::kFuse);
    if (refused) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the layer of ", directory, " was written by ", DriverName(*recorded), " and ",
          kOverlayEnv, " asks for the other driver; a layer is only mounted by the driver that "
          "wrote it. Unset ", kOverlayEnv, " or reset the layer (lazaret state reset)"));
    }
    return *recorded;
  }
  return preference_ == OverlayPreference::kFuse ? OverlayDriver::kFuse : OverlayDriver::kKernel;
}

absl::StatusOr<std::vector<Mounted>> OverlayManager::Attach(const std::string& session_id,
                                                            const std::string& image_id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(session_id));
  if (!IsValidImageId(image_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", image_id.substr(0, 80), "' is not a full image id (64 lowercase hex digits)"));
  }
  LAZ_ASSIGN_OR_RETURN(ProfileFacts p, sessions_->ProfileOfSession(session_id));
  for (const std::string& d : p.persistent_dirs) LAZ_RETURN_IF_ERROR(CheckPersistentDir(d));
  LAZ_RETURN_IF_ERROR(CheckNoNesting(p.persistent_dirs));
  std::lock_guard<std::mutex> lock(mu_);
  if (!table_.CheckAttach(p.profile_dir, image_id, session_id).ok()) {
    // The holders may have ended before the registry's event arrived.
    absl::Status s = CleanupLocked().status();
    if (!s.ok()) LAZ_LOG_WARNING << s;
    SaveLocked();
  }
  LAZ_RETURN_IF_ERROR(table_.CheckAttach(p.profile_dir, image_id, session_id));
  std::vector<std::string> mounted_now;
  absl::Status failed = EnsureCappedLocked(p);
  for (const std::string& d : p.persistent_dirs) {
    if (!failed.ok()) break;
    Mounted* m = table_.Find(p.profile_dir, d);
    if (m != nullptr && m->image_id != image_id) {
      // Nobody holds it (CheckAttach): the next session's image becomes the lower layer.
      failed = UnmountLocked({p.profile_dir, d});
      if (!failed.ok()) break;
      m = nullptr;
    }
    if (m != nullptr) {
      m->holders.insert(session_id);
      continue;
    }
    failed = MountLocked(p, d, image_id, session_id);
    if (!failed.ok()) break;
    mounted_now.push_back(d);
  }
  if (!failed.ok()) {
    // All or nothing: what this attach mounted is unmounted again.
    for (const MountTable::Key& key : table_.DropHolder(session_id)) {
      absl::Status s = UnmountLocked(key);
      if (!s.ok()) LAZ_LOG_WARNING << s;
    }
    absl::Status s = ReleaseCappedLocked(p.profile_dir);
    if (!s.ok()) LAZ_LOG_WARNING << s;
    SaveLocked();
    return failed;
  }
  SaveLocked();
  std::vector<Mounted> out;
  for (const std::string& d : p.persistent_dirs) out.push_back(*table_.Find(p.profile_dir, d));
  return out;
}

absl::Status OverlayManager::UnmountLocked(const MountTable::Key& key) {
  Mounted* m = table_.Find(key.first, key.second);
  if (m == nullptr) return absl::OkStatus();
  LAZ_RETURN_IF_ERROR(ops_->UnmountOverlay(m->merged, FuseProcess{m->pid, m->start_time}));
  absl::Status s = ops_->UnmountImage(m->image_id);
  if (!s.ok()) LAZ_LOG_WARNING << "after unmounting " << m->merged << ": " << s;
  LAZ_LOG_INFO << "unmounted " << m->merged;
  table_.Remove(key.first, key.second);
  s = ReleaseCappedLocked(key.first);
  if (!s.ok()) LAZ_LOG_INFO << "kept " << PersistMountPath(key.first) << " mounted: " << s;
  return absl::OkStatus();
}

absl::Status OverlayManager::EnsureCappedLocked(const ProfileFacts& p) {
  LAZ_ASSIGN_OR_RETURN(CheckedProfile profile,
                       CheckProfile(p.data_root, p.profile_dir, owner_, true));
  for (const std::string& d : p.persistent_dirs) {
    if (HasUncappedLayer(profile, d)) return UncappedLayerError(p, d);
  }
  if (table_.FindCapped(p.profile_dir) != nullptr) return absl::OkStatus();
  LAZ_ASSIGN_OR_RETURN(CappedMount m,
                       ops_->MountCapped(profile, p.name, CapOf(p), owner_, /*read_only=*/false));
  LAZ_LOG_INFO << "mounted " << PersistMountPath(p.profile_dir) << " (" << CappedKindName(m.kind)
               << ", cap " << CapText(CapOf(p)) << ")";
  table_.AddCapped(p.profile_dir, m);
  return absl::OkStatus();
}

absl::Status OverlayManager::ReleaseCappedLocked(const std::string& profile_dir, bool wait) {
  const CappedMount* c = table_.FindCapped(profile_dir);
  if (c == nullptr || table_.HasOverlays(profile_dir)) return absl::OkStatus();
  LAZ_RETURN_IF_ERROR(ops_->UnmountCapped(
      profile_dir, *c, wait ? kCappedBusyWait : std::chrono::milliseconds(0)));
  LAZ_LOG_INFO << "unmounted " << PersistMountPath(profile_dir);
  table_.RemoveCapped(profile_dir);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> OverlayManager::Detach(const std::string& session_id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(session_id));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  absl::Status first;
  for (const MountTable::Key& key : table_.DropHolder(session_id)) {
    absl::Status s = UnmountLocked(key);
    if (s.ok()) {
      out.push_back(key.second);
    } else {
      LAZ_LOG_WARNING << s;
      if (first.ok()) first = s;
    }
  }
  SaveLocked();
  if (!first.ok()) return first;
  return out;
}

std::vector<Mounted> OverlayManager::List() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Mounted> out;
  for (const auto& [key, m] : table_.entries()) out.push_back(m);
  return out;
}

absl::StatusOr<std::vector<Mounted>> OverlayManager::CleanupLocked() {
  for (const std::string& h : table_.AllHolders()) {
    absl::StatusOr<bool> live = sessions_->IsLive(h);
    if (!live.ok()) {
      LAZ_LOG_WARNING << "cannot tell whether session " << h
                      << " is live, keeping it: " << live.status();
      continue;
    }
    if (!*live) table_.DropHolder(h);
  }
  std::vector<Mounted> out;
  absl::Status first;
  for (const MountTable::Key& key : table_.Unheld()) {
    Mounted copy = *table_.Find(key.first, key.second);
    absl::Status s = UnmountLocked(key);
    if (s.ok()) {
      out.push_back(std::move(copy));
    } else if (first.ok()) {
      first = s;
    }
  }
  for (const std::string& dir : table_.CappedWithoutOverlays()) {
    // Busy for a moment after a sandbox ended: kept, tried again later.
    absl::Status s = ReleaseCappedLocked(dir);
    if (!s.ok()) LAZ_LOG_INFO << "kept " << PersistMountPath(dir) << " mounted: " << s;
  }
  if (!first.ok()) return first;
  return out;
}

absl::StatusOr<std::vector<Mounted>> OverlayManager::Cleanup() {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<std::vector<Mounted>> out = CleanupLocked();
  SaveLocked();
  return out;
}

absl::StatusOr<ProfileState> OverlayManager::Describe(const ProfileQuery& profile) {
  LAZ_ASSIGN_OR_RETURN(ProfileFacts p, sessions_->Profile(profile));
  ProfileState out{p.name, p.profile_dir, {}, {}};
  out.usage.cap_bytes = CapOf(p);
  for (const std::string& d : p.persistent_dirs) {
    DirectoryState ds;
    ds.directory = d;
    ds.changes = PersistPathsFor(p.profile_dir, d).changes;
    out.directories.push_back(std::move(ds));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (DirectoryState& ds : out.directories) {
    if (Mounted* m = table_.Find(p.profile_dir, ds.directory)) {
      ds.mounted = true;
      ds.sessions.assign(m->holders.begin(), m->holders.end());
    }
  }
  absl::StatusOr<CheckedProfile> prof = CheckProfile(p.data_root, p.profile_dir, owner_, false);
  if (absl::IsNotFound(prof.status())) return out;
  if (!prof.ok()) return prof.status();
  for (DirectoryState& ds : out.directories) {
    if (HasUncappedLayer(*prof, ds.directory)) {
      ds.uncapped_changes = UncappedPathsFor(p.profile_dir, ds.directory).changes;
    }
  }
  out.usage.exists = ops_->HasCappedImage(*prof);
  std::optional<CappedMount> held;
  std::optional<CappedMount> looking;
  if (const CappedMount* c = table_.FindCapped(p.profile_dir)) {
    held = *c;
  } else if (out.usage.exists) {
    // Nobody holds the profile: its image is mounted read-only for the
    // walk, and unmounted after.
    absl::StatusOr<CappedMount> m =
        ops_->MountCapped(*prof, p.name, std::nullopt, owner_, /*read_only=*/true);
    if (m.ok()) {
      looking = *m;
    } else {
      out.usage.note = absl::StrCat("the image could not be mounted for a look: ",
                                    m.status().message());
    }
  }
  const std::optional<CappedMount>& mounted = held ? held : looking;
  absl::Status failed;
  if (mounted) {
    out.usage.held_by = std::string(CappedKindName(mounted->kind));
    absl::StatusOr<CappedUsage> u = ops_->CappedUsageOf(*prof, owner_);
    if (u.ok()) {
      out.usage.usage = *u;
    } else {
      out.usage.note = std::string(u.status().message());
    }
    for (DirectoryState& ds : out.directories) {
      absl::StatusOr<CheckedOverlay> o =
          CheckOverlay(p.data_root, p.profile_dir, ds.directory, owner_, false);
      if (absl::IsNotFound(o.status())) continue;
      if (!o.ok()) {
        failed = o.status();
        break;
      }
      absl::StatusOr<std::optional<OverlayDriver>> driver =
          ReadLayerDriver(o->profile, PersistName(ds.directory));
      if (!driver.ok()) {
        failed = driver.status();
        break;
      }
      // The image the layer was last mounted over is its lower layer:
      // directories are compared with it (layer_stats.h).
      const std::string image_id = ReadImageRecord(o->profile, PersistName(ds.directory));
      std::optional<fs::DirFd> lower;
      std::string lower_note;
      bool image_mounted = false;
      if (image_id.empty()) {
        lower_note = "no record of the image the layer was mounted over: directories not compared";
      } else {
        absl::StatusOr<fs::DirFd> root = ops_->MountImage(image_id);
        image_mounted = root.ok();
        if (root.ok()) {
          absl::StatusOr<fs::DirFd> l = OpenLowerDir(root->get(), ds.directory, image_id);
          if (l.ok()) {
            lower = std::move(*l);
          } else {
            lower_note = std::string(l.status().message());
          }
        } else {
          lower_note = absl::StrCat("image ", image_id.substr(0, 12),
                                    " (the layer's lower layer) is gone: directories not "
                                    "compared with it");
        }
      }
      absl::StatusOr<LayerStats> stats =
          StatLayer(o->changes, *driver, lower ? &*lower : nullptr);
      if (image_mounted) {
        absl::Status u = ops_->UnmountImage(image_id);
        if (!u.ok()) LAZ_LOG_WARNING << u;
      }
      if (!stats.ok()) {
        failed = stats.status();
        break;
      }
      ds.stats = std::move(*stats);
      if (!lower_note.empty()) {
        ds.stats.limit = ds.stats.limit.empty() ? lower_note
                                                : absl::StrCat(ds.stats.limit, "; ", lower_note);
      }
      if (*driver) ds.overlay = std::string(DriverName(**driver));
    }
  }
  if (looking) {
    absl::Status u = ops_->UnmountCapped(p.profile_dir, *looking, kCappedBusyWait);
    if (!u.ok()) {
      // Still mounted: recorded, so Cleanup and Reset find and release it.
      LAZ_LOG_WARNING << u;
      if (table_.FindCapped(p.profile_dir) == nullptr) table_.AddCapped(p.profile_dir, *looking);
      SaveLocked();
    }
  }
  if (!failed.ok()) return failed;
  return out;
}

absl::StatusOr<std::vector<std::string>> OverlayManager::Reset(const ProfileQuery& profile,
                                                               const std::string& directory) {
  LAZ_ASSIGN_OR_RETURN(ProfileFacts p, sessions_->Profile(profile));
  std::vector<std::string> dirs;
  if (directory.empty()) {
    dirs = p.persistent_dirs;
  } else if (std::find(p.persistent_dirs.begin(), p.persistent_dirs.end(), directory) !=
             p.persistent_dirs.end()) {
    dirs = {directory};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(directory, " is not a persistent directory of profile '", p.name,
                     "' (persistent_dirs: ", absl::StrJoin(p.persistent_dirs, ", "), ")"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Sessions the registry no longer lists do not keep a reset away.
  LAZ_RETURN_IF_ERROR(CleanupLocked().status());
  SaveLocked();
  for (const std::string& d : dirs) {
    std::set<std::string> holders = table_.HoldersOf(p.profile_dir, d);
    if (!holders.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(d, " of profile '", p.name, "' is in use by session(s) ",
                       absl::StrJoin(holders, ", "), "; end them before resetting it"));
    }
  }
  if (table_.HasOverlays(p.profile_dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "overlays of profile '", p.name, "' are still mounted (busy); end what uses ",
        p.profile_dir, " and retry"));
  }
  absl::StatusOr<CheckedProfile> prof = CheckProfile(p.data_root, p.profile_dir, owner_, false);
  if (absl::IsNotFound(prof.status())) return dirs;
  if (!prof.ok()) return prof.status();
  std::vector<std::string> out;
  if (directory.empty()) {
    // Every directory: the capped file system goes as a whole.
    LAZ_RETURN_IF_ERROR(ReleaseCappedLocked(p.profile_dir, /*wait=*/true));
    SaveLocked();
    // Never an image that is still mounted: its blocks would stay taken
    // and the mount would outlive the file.
    if (ops_->IsMounted(PersistMountPath(p.profile_dir))) {
      return absl::FailedPreconditionError(absl::StrCat(
          PersistMountPath(p.profile_dir), " is still mounted (busy); end what uses it, run ",
          "`lazaret clean`, and retry"));
    }
    for (const char* name : {kPersistImageName, "persist.img.new"}) {
      if (unlinkat(prof->profile.get(), name, 0) != 0 && errno != ENOENT) {
        return ErrnoStatus(absl::StrCat("removing ", p.profile_dir, "/", name), errno);
      }
    }
  } else if (ops_->HasCappedImage(*prof)) {
    std::optional<CappedMount> looking;
    if (table_.FindCapped(p.profile_dir) == nullptr) {
      // As it is: a reset must work when the data does not fit a lowered cap.
      LAZ_ASSIGN_OR_RETURN(CappedMount m, ops_->MountCapped(*prof, p.name, std::nullopt, owner_,
                                                            /*read_only=*/false));
      looking = m;
    }
    absl::Status s;
    {
      // Its descriptors inside persist/ are closed before the unmount.
      absl::StatusOr<CheckedOverlay> o =
          CheckOverlay(p.data_root, p.profile_dir, directory, owner_, false);
      if (!o.ok() && !absl::IsNotFound(o.status())) s = o.status();
      if (o.ok()) {
        s = RemoveLayerContents(o->changes);
        if (s.ok()) s = RemoveLayerContents(o->work);
      }
    }
    if (looking) {
      absl::Status u = ops_->UnmountCapped(p.profile_dir, *looking, kCappedBusyWait);
      if (!u.ok()) {
        // Still mounted: recorded, so Cleanup and Reset find and release it.
        table_.AddCapped(p.profile_dir, *looking);
        SaveLocked();
      }
      if (s.ok()) s = u;
    }
    LAZ_RETURN_IF_ERROR(s);
  }
  for (const std::string& d : dirs) {
    const std::string base = PersistName(d);
    LAZ_RETURN_IF_ERROR(RemoveUncappedLayers(*prof, d));
    LAZ_RETURN_IF_ERROR(RemoveLayerDriver(prof->profile, base));
    LAZ_RETURN_IF_ERROR(RemoveRootRecord(prof->profile, base));
    LAZ_RETURN_IF_ERROR(RemoveImageRecord(prof->profile, base));
    LAZ_LOG_INFO << "reset " << d << " of profile " << p.name;
    out.push_back(d);
  }
  return out;
}

}  // namespace lazaret::mounthelper
