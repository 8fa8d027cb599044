#include "clients/lazaret/held/store.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "lazaret/held/v1/held.pb.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/fs/lock.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"
#include "services/vocab/escape.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::held {
namespace {

namespace pb = ::lazaret::held::v1;

constexpr char kWorkspaceFile[] = "workspace";
constexpr char kManifestFile[] = "manifest.json";
constexpr char kFilesDir[] = "files";
constexpr char kLockFile[] = "lock";
// A manifest lists at most a few thousand paths.
constexpr uint64_t kMaxManifestBytes = 16ull << 20;
constexpr uint64_t kResolveBeneath = 0x08;       // RESOLVE_BENEATH
constexpr uint64_t kResolveNoSymlinks = 0x04;    // RESOLVE_NO_SYMLINKS
constexpr uint64_t kResolveNoMagiclinks = 0x02;  // RESOLVE_NO_MAGICLINKS
constexpr uint64_t kStoreResolveStrict =
    kResolveBeneath | kResolveNoSymlinks | kResolveNoMagiclinks;

// Each caller's temporary names are distinct, so two threads or processes
// applying into one directory never open each other's file.
std::string TempName() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(".lazaret-held.", getpid(), ".", counter.fetch_add(1));
}

Change FromProto(pb::Change c) {
  switch (c) {
    case pb::CHANGE_CREATED:
      return Change::kCreated;
    case pb::CHANGE_DELETED:
      return Change::kDeleted;
    default:
      return Change::kChanged;
  }
}

pb::Change ToProto(Change c) {
  switch (c) {
    case Change::kCreated:
      return pb::CHANGE_CREATED;
    case Change::kDeleted:
      return pb::CHANGE_DELETED;
    case Change::kChanged:
      return pb::CHANGE_CHANGED;
  }
  return pb::CHANGE_CHANGED;
}

absl::string_view KindName(pb::Kind k) {
  switch (k) {
    case pb::KIND_FILE:
      return "file";
    case pb::KIND_SYMLINK:
      return "symlink";
    default:
      return "deleted";
  }
}

// What a held path looks like in a message: escaped to plain ASCII
// (EscapeForTerminal) and a quote written \x27, so an agent's name cannot
// move the terminal's cursor or end the quoting through an error text.
std::string Quoted(absl::string_view rel) {
  return absl::StrCat("'", absl::StrReplaceAll(vocab::EscapeForTerminal(rel), {{"'", "\\x27"}}),
                      "'");
}

