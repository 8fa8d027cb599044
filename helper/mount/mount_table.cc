#include "helper/mount/mount_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lazaret::mounthelper {

absl::Status MountTable::CheckAttach(const std::string& profile_dir, const std::string& image_id,
                                     const std::string& session) const {
  std::set<std::string> others;
  std::string other_image;
  for (const auto& [key, m] : entries_) {
    if (key.first != profile_dir || m.image_id == image_id) continue;
    for (const std::string& h : m.holders) {
      if (h != session) others.insert(h);
    }
    other_image = m.image_id;
  }
  if (others.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the persistent directories of ", profile_dir, " are mounted over image ",
      other_image.substr(0, 12), " for session(s) ", absl::StrJoin(others, ", "),
      "; a session over image ", image_id.substr(0, 12),
      " cannot share them (two images below one upper layer would corrupt it). End those "
      "sessions first, or run this one with the same image"));
}

Mounted* MountTable::Find(const std::string& profile_dir, const std::string& directory) {
  auto it = entries_.find({profile_dir, directory});
  return it == entries_.end() ? nullptr : &it->second;
}

void MountTable::Add(Mounted m) {
  Key key{m.profile_dir, m.directory};
  entries_[key] = std::move(m);
}

void MountTable::Remove(const std::string& profile_dir, const std::string& directory) {
  entries_.erase({profile_dir, directory});
}

std::vector<MountTable::Key> MountTable::DropHolder(const std::string& session) {
  std::vector<Key> out;
  for (auto& [key, m] : entries_) {
    if (m.holders.erase(session) > 0 && m.holders.empty()) out.push_back(key);
  }
  return out;
}

std::vector<MountTable::Key> MountTable::Unheld() const {
  std::vector<Key> out;
  for (const auto& [key, m] : entries_) {
    if (m.holders.empty()) out.push_back(key);
  }
  return out;
}

std::set<std::string> MountTable::HoldersOf(const std::string& profile_dir,
                                            const std::string& directory) const {
  std::set<std::string> out;
  for (const auto& [key, m] : entries_) {
    if (key.first != profile_dir || (!directory.empty() && key.second != directory)) continue;
    out.insert(m.holders.begin(), m.holders.end());
  }
  return out;
}

std::set<std::string> MountTable::AllHolders() const {
  std::set<std::string> out;
  for (const auto& [key, m] : entries_) out.insert(m.holders.begin(), m.holders.end());
  return out;
}

const CappedMount* MountTable::FindCapped(const std::string& profile_dir) const {
  auto it = capped_.find(profile_dir);
  return it == capped_.end() ? nullptr : &it->second;
}

void MountTable::AddCapped(const std::string& profile_dir, CappedMount m) {
  capped_[profile_dir] = m;
}

void MountTable::RemoveCapped(const std::string& profile_dir) { capped_.erase(profile_dir); }

bool MountTable::HasOverlays(const std::string& profile_dir) const {
  for (const auto& [key, m] : entries_) {
    if (key.first == profile_dir) return true;
  }
  return false;
}

std::vector<std::string> MountTable::CappedWithoutOverlays() const {
  std::vector<std::string> out;
  for (const auto& [dir, m] : capped_) {
    if (!HasOverlays(dir)) out.push_back(dir);
  }
  return out;
}

}  // namespace lazaret::mounthelper
