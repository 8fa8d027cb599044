#include "clients/lazaret/held/command.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/held/display.h"
#include "clients/lazaret/held/store.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/spawn/subprocess.h"
#include "services/vocab/escape.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::held {

const char kHeldUsage[] =
    "usage: lazaret held [list] [PROFILE] [--json]\n"
    "       lazaret held diff [PATH...]\n"
    "       lazaret held apply PATH...|--all [--yes]\n"
    "       lazaret held drop PATH...|--all [--yes]\n"
    "options (every form): --profile NAME, --workspace DIR (default: this directory;\n"
    "  the agent worktree with --worktree sessions), --config FILE\n"
    "Sessions' changes to files host programs act on (editor, shell, build and\n"
    "coding-agent settings, hooks named by git config) are held in the profile,\n"
    "never written into the folder; apply writes one there, drop forgets it.\n";

namespace {

constexpr uint64_t kResolveStrict = 0x02 | 0x04 | 0x08;  // NO_MAGICLINKS|NO_SYMLINKS|BENEATH

absl::StatusOr<HeldArgs::Verb> VerbOf(const std::string& word) {
  if (word == "list") return HeldArgs::Verb::kList;
  if (word == "diff") return HeldArgs::Verb::kDiff;
  if (word == "apply") return HeldArgs::Verb::kApply;
  if (word == "drop") return HeldArgs::Verb::kDrop;
  return absl::NotFoundError(word);
}

// One side of a diff: the text diff compares, and what to say about it.
struct Side {
  std::string text;
  std::string note;  // "" when the text is the file's content
};

// What is at `rel` below the directory `root` (trusted path), never
// following a symlink on the way or at the end: a regular file's bytes
// (at most kMaxHeldFileBytes), a symlink as SymlinkText, anything else or
// nothing as an empty text with a note.
absl::StatusOr<Side> ReadSide(const std::string& root, const std::string& rel,
                              absl::string_view where) {
  Side side;
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::DirFd::Open(root));
  fs::OpenedBeneath parent = fs::OpenBeneath(dir.get(), vocab::Dirname(rel),
                                             O_PATH | O_DIRECTORY | O_NOFOLLOW, kResolveStrict);
  if (!parent.fd.valid()) {
    if (parent.error == ENOENT) {
      side.note = absl::StrCat("not in ", where);
      return side;
    }
    side.note = absl::StrCat("not readable in ", where,
                             " (a symlink or non-directory on the way is not followed)");
    return side;
  }
  const std::string base = vocab::Basename(rel);
  fs::UniqueFd node(openat(parent.fd.get(), base.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!node.valid()) {
    if (errno == ENOENT) {
      side.note = absl::StrCat("not in ", where);
      return side;
    }
    return ErrnoStatus(absl::StrCat("opening ", ShowName(rel, false), " in ", where), errno);
  }
  struct stat st {};
  if (fstat(node.get(), &st) != 0) return ErrnoStatus("inspecting", errno);
  if (S_ISLNK(st.st_mode)) {
    LAZ_ASSIGN_OR_RETURN(const std::string target,
                         fs::ReadLinkAt(node.get(), "", ShowName(rel, false)));
    side.text = SymlinkText(target);
    return side;
  }
  if (!S_ISREG(st.st_mode)) {
    side.note = absl::StrCat("a ", fs::FileTypeName(st.st_mode), " in ", where);
    return side;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxHeldFileBytes) {
    side.note = absl::StrCat(st.st_size, " bytes in ", where, ", too large to show");
    return side;
  }
  const std::string proc = absl::StrCat("/proc/self/fd/", node.get());
  fs::UniqueFd fd(open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    return ErrnoStatus(absl::StrCat("reading ", ShowName(rel, false), " in ", where), errno);
  }
  LAZ_ASSIGN_OR_RETURN(side.text, fs::ReadAll(fd.get(), kMaxHeldFileBytes, "a file"));
  return side;
}

// `diff -u --text` of two texts, through files in a private directory of
// the store (diff is run by execve, never a shell). Empty: no difference.
absl::StatusOr<std::string> DiffTexts(const Store& store, const std::string& a,
                                      const std::string& b) {
  std::string tmpl = absl::StrCat(store.dir(), "/diff-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) return ErrnoStatus("creating a directory for diff", errno);
  const std::string dir = tmpl;
  absl::StatusOr<Captured> run = [&]() -> absl::StatusOr<Captured> {
    LAZ_ASSIGN_OR_RETURN(fs::DirFd d, fs::DirFd::Open(dir));
    LAZ_RETURN_IF_ERROR(fs::WriteNewFileAt(d, "a", a, 0600));
    LAZ_RETURN_IF_ERROR(fs::WriteNewFileAt(d, "b", b, 0600));
    return RunCaptured({"/usr/bin/diff", "-u", "--text", "--label", "a", "--label", "b",
                        absl::StrCat(dir, "/a"), absl::StrCat(dir, "/b")});
  }();
  (void)fs::RemoveTree(dir);
  if (!run.ok()) return run.status();
  if (run->exit_code == 0) return std::string();
  if (run->exit_code != 1) {
    return absl::InternalError(
        absl::StrCat("diff failed (exit ", run->exit_code, "): ", ShowName(run->err, false)));
  }
  return std::move(run->out);
}

std::string Describe(const HeldEntry& e, bool styled) {
  return absl::StrCat(ShowName(e.rel, styled), ": ", ChangeName(e.change), " (",
                      e.kind == "deleted" ? "removed" : e.kind, ") by session ",
                      e.session_id.empty() ? "?" : ShowName(e.session_id, styled));
}

// The diff of one held entry against the folder, as printed.
absl::StatusOr<std::string> ShowEntry(const Store& store, const HeldEntry& e, bool styled) {
  LAZ_ASSIGN_OR_RETURN(Side host, ReadSide(store.workspace(), e.rel, "the folder"));
  Side held;
  if (e.kind == "deleted") {
    held.note = "removed by the session";
  } else {
    LAZ_ASSIGN_OR_RETURN(held, ReadSide(store.files_dir(), e.rel, "the held store"));
  }
  std::string out = absl::StrCat("== ", Describe(e, styled), "\n");
  if (!host.note.empty()) absl::StrAppend(&out, "   host: ", host.note, "\n");
  if (!held.note.empty()) absl::StrAppend(&out, "   held: ", held.note, "\n");
  LAZ_ASSIGN_OR_RETURN(std::string diff, DiffTexts(store, host.text, held.text));
  if (diff.empty()) {
    out += "   (no difference in content)\n";
  } else {
    out += ShowDiff(diff, e.rel, styled);
  }
  return out;
}

// A path as the developer typed it, as a held rel: "./" and a trailing '/'
// dropped, an absolute path inside the workspace made relative.
std::string NormalizeRel(std::string arg, const std::string& workspace) {
  if (!arg.empty() && arg.front() == '/' && vocab::IsAtOrUnder(arg, workspace) &&
      arg.size() > workspace.size()) {
    arg = arg.substr(workspace.size() + 1);
  }
  while (absl::StartsWith(arg, "./")) arg = arg.substr(2);
  while (arg.size() > 1 && arg.back() == '/') arg.pop_back();
  return arg;
}

bool Confirmed(const HeldContext& ctx, const std::string& question) {
  std::fprintf(ctx.err, "%s [y/N] ", question.c_str());
  std::fflush(ctx.err);
  char line[64] = {};
  if (std::fgets(line, sizeof(line), ctx.in) == nullptr) return false;
  const std::string answer(line);
  return answer == "y\n" || answer == "Y\n" || answer == "yes\n" || answer == "YES\n";
}

absl::StatusOr<std::optional<Store>> OpenExisting(const HeldContext& ctx) {
  absl::StatusOr<Store> s = Store::Open(ctx.profile_dir, ctx.workspace, false);
  if (absl::IsNotFound(s.status())) return std::optional<Store>();
  if (!s.ok()) return s.status();
  return std::optional<Store>(*std::move(s));
}

// Where else this profile holds something: for a developer who ran a
// --worktree session (the store's workspace is the agent worktree) or is in
// another directory.
void MentionOtherWorkspaces(const HeldContext& ctx) {
  absl::StatusOr<std::vector<std::string>> others = HeldWorkspaces(ctx.profile_dir);
  if (!others.ok()) return;
  std::vector<std::string> shown;
  for (const std::string& w : *others) {
    if (w != ctx.workspace) shown.push_back(ShowName(w, ctx.styled));
  }
  if (shown.empty()) return;
  std::fprintf(ctx.out, "Held for other workspaces of this profile (use --workspace DIR): %s\n",
               absl::StrJoin(shown, ", ").c_str());
}

// An error message for the terminal. The sandbox's names in it are already
// escaped where the message was made (store.cc, ShowName); what remains is
// made inert here without doubling those escapes' backslashes.
std::string SafeMessage(absl::string_view message) {
  return vocab::EscapeText(message,
                           vocab::EscapeOptions{.ascii_only = true, .double_backslash = false});
}

int Fail(const HeldContext& ctx, const char* verb, const absl::Status& s) {
  std::fprintf(ctx.err, "lazaret held %s: %s\n", verb, SafeMessage(s.message()).c_str());
  return 1;
}

int List(const HeldArgs& a, const HeldContext& ctx) {
  absl::StatusOr<std::optional<Store>> store = OpenExisting(ctx);
  if (!store.ok()) return Fail(ctx, "list", store.status());
  std::vector<HeldEntry> entries;
  if (store->has_value()) {
    absl::StatusOr<std::vector<HeldEntry>> l = (*store)->List();
    if (!l.ok()) return Fail(ctx, "list", l.status());
    entries = *std::move(l);
  }
  if (a.json) {
    absl::StatusOr<std::string> j = ListJson(ctx.profile, ctx.workspace, entries);
    if (!j.ok()) return Fail(ctx, "list", j.status());
    std::fprintf(ctx.out, "%s\n", j->c_str());
    return 0;
  }
  std::fputs(ListText(ctx.profile, ctx.workspace, entries, ctx.styled).c_str(), ctx.out);
  if (entries.empty()) MentionOtherWorkspaces(ctx);
  return 0;
}

// The entries `a` names (all with --all or, for diff, with no path), or an
// error that lists what is held.
absl::StatusOr<std::vector<HeldEntry>> Select(const HeldArgs& a, const HeldContext& ctx,
                                              const std::vector<HeldEntry>& held) {
  if (a.all || a.paths.empty()) return held;
  std::vector<HeldEntry> out;
  std::vector<std::string> missing;
  for (const std::string& arg : a.paths) {
    const std::string rel = NormalizeRel(arg, ctx.workspace);
    auto it =
        std::find_if(held.begin(), held.end(), [&](const HeldEntry& e) { return e.rel == rel; });
    if (it == held.end()) {
      missing.push_back(ShowName(arg, false));
    } else if (std::none_of(out.begin(), out.end(),
                            [&](const HeldEntry& e) { return e.rel == rel; })) {
      out.push_back(*it);
    }
  }
  if (!missing.empty()) {
    std::vector<std::string> names;
    for (const HeldEntry& e : held) names.push_back(ShowName(e.rel, false));
    return absl::NotFoundError(
        absl::StrCat("not held: ", absl::StrJoin(missing, ", "), ". ",
                     names.empty() ? std::string("Nothing is held for this workspace.")
                                   : absl::StrCat("Held: ", absl::StrJoin(names, ", "),
                                                  " (paths relative to the workspace root)")));
  }
  return out;
}

int Diff(const HeldArgs& a, const HeldContext& ctx) {
  absl::StatusOr<std::optional<Store>> store = OpenExisting(ctx);
  if (!store.ok()) return Fail(ctx, "diff", store.status());
  if (!store->has_value()) {
    if (!a.paths.empty()) {
      return Fail(ctx, "diff", absl::NotFoundError("nothing is held for this workspace"));
    }
    std::fputs(ListText(ctx.profile, ctx.workspace, {}, ctx.styled).c_str(), ctx.out);
    MentionOtherWorkspaces(ctx);
    return 0;
  }
  absl::StatusOr<std::vector<HeldEntry>> held = (*store)->List();
  if (!held.ok()) return Fail(ctx, "diff", held.status());
  absl::StatusOr<std::vector<HeldEntry>> chosen = Select(a, ctx, *held);
  if (!chosen.ok()) return Fail(ctx, "diff", chosen.status());
  if (chosen->empty()) {
    std::fputs(ListText(ctx.profile, ctx.workspace, {}, ctx.styled).c_str(), ctx.out);
    return 0;
  }
  int rc = 0;
  for (const HeldEntry& e : *chosen) {
    absl::StatusOr<std::string> shown = ShowEntry(**store, e, ctx.styled);
    if (!shown.ok()) {
      rc = Fail(ctx, "diff", shown.status());
      continue;
    }
    std::fputs(shown->c_str(), ctx.out);
  }
  return rc;
}

int ApplyOrDrop(const HeldArgs& a, const HeldContext& ctx) {
  const bool apply = a.verb == HeldArgs::Verb::kApply;
  const char* verb = apply ? "apply" : "drop";
  if (!a.yes && !ctx.interactive) {
    std::fprintf(ctx.err,
                 "lazaret held %s: not on a terminal, so nothing can be confirmed; to %s "
                 "without a question, add --yes\n",
                 verb, apply ? "write the held versions into the folder" : "forget them");
    return 2;
  }
  absl::StatusOr<std::optional<Store>> store = OpenExisting(ctx);
  if (!store.ok()) return Fail(ctx, verb, store.status());
  std::vector<HeldEntry> held;
  if (store->has_value()) {
    absl::StatusOr<std::vector<HeldEntry>> l = (*store)->List();
    if (!l.ok()) return Fail(ctx, verb, l.status());
    held = *std::move(l);
  }
  absl::StatusOr<std::vector<HeldEntry>> chosen = Select(a, ctx, held);
  if (!chosen.ok()) return Fail(ctx, verb, chosen.status());
  if (chosen->empty()) {
    std::fprintf(ctx.out, "Nothing is held for %s.\n", ShowName(ctx.workspace, ctx.styled).c_str());
    return 0;
  }
  if (apply && ctx.check_no_session) {
    if (absl::Status s = ctx.check_no_session(); !s.ok()) return Fail(ctx, verb, s);
  }
  int rc = 0;
  for (const HeldEntry& e : *chosen) {
    const std::string name = ShowName(e.rel, ctx.styled);
    if (!a.yes) {
      absl::StatusOr<std::string> shown = ShowEntry(**store, e, ctx.styled);
      if (!shown.ok()) {
        rc = Fail(ctx, verb, shown.status());
        continue;
      }
      std::fputs(shown->c_str(), ctx.out);
      std::fflush(ctx.out);
      const std::string question =
          apply ? (e.kind == "deleted" ? absl::StrCat("Remove ", name, " from the folder?")
                                       : absl::StrCat("Write ", name, " into the folder?"))
                : absl::StrCat("Forget the held version of ", name, "?");
      if (!Confirmed(ctx, question)) {
        std::fprintf(ctx.out, "kept held: %s\n", name.c_str());
        continue;
      }
    }
    const absl::Status s = apply ? (*store)->Apply(e.rel) : (*store)->Drop(e.rel);
    if (!s.ok()) {
      rc = Fail(ctx, verb, s);
      continue;
    }
    std::fprintf(ctx.out, "%s: %s\n", apply ? "applied" : "dropped", name.c_str());
  }
  return rc;
}

}  // namespace

absl::StatusOr<HeldArgs> ParseHeldArgs(const std::vector<std::string>& args) {
  HeldArgs a;
  size_t i = 0;
  if (!args.empty()) {
    if (absl::StatusOr<HeldArgs::Verb> v = VerbOf(args[0]); v.ok()) {
      a.verb = *v;
      i = 1;
    }
  }
  std::vector<std::string> positional;
  bool options_done = false;
  auto value = [&](const std::string& arg, const std::string& name,
                   std::string* out) -> absl::StatusOr<bool> {
    if (arg == name) {
      if (i + 1 >= args.size())
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      *out = args[++i];
      return true;
    }
    if (absl::StartsWith(arg, name + "=")) {
      *out = arg.substr(name.size() + 1);
      return true;
    }
    return false;
  };
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.empty() || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      return a;
    }
    if (arg == "--all") {
      a.all = true;
      continue;
    }
    if (arg == "--yes" || arg == "-y") {
      a.yes = true;
      continue;
    }
    if (arg == "--json") {
      a.json = true;
      continue;
    }
    bool matched = false;
    for (auto [name, out] : {std::pair<const char*, std::string*>{"--workspace", &a.workspace},
                             {"--config", &a.explicit_config},
                             {"--profile", &a.profile}}) {
      LAZ_ASSIGN_OR_RETURN(bool m, value(arg, name, out));
      if (m) {
        matched = true;
        break;
      }
    }
    if (!matched) return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
  }
  if (a.verb == HeldArgs::Verb::kList) {
    if (positional.size() > 1) {
      return absl::InvalidArgumentError("list takes at most one PROFILE");
    }
    if (!positional.empty()) {
      if (!a.profile.empty()) {
        return absl::InvalidArgumentError("name the profile once (PROFILE or --profile)");
      }
      a.profile = positional[0];
    }
  } else {
    a.paths = std::move(positional);
  }
  if (a.json && a.verb != HeldArgs::Verb::kList) {
    return absl::InvalidArgumentError("--json is for list only");
  }
  const bool changes = a.verb == HeldArgs::Verb::kApply || a.verb == HeldArgs::Verb::kDrop;
  if ((a.all || a.yes) && !changes) {
    return absl::InvalidArgumentError("--all and --yes are for apply and drop");
  }
  if (changes && a.all == !a.paths.empty()) {
    return absl::InvalidArgumentError(
        "name the held paths to act on, or --all for every one (not both)");
  }
  return a;
}

int RunHeld(const HeldArgs& args, const HeldContext& ctx) {
  switch (args.verb) {
    case HeldArgs::Verb::kList:
      return List(args, ctx);
    case HeldArgs::Verb::kDiff:
      return Diff(args, ctx);
    case HeldArgs::Verb::kApply:
    case HeldArgs::Verb::kDrop:
      return ApplyOrDrop(args, ctx);
  }
  return 2;
}

}  // namespace lazaret::cli::held