absl::StatusOr<pb::Manifest> ReadManifest(const fs::DirFd& dir) {
  pb::Manifest m;
  struct stat st {};
  if (fstatat(dir.get(), kManifestFile, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return m;
    return ErrnoStatus("inspecting the held store's manifest", errno);
  }
  LAZ_ASSIGN_OR_RETURN(std::string text,
                       fs::ReadRegularFileAt(dir, kManifestFile, kMaxManifestBytes));
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  if (!google::protobuf::util::JsonStringToMessage(text, &m, o).ok()) {
    return absl::DataLossError(
        "the held store's manifest.json is damaged; move the store directory aside to start "
        "an empty one");
  }
  for (const pb::HeldEntry& e : m.entries()) {
    if (!CheckHeldRel(e.rel()).ok() || e.change() == pb::CHANGE_UNSPECIFIED ||
        e.kind() == pb::KIND_UNSPECIFIED) {
      return absl::DataLossError(
          absl::StrCat("the held store's manifest.json has a bad entry ", Quoted(e.rel())));
    }
  }
  return m;
}

absl::Status WriteManifest(const fs::DirFd& dir, pb::Manifest m) {
  std::sort(m.mutable_entries()->begin(), m.mutable_entries()->end(),
            [](const pb::HeldEntry& a, const pb::HeldEntry& b) { return a.rel() < b.rel(); });
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (auto s = google::protobuf::util::MessageToJsonString(m, &out, o); !s.ok()) {
    return absl::InternalError(absl::StrCat("serialising the held manifest: ", s.ToString()));
  }
  return fs::WriteFileAtomicAt(dir, kManifestFile, out, 0600, fs::Durability::kSync);
}

// The index of `rel` in `m`, or -1.
int FindEntry(const pb::Manifest& m, absl::string_view rel) {
  for (int i = 0; i < m.entries_size(); ++i) {
    if (m.entries(i).rel() == rel) return i;
  }
  return -1;
}

HeldEntry FromProtoEntry(const pb::HeldEntry& e) {
  HeldEntry h;
  h.rel = e.rel();
  h.change = FromProto(e.change());
  h.kind = std::string(KindName(e.kind()));
  h.session_id = e.session_id();
  h.held_unix = e.held_unix();
  return h;
}

// A held path whose prefix is also held (a file "a" and "a/b") cannot both
// exist under files/; refused rather than one silently replacing the other.
absl::Status CheckNoNesting(const pb::Manifest& m, const std::string& rel) {
  for (const pb::HeldEntry& e : m.entries()) {
    const std::string& other = e.rel();
    if (other == rel) continue;
    if (vocab::IsAtOrUnder(rel, other) || vocab::IsAtOrUnder(other, rel)) {
      return absl::FailedPreconditionError(
          absl::StrCat(Quoted(rel), " cannot be held while ", Quoted(other),
                       " is held (one lies inside the other); apply or drop ", Quoted(other),
                       " first (`lazaret held`)"));
    }
  }
  return absl::OkStatus();
}

// Opens the parent directory of `rel` below `root` as O_PATH, refusing a
// symlink anywhere (RESOLVE_NO_SYMLINKS) and a path leaving the tree.
absl::StatusOr<fs::UniqueFd> OpenParentBeneath(int root, const std::string& rel,
                                               absl::string_view where) {
  const std::string parent = vocab::Dirname(rel);
  fs::OpenedBeneath o =
      fs::OpenBeneath(root, parent, O_PATH | O_DIRECTORY | O_NOFOLLOW, kStoreResolveStrict);
  if (!o.fd.valid()) {
    if (o.error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(Quoted(rel), " is not in ", where));
    }
    return ErrnoStatus(absl::StrCat("opening the directory of ", Quoted(rel), " in ", where,
                                    " (a symlink or non-directory on the way is refused)"),
                       o.error);
  }
  return std::move(o.fd);
}

// Removes `rel` below files/ (missing is fine) and then each parent
// directory it leaves empty, so the files directory mirrors the manifest.
absl::Status RemoveHeldFile(const fs::DirFd& files, const std::string& rel) {
  absl::StatusOr<fs::UniqueFd> parent = OpenParentBeneath(files.get(), rel, "the held store");
  if (!parent.ok()) return absl::IsNotFound(parent.status()) ? absl::OkStatus() : parent.status();
  const std::string base = vocab::Basename(rel);
  struct stat st {};
  if (fstatat(parent->get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      fs::DirFd dir = fs::DirFd::Adopt(dup(parent->get()));
      LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, base));
    } else if (unlinkat(parent->get(), base.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("removing the held version of ", Quoted(rel)), errno);
    }
  } else if (errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("inspecting the held version of ", Quoted(rel)), errno);
  }
  std::string dir = vocab::Dirname(rel);
  while (!dir.empty()) {
    fs::OpenedBeneath up = fs::OpenBeneath(files.get(), vocab::Dirname(dir),
                                           O_PATH | O_DIRECTORY | O_NOFOLLOW, kStoreResolveStrict);
    if (!up.fd.valid()) break;
    // ENOTEMPTY ends the climb: the directory still holds other entries.
    if (unlinkat(up.fd.get(), vocab::Basename(dir).c_str(), AT_REMOVEDIR) != 0) break;
    dir = vocab::Dirname(dir);
  }
  return absl::OkStatus();
}

// The owner new files in the workspace get when Lazaret runs as root
// (rootful): the workspace root directory's.
struct Owner {
  bool chown = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

}  // namespace

