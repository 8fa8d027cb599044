#include "helper/mount/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "lazaret/mounthelper/v1/mounthelper.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

namespace pb = ::lazaret::mounthelper::v1;

constexpr size_t kMaxStateBytes = 4 << 20;

}  // namespace

absl::StatusOr<std::string> StateFilePath(const std::string& runtime_dir) {
  LAZ_ASSIGN_OR_RETURN(std::string dir,
                       EnsurePrivateDir(absl::StrCat(runtime_dir, "/mount-helper")));
  return absl::StrCat(dir, "/mounts");
}

absl::Status SaveState(const std::string& path, const MountTable& table) {
  pb::HelperState state;
  for (const auto& [key, m] : table.entries()) {
    pb::StoredMount* s = state.add_mounts();
    s->set_profile(m.profile);
    s->set_profile_dir(m.profile_dir);
    s->set_directory(m.directory);
    s->set_merged(m.merged);
    s->set_image_id(m.image_id);
    s->set_pid(m.pid);
    s->set_start_time(m.start_time);
    for (const std::string& h : m.holders) s->add_sessions(h);
  }
  for (const auto& [dir, c] : table.capped()) {
    pb::StoredCapped* s = state.add_capped();
    s->set_profile_dir(dir);
    s->set_kind(std::string(CappedKindKey(c.kind)));
    s->set_pid(c.pid);
    s->set_start_time(c.start_time);
  }
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return absl::InternalError("cannot encode the mount helper's state");
  }
  const std::string tmp = absl::StrCat(path, ".tmp");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("create ", tmp), errno);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return ErrnoStatus(absl::StrCat("write ", tmp), err);
    }
    off += n;
  }
  if (fsync(fd) != 0 || close(fd) != 0) return ErrnoStatus(absl::StrCat("write ", tmp), errno);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("rename ", tmp), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<SavedState> LoadState(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return SavedState{};
    return ErrnoStatus(absl::StrCat("open ", path), errno);
  }
  std::string text;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && text.size() < kMaxStateBytes) text.append(buf, n);
  close(fd);
  pb::HelperState state;
  if (!google::protobuf::TextFormat::ParseFromString(text, &state)) {
    return absl::DataLossError(absl::StrCat(path, " is not a mount helper state file"));
  }
  SavedState out;
  for (const pb::StoredCapped& s : state.capped()) {
    SavedCapped c;
    if (!ParseCappedKind(s.kind(), &c.mount.kind)) continue;
    c.profile_dir = s.profile_dir();
    c.mount.pid = s.pid();
    c.mount.start_time = s.start_time();
    out.capped.push_back(std::move(c));
  }
  for (const pb::StoredMount& s : state.mounts()) {
    Mounted m;
    m.profile = s.profile();
    m.profile_dir = s.profile_dir();
    m.directory = s.directory();
    m.merged = s.merged();
    m.image_id = s.image_id();
    m.pid = s.pid();
    m.start_time = s.start_time();
    m.holders.insert(s.sessions().begin(), s.sessions().end());
    out.mounts.push_back(std::move(m));
  }
  return out;
}

}  // namespace lazaret::mounthelper
