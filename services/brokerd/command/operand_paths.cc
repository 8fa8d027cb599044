#include "services/brokerd/command/operand_paths.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::command {
namespace {

std::string QuotedOperand(absl::string_view word) {
  constexpr size_t kMax = 64;
  if (word.size() <= kMax) return absl::StrCat("'", word, "'");
  return absl::StrCat("'", word.substr(0, kMax), "...'");
}

}  // namespace

std::optional<std::string> OperandPathRefusal(int dir_fd, absl::string_view word) {
  // Not a path the kernel could resolve: nothing to check (the lexical rule
  // already refused an empty word; a NUL never reaches here).
  if (word.empty() || word.find('\0') != absl::string_view::npos) return std::nullopt;
  const std::string path(word);
  // O_PATH: opens nothing (a FIFO does not block, no device is touched).
  const fs::OpenedBeneath opened =
      fs::OpenBeneath(dir_fd, path, O_PATH, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  if (opened.fd.valid()) return std::nullopt;
  const int err = opened.error;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return std::nullopt;
    case EXDEV:
      return absl::StrCat(QuotedOperand(word),
                          " names a path that leads out of the working directory (a symlink)");
    case ELOOP:
      return absl::StrCat(QuotedOperand(word),
                          " names a path through a symlink loop or a magic link");
    case ENOSYS:
      return absl::StrCat(QuotedOperand(word),
                          ": the kernel lacks openat2, so the path it names cannot be checked");
    default:
      return absl::StrCat(QuotedOperand(word), ": the path it names cannot be checked (",
                          std::strerror(err), ")");
  }
}

vocab::OperandPathCheck OperandsBeneath(int dir_fd) {
  return [dir_fd](absl::string_view word) { return OperandPathRefusal(dir_fd, word); };
}

}  // namespace lazaret::brokerd::command