absl::string_view ChangeName(Change change) {
  switch (change) {
    case Change::kCreated:
      return "created";
    case Change::kChanged:
      return "changed";
    case Change::kDeleted:
      return "deleted";
  }
  return "changed";
}

absl::Status CheckHeldRel(absl::string_view rel) {
  if (rel.empty()) return absl::InvalidArgumentError("an empty path cannot be held");
  if (rel.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(rel), " is absolute; a held path is relative to the workspace"));
  }
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          Quoted(rel), " has an empty, \".\" or \"..\" component; a held path must be clean"));
    }
    if (part.size() > NAME_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat(Quoted(rel), " has a component longer than ", NAME_MAX, " bytes"));
    }
    if (part.find('\0') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(Quoted(rel), " contains a NUL byte"));
    }
  }
  if (rel.size() >= PATH_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(rel.substr(0, 64)), "... is longer than ", PATH_MAX - 1, " bytes"));
  }
  return absl::OkStatus();
}

std::string StoreKey(absl::string_view workspace) {
  fs::Sha256 h;
  h.Update(workspace);
  return h.HexDigest().substr(0, 16);
}

std::string HeldRoot(const std::string& profile_dir) { return absl::StrCat(profile_dir, "/held"); }

absl::StatusOr<std::vector<std::string>> HeldWorkspaces(const std::string& profile_dir) {
  std::vector<std::string> out;
  struct stat st {};
  const std::string root = HeldRoot(profile_dir);
  if (lstat(root.c_str(), &st) != 0 && errno == ENOENT) return out;
  LAZ_ASSIGN_OR_RETURN(fs::DirFd root_fd, fs::DirFd::Open(root));
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(root_fd));
  for (const std::string& name : names) {
    if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos) {
      continue;
    }
    absl::StatusOr<fs::DirFd> dir = root_fd.OpenChild(name);
    if (!dir.ok()) continue;
    absl::StatusOr<std::string> workspace = fs::ReadRegularFileAt(*dir, kWorkspaceFile, PATH_MAX);
    if (!workspace.ok() || StoreKey(*workspace) != name) continue;
    absl::StatusOr<pb::Manifest> m = ReadManifest(*dir);
    if (m.ok() && m->entries_size() > 0) out.push_back(*std::move(workspace));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<Store> Store::Open(const std::string& profile_dir, const std::string& workspace,
                                  bool create) {
  if (!vocab::IsCleanAbsolutePath(profile_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile directory '", profile_dir, "' is not a clean absolute path"));
  }
  if (!vocab::IsCleanAbsolutePath(workspace)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workspace '", workspace, "' is not a clean absolute path"));
  }
  const std::string root = HeldRoot(profile_dir);
  const std::string key = StoreKey(workspace);
  const std::string dir = absl::StrCat(root, "/", key);
  fs::DirFd root_fd;
  if (create) {
    LAZ_ASSIGN_OR_RETURN(root_fd, fs::MakeDirs(root, 0700));
    if (mkdirat(root_fd.get(), key.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating the held store ", dir), errno);
    }
  } else {
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0 && errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("nothing is held for ", workspace));
    }
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir_fd, fs::DirFd::Open(dir));
  {
    fs::LockOptions lo;
    LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                         fs::FileLock::Acquire(absl::StrCat(dir, "/", kLockFile), lo));
    struct stat st {};
    if (fstatat(dir_fd.get(), kWorkspaceFile, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      LAZ_ASSIGN_OR_RETURN(std::string recorded,
                           fs::ReadRegularFileAt(dir_fd, kWorkspaceFile, PATH_MAX));
      if (recorded != workspace) {
        return absl::FailedPreconditionError(
            absl::StrCat("the held store ", dir, " belongs to workspace '", recorded, "', not '",
                         workspace, "'; move that directory aside"));
      }
    } else if (errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("inspecting ", dir, "/", kWorkspaceFile), errno);
    } else if (create) {
      LAZ_RETURN_IF_ERROR(
          fs::WriteFileAtomicAt(dir_fd, kWorkspaceFile, workspace, 0600, fs::Durability::kSync));
    } else {
      return absl::NotFoundError(absl::StrCat("nothing is held for ", workspace));
    }
    if (mkdirat(dir_fd.get(), kFilesDir, 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", dir, "/", kFilesDir), errno);
    }
  }
  return Store(dir, workspace, absl::StrCat(dir, "/", kFilesDir), std::move(dir_fd));
}

