#include "clients/lazaret/images/sidecar_inputs.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"
#include "services/spawn/subprocess.h"

namespace lazaret::cli::images {
namespace {

// Bumped when the build changes in a way the hashed inputs do not show.
constexpr char kSidecarRecipe[] = "lazaret-sidecar-recipe-1";

// More program headers than any linker writes for an executable; PN_XNUM
// (0xffff, the count kept elsewhere) is refused by this bound too.
constexpr uint16_t kMaxProgramHeaders = 128;

// Reads exactly `size` bytes at `offset`; a short read is an error.
absl::Status ReadExactlyAt(int fd, uint64_t offset, void* out, size_t size,
                           const std::string& path) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        pread(fd, static_cast<char*>(out) + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("reading ", path), errno);
    if (n == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is not an ELF executable (truncated)"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> IsStaticExecutable(const std::string& path) {
  fs::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("opening ", path), errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  const auto not_elf = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a 64-bit little-endian ELF executable (", why, ")"));
  };
  Elf64_Ehdr eh;
  if (static_cast<uint64_t>(st.st_size) < sizeof(eh)) return not_elf("too short");
  LAZ_RETURN_IF_ERROR(ReadExactlyAt(fd.get(), 0, &eh, sizeof(eh), path));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return not_elf("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return not_elf("class or byte order");
  }
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) return not_elf("not an executable");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders) {
    return not_elf("program header table");
  }
  const uint64_t table = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > static_cast<uint64_t>(st.st_size) ||
      table > static_cast<uint64_t>(st.st_size) - eh.e_phoff) {
    return not_elf("program headers past the end");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    LAZ_RETURN_IF_ERROR(
        ReadExactlyAt(fd.get(), eh.e_phoff + uint64_t{i} * sizeof(ph), &ph, sizeof(ph), path));
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

absl::StatusOr<std::vector<ImageFile>> ParseLddOutput(const std::string& text) {
  std::vector<ImageFile> out;
  for (absl::string_view raw : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::string line(absl::StripAsciiWhitespace(raw));
    std::string path;
    if (const auto arrow = line.find("=>"); arrow != std::string::npos) {
      std::string rest(absl::StripAsciiWhitespace(line.substr(arrow + 2)));
      if (absl::StartsWith(rest, "not found")) {
        return absl::FailedPreconditionError(
            absl::StrCat("ldd: ", line.substr(0, arrow), " not found"));
      }
      path = rest.substr(0, rest.find(" ("));
    } else if (absl::StartsWith(line, "/")) {
      path = line.substr(0, line.find(" ("));  // the loader
    } else {
      continue;  // linux-vdso.so.1 and the like: not files
    }
    if (path.empty() || path[0] != '/') continue;
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) {
      return ErrnoStatus(absl::StrCat("resolving ", path), errno);
    }
    out.push_back(ImageFile{resolved, path});
  }
  return out;
}

absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter) {
  char resolved[PATH_MAX];
  if (realpath(netrouter.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        netrouter, " not found: build it (ninja lazaret-netrouter) or set LAZARET_LIBEXEC_DIR"));
  }
  std::vector<ImageFile> files = {{resolved, absl::StrCat("/", kSidecarBinary)}};
  LAZ_ASSIGN_OR_RETURN(const bool is_static, IsStaticExecutable(resolved));
  if (is_static) return files;  // needs no loader, no library, no other file
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured({"ldd", resolved}, std::chrono::seconds(60)));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("ldd ", resolved, " failed: ", r.err));
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> libs, ParseLddOutput(r.out));
  for (auto& l : libs) {
    const bool dup = std::any_of(files.begin(), files.end(),
                                 [&](const ImageFile& f) { return f.dest == l.dest; });
    if (!dup) files.push_back(std::move(l));
  }
  std::sort(files.begin() + 1, files.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  return files;
}

absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files) {
  fs::Sha256 h;
  h.Update(absl::StrCat(kSidecarRecipe, "\n"));
  std::vector<ImageFile> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.dest < b.dest; });
  for (const ImageFile& f : sorted) {
    LAZ_ASSIGN_OR_RETURN(std::string bytes, fs::ReadHostFile(f.source));
    h.Update(absl::StrCat("file ", f.dest, " ", bytes.size(), "\n"));
    h.Update(bytes);
  }
  return h.HexDigest();
}

}  // namespace lazaret::cli::images
