// Checks on path strings, before any of them reaches the filesystem:
// absolute and clean (no empty, "." or ".." segment), one component, at or
// under a directory. Part of lazaret_vocab: runs anywhere (every process
// that opens a path it was given: the descriptor library lazaret_fs,
// configd's host paths, the session plan, the mount helper); pure
// functions that trust nothing.
#ifndef LAZARET_SERVICES_VOCAB_HOST_PATH_H_
#define LAZARET_SERVICES_VOCAB_HOST_PATH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// Absolute, no empty, "." or ".." segment (so no trailing slash, "/"
// excepted), no control character (NUL included).
bool IsCleanAbsolutePath(absl::string_view path);

// OK when `name` is one path component: not empty, not "." or "..", no '/'
// and no NUL.
absl::Status CheckOneComponent(absl::string_view name);

// True when `path` is `dir` or below it (both clean).
bool IsAtOrUnder(absl::string_view path, absl::string_view dir);

// The parts of a relative path ("a/b/c": "a/b" and "c"; "c": "" and "c").
std::string Dirname(const std::string& rel);
std::string Basename(const std::string& rel);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_HOST_PATH_H_