absl::StatusOr<std::vector<HeldEntry>> Store::List() const {
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(dir_, "/", kLockFile), {}));
  LAZ_ASSIGN_OR_RETURN(pb::Manifest m, ReadManifest(dir_fd_));
  std::vector<HeldEntry> out;
  out.reserve(m.entries_size());
  for (const pb::HeldEntry& e : m.entries()) out.push_back(FromProtoEntry(e));
  std::sort(out.begin(), out.end(),
            [](const HeldEntry& a, const HeldEntry& b) { return a.rel < b.rel; });
  return out;
}

absl::StatusOr<std::optional<HeldEntry>> Store::Find(const std::string& rel) const {
  LAZ_ASSIGN_OR_RETURN(std::vector<HeldEntry> all, List());
  for (HeldEntry& e : all) {
    if (e.rel == rel) return std::optional<HeldEntry>(std::move(e));
  }
  return std::optional<HeldEntry>();
}

absl::Status Store::Hold(const fs::DirFd& from, const std::string& rel, Change change,
                         const std::string& session_id) {
  if (change == Change::kDeleted) return HoldDeletion(rel, session_id);
  LAZ_RETURN_IF_ERROR(CheckHeldRel(rel));
  // The source is the agent's: its parent is opened beneath `from` with no
  // symlink on the way, its last component O_PATH|O_NOFOLLOW, and what it is
  // decided by fstat of that one inode.
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd src_parent,
                       OpenParentBeneath(from.get(), rel, "the session's tree"));
  const std::string base = vocab::Basename(rel);
  fs::UniqueFd src(openat(src_parent.get(), base.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!src.valid()) return ErrnoStatus(absl::StrCat("opening ", Quoted(rel), " to hold it"), errno);
  struct stat st {};
  if (fstat(src.get(), &st) != 0) {
    return ErrnoStatus(absl::StrCat("inspecting ", Quoted(rel)), errno);
  }
  std::string symlink_target;
  fs::UniqueFd content;
  if (S_ISLNK(st.st_mode)) {
    LAZ_ASSIGN_OR_RETURN(symlink_target, fs::ReadLinkAt(src.get(), "", Quoted(rel)));
  } else if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > kMaxHeldFileBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(Quoted(rel), " is ", st.st_size, " bytes, over the ", kMaxHeldFileBytes,
                       " a held file may have; it was not held (look at it in the sandbox or "
                       "remove it there)"));
    }
    // Through the checked inode, whatever the name points to by now.
    const std::string proc = absl::StrCat("/proc/self/fd/", src.get());
    content.reset(open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!content.valid() && errno == EACCES) {
      fs::AddOwnerPermissions(src.get(), S_IRUSR);
      content.reset(open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    }
    if (!content.valid()) {
      return ErrnoStatus(absl::StrCat("opening ", Quoted(rel), " to hold it"), errno);
    }
  } else {
    return absl::FailedPreconditionError(
        absl::StrCat(Quoted(rel), " is a ", fs::FileTypeName(st.st_mode),
                     "; only regular files and symlinks can be held, so it was not kept"));
  }

  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(dir_, "/", kLockFile), {}));
  LAZ_ASSIGN_OR_RETURN(pb::Manifest m, ReadManifest(dir_fd_));
  LAZ_RETURN_IF_ERROR(CheckNoNesting(m, rel));
  const int index = FindEntry(m, rel);
  uint64_t others = 0;
  for (int i = 0; i < m.entries_size(); ++i) {
    if (i != index) others += m.entries(i).size();
  }
  const uint64_t size =
      S_ISLNK(st.st_mode) ? symlink_target.size() : static_cast<uint64_t>(st.st_size);
  if (others + size > kMaxHeldStoreBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "holding ", Quoted(rel), " (", size, " bytes) would take the held store of ", workspace_,
        " over ", kMaxHeldStoreBytes, " bytes; apply or drop held files first (`lazaret held`)"));
  }

  LAZ_ASSIGN_OR_RETURN(fs::DirFd files, fs::DirFd::Open(files_dir_));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dst, fs::MakeOwnDirsAt(files, vocab::Dirname(rel), 0700));
  struct stat old {};
  if (fstatat(dst.get(), base.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(old.st_mode)) {
    LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dst, base));
  }
  const std::string tmp = TempName();
  uint64_t written = 0;
  if (S_ISLNK(st.st_mode)) {
    if (symlinkat(symlink_target.c_str(), dst.get(), tmp.c_str()) != 0) {
      return ErrnoStatus(absl::StrCat("keeping the symlink ", Quoted(rel)), errno);
    }
    written = symlink_target.size();
  } else {
    // setuid, setgid and sticky never reach the held copy.
    const mode_t mode = st.st_mode & 0777;
    fs::UniqueFd out(
        openat(dst.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid()) return ErrnoStatus(absl::StrCat("keeping ", Quoted(rel)), errno);
    absl::Status s;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(content.get(), buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        s = ErrnoStatus(absl::StrCat("reading ", Quoted(rel)), errno);
        break;
      }
      if (n == 0) break;
      written += static_cast<uint64_t>(n);
      if (written > kMaxHeldFileBytes || others + written > kMaxHeldStoreBytes) {
        s = absl::ResourceExhaustedError(absl::StrCat(
            Quoted(rel), " grew over the held size limit while it was copied; it was not held"));
        break;
      }
      s = fs::WriteAll(out.get(), absl::string_view(buf, static_cast<size_t>(n)));
      if (!s.ok()) break;
    }
    if (s.ok() && (fchmod(out.get(), mode) != 0 || fsync(out.get()) != 0)) {
      s = ErrnoStatus(absl::StrCat("keeping ", Quoted(rel)), errno);
    }
    if (!s.ok()) {
      unlinkat(dst.get(), tmp.c_str(), 0);
      return s;
    }
  }
  if (renameat(dst.get(), tmp.c_str(), dst.get(), base.c_str()) != 0) {
    const int err = errno;
    unlinkat(dst.get(), tmp.c_str(), 0);
    return ErrnoStatus(absl::StrCat("keeping ", Quoted(rel)), err);
  }

  pb::HeldEntry* e = index >= 0 ? m.mutable_entries(index) : m.add_entries();
  // A path first held as created stays "created" while the host still has
  // nothing there, whatever later sessions call their change.
  const bool was_created = index >= 0 && e->change() == pb::CHANGE_CREATED;
  e->set_rel(rel);
  e->set_change(was_created ? pb::CHANGE_CREATED : ToProto(change));
  e->set_kind(S_ISLNK(st.st_mode) ? pb::KIND_SYMLINK : pb::KIND_FILE);
  e->set_session_id(session_id);
  e->set_held_unix(static_cast<int64_t>(time(nullptr)));
  e->set_size(written);
  return WriteManifest(dir_fd_, std::move(m));
}

