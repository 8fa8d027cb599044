// Ref names and object ids for the Git Shadow. Runs in the `lazaret` CLI on
// the host. Everything here is pure: it decides whether a string that came
// from the user (--branch), from a profile name, or from a file the agent
// wrote in its ref namespace may be used, and nothing that fails these checks
// reaches git or the host's refs.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_REFS_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_REFS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace lazaret::cli::gitshadow {

// The only ref namespace the sandbox may write: refs/heads/lazaret/...
inline constexpr char kAgentRefPrefix[] = "refs/heads/lazaret/";

// Refs relative to refs/heads/lazaret/, name -> object id.
using RefMap = std::map<std::string, std::string>;

// One path component of a ref name, per git-check-ref-format(1) rules 1, 3,
// 4, 5 and 8 (no leading '.', no ".lock" suffix, no "..", no control
// characters, space, ~ ^ : ? * [ \, no "@{"), and additionally printable
// ASCII only, so a name can never carry escape sequences or bidi tricks into
// the developer's terminal.
bool IsValidRefComponent(const std::string& component);

// A whole ref name (e.g. "refs/heads/lazaret/agent-x") per
// git-check-ref-format(1), with the same ASCII restriction and a length cap.
bool IsValidRefName(const std::string& refname);

// A branch in the agent namespace that passed the checks. Only
// CheckAgentBranch makes one, so an unchecked name cannot become a HEAD, a
// mount or a git argument.
class CheckedAgentBranch {
 public:
  // "lazaret/agent-claude"
  const std::string& short_name() const { return short_name_; }
  // "refs/heads/lazaret/agent-claude"
  std::string refname() const { return "refs/heads/" + short_name_; }
  // The part below refs/heads/lazaret/: "agent-claude". This is the path of
  // the ref file inside the state refs directory.
  std::string relative() const { return short_name_.substr(sizeof("lazaret/") - 1); }

 private:
  friend absl::StatusOr<CheckedAgentBranch> CheckAgentBranch(const std::string&,
                                                             const std::string&);
  explicit CheckedAgentBranch(std::string short_name) : short_name_(std::move(short_name)) {}
  std::string short_name_;
};

// `branch` empty: "lazaret/agent-<profile>". Otherwise `branch`, prefixed
// with "lazaret/" unless it already starts with it. The result must be a
// valid ref name strictly inside refs/heads/lazaret/.
absl::StatusOr<CheckedAgentBranch> CheckAgentBranch(const std::string& profile,
                                                    const std::string& branch);

// A session may move exactly one ref: its own branch, `own` (relative to
// refs/heads/lazaret/, e.g. "agent-alpha" or "team/x"). Refs below it cannot
// exist beside it (git keeps a ref as a file, so "team/x/y" and "team/x"
// exclude each other), so none are allowed. Every other host ref below
// refs/heads/lazaret/ stays visible and read-only inside: the sandbox's ref
// directory gets a read-only bind of the entry holding it that is off the
// path to `own`. This returns that entry for `ref`: "agent-beta" for
// "agent-beta", "team/y" for "team/y/z" when `own` is "team/x", "review" for
// "review/1" when `own` is "agent-alpha". Empty when `ref` is `own`, or when
// one of them is a directory of the other (a ref git itself could not have
// beside `own`).
std::string ProtectedEntry(const std::string& ref, const std::string& own);

// True when `ref` is `entry` or below it.
bool IsAtOrBelow(const std::string& ref, const std::string& entry);

// Object id length for the repository's object format: 40 (sha1) or 64
// (sha256).
std::optional<size_t> ObjectIdLength(const std::string& object_format);

// True when `s` is exactly `length` lowercase hex digits.
bool IsObjectId(const std::string& s, size_t length);

// Parses the contents of a loose ref file the agent wrote: exactly one object
// id of `length` hex digits (not the all-zero null id), optionally followed by
// one "\n". Symbolic refs ("ref: ...") and anything else are refused.
std::optional<std::string> ParseLooseRef(const std::string& contents, size_t length);

// The refs below refs/heads/lazaret/ in the text of a packed-refs file the
// sandbox may have rewritten: "name -> object id", names relative to
// refs/heads/lazaret/. Lines that are not "<id> <refname>" with a valid id and
// name (headers, peeled "^<id>" lines, garbage) are skipped.
RefMap PackedAgentRefs(const std::string& text, size_t hex_length);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_REFS_H_