absl::Status Store::HoldDeletion(const std::string& rel, const std::string& session_id) {
  LAZ_RETURN_IF_ERROR(CheckHeldRel(rel));
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(dir_, "/", kLockFile), {}));
  LAZ_ASSIGN_OR_RETURN(pb::Manifest m, ReadManifest(dir_fd_));
  LAZ_RETURN_IF_ERROR(CheckNoNesting(m, rel));
  const int index = FindEntry(m, rel);
  LAZ_ASSIGN_OR_RETURN(fs::DirFd files, fs::DirFd::Open(files_dir_));
  LAZ_RETURN_IF_ERROR(RemoveHeldFile(files, rel));
  if (index >= 0 && m.entries(index).change() == pb::CHANGE_CREATED) {
    // Created and deleted again by sessions: the host never had it, so
    // nothing is left to hold.
    m.mutable_entries()->DeleteSubrange(index, 1);
    return WriteManifest(dir_fd_, std::move(m));
  }
  pb::HeldEntry* e = index >= 0 ? m.mutable_entries(index) : m.add_entries();
  e->set_rel(rel);
  e->set_change(pb::CHANGE_DELETED);
  e->set_kind(pb::KIND_DELETED);
  e->set_session_id(session_id);
  e->set_held_unix(static_cast<int64_t>(time(nullptr)));
  e->set_size(0);
  return WriteManifest(dir_fd_, std::move(m));
}

absl::Status Store::Drop(const std::string& rel) {
  LAZ_RETURN_IF_ERROR(CheckHeldRel(rel));
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(dir_, "/", kLockFile), {}));
  return DropLocked(rel);
}

absl::Status Store::DropLocked(const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(pb::Manifest m, ReadManifest(dir_fd_));
  const int index = FindEntry(m, rel);
  if (index < 0) {
    return absl::NotFoundError(absl::StrCat(Quoted(rel), " is not held for ", workspace_));
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd files, fs::DirFd::Open(files_dir_));
  LAZ_RETURN_IF_ERROR(RemoveHeldFile(files, rel));
  m.mutable_entries()->DeleteSubrange(index, 1);
  return WriteManifest(dir_fd_, std::move(m));
}

absl::Status Store::Apply(const std::string& rel) {
  LAZ_RETURN_IF_ERROR(CheckHeldRel(rel));
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock,
                       fs::FileLock::Acquire(absl::StrCat(dir_, "/", kLockFile), {}));
  LAZ_ASSIGN_OR_RETURN(pb::Manifest m, ReadManifest(dir_fd_));
  const int index = FindEntry(m, rel);
  if (index < 0) {
    return absl::NotFoundError(absl::StrCat(Quoted(rel), " is not held for ", workspace_));
  }
  const pb::HeldEntry entry = m.entries(index);

  LAZ_ASSIGN_OR_RETURN(fs::DirFd ws, fs::DirFd::Open(workspace_));
  Owner owner;
  if (geteuid() == 0) {
    struct stat root_st {};
    if (fstat(ws.get(), &root_st) != 0) return ErrnoStatus("inspecting the workspace", errno);
    owner = {true, root_st.st_uid, root_st.st_gid};
  }

  // The parent: each component opened beneath the workspace with no symlink
  // allowed; a missing one is created (0755) and opened the same way, so a
  // directory swapped for a symlink at any moment is refused, never followed.
  const std::string base = vocab::Basename(rel);
  fs::UniqueFd parent(dup(ws.get()));
  if (!parent.valid()) return ErrnoStatus("duplicating the workspace descriptor", errno);
  std::string walked;
  const std::string parent_rel = vocab::Dirname(rel);
  if (!parent_rel.empty()) {
    for (absl::string_view part : absl::StrSplit(parent_rel, '/')) {
      const std::string name(part);
      walked = walked.empty() ? name : absl::StrCat(walked, "/", name);
      fs::OpenedBeneath next = fs::OpenBeneath(
          parent.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW, kStoreResolveStrict);
      if (!next.fd.valid() && next.error == ENOENT && entry.kind() != pb::KIND_DELETED) {
        if (mkdirat(parent.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
          return ErrnoStatus(absl::StrCat("creating ", Quoted(walked), " in ", workspace_), errno);
        }
        if (owner.chown) {
          (void)fchownat(parent.get(), name.c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW);
        }
        next = fs::OpenBeneath(parent.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW,
                               kStoreResolveStrict);
      }
      if (!next.fd.valid()) {
        if (next.error == ENOENT) {
          // Deleting something whose directory is already gone: done.
          return DropLocked(rel);
        }
        if (next.error == ELOOP || next.error == ENOTDIR || next.error == EXDEV) {
          return absl::FailedPreconditionError(absl::StrCat(
              Quoted(walked), " in ", workspace_,
              " is a symlink or not a directory; nothing was written. Replace it with a "
              "directory (or move it away) and apply again, or drop the held version"));
        }
        return ErrnoStatus(absl::StrCat("opening ", Quoted(walked), " in ", workspace_),
                           next.error);
      }
      parent = std::move(next.fd);
    }
  }

  struct stat target {};
  const bool target_exists = fstatat(parent.get(), base.c_str(), &target, AT_SYMLINK_NOFOLLOW) == 0;
  if (!target_exists && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("inspecting ", Quoted(rel), " in ", workspace_), errno);
  }
  if (target_exists && S_ISDIR(target.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        Quoted(rel), " in ", workspace_,
        " is a directory; nothing was written. Move it away and apply again, or drop the held "
        "version"));
  }

  if (entry.kind() == pb::KIND_DELETED) {
    if (target_exists && unlinkat(parent.get(), base.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("removing ", Quoted(rel), " from ", workspace_), errno);
    }
    return DropLocked(rel);
  }

  LAZ_ASSIGN_OR_RETURN(fs::DirFd files, fs::DirFd::Open(files_dir_));
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd held_parent,
                       OpenParentBeneath(files.get(), rel, "the held store"));
  const std::string tmp = TempName();
  if (entry.kind() == pb::KIND_SYMLINK) {
    LAZ_ASSIGN_OR_RETURN(const std::string link,
                         fs::ReadLinkAt(held_parent.get(), base, "held as " + Quoted(rel)));
    if (symlinkat(link.c_str(), parent.get(), tmp.c_str()) != 0) {
      return ErrnoStatus(absl::StrCat("creating the symlink ", Quoted(rel), " in ", workspace_),
                         errno);
    }
    if (owner.chown) {
      (void)fchownat(parent.get(), tmp.c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW);
    }
  } else {
    fs::DirFd held_dir = fs::DirFd::Adopt(held_parent.release());
    struct stat held_st {};
    LAZ_ASSIGN_OR_RETURN(fs::UniqueFd in, fs::OpenRegularFileAt(held_dir, base, &held_st));
    fs::UniqueFd out(openat(parent.get(), tmp.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid()) {
      return ErrnoStatus(absl::StrCat("creating a file next to ", Quoted(rel), " in ", workspace_),
                         errno);
    }
    absl::Status s;
    char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
      const ssize_t n = read(in.get(), buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        s = ErrnoStatus(absl::StrCat("reading the held version of ", Quoted(rel)), errno);
        break;
      }
      if (n == 0) break;
      total += static_cast<uint64_t>(n);
      if (total > kMaxHeldFileBytes) {
        s = absl::ResourceExhaustedError(
            absl::StrCat("the held version of ", Quoted(rel), " is over the size limit"));
        break;
      }
      s = fs::WriteAll(out.get(), absl::string_view(buf, static_cast<size_t>(n)));
      if (!s.ok()) break;
    }
    if (s.ok() && owner.chown && fchown(out.get(), owner.uid, owner.gid) != 0) {
      s = ErrnoStatus(absl::StrCat("handing ", Quoted(rel), " to the workspace's owner"), errno);
    }
    if (s.ok() && (fchmod(out.get(), held_st.st_mode & 0777) != 0 || fsync(out.get()) != 0)) {
      s = ErrnoStatus(absl::StrCat("writing ", Quoted(rel), " in ", workspace_), errno);
    }
    if (!s.ok()) {
      unlinkat(parent.get(), tmp.c_str(), 0);
      return s;
    }
  }
  if (renameat(parent.get(), tmp.c_str(), parent.get(), base.c_str()) != 0) {
    const int err = errno;
    unlinkat(parent.get(), tmp.c_str(), 0);
    return ErrnoStatus(absl::StrCat("putting ", Quoted(rel), " in place in ", workspace_), err);
  }
  return DropLocked(rel);
}

}  // namespace lazaret::cli::held
