// What `lazaret held` prints: the list of held paths and the diff of a held
// version against the host's. Runs in the `lazaret` CLI, as the developer.
// Every path and every byte of a diff comes from the sandbox and is trusted
// for nothing: it goes through the approver's escaping
// (approve/display_text.h: control characters, ESC sequences, CR, NUL,
// invalid UTF-8, bidi and other invisible code points become marked escapes
// such as \x1b or \u{202E}), and spaces at the end of a line are shown as a
// marked "[N spaces]". With `styled` (a terminal) a marked escape is drawn
// in reverse video; without, every backslash that is the file's own is
// doubled, so that an escape can still be told from text that looks like
// one. Nothing printed can move the cursor or recolour the screen.
#ifndef LAZARET_CLIENTS_LAZARET_HELD_DISPLAY_H_
#define LAZARET_CLIENTS_LAZARET_HELD_DISPLAY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "clients/lazaret/approve/display_text.h"
#include "clients/lazaret/held/store.h"

namespace lazaret::cli::held {

// `line` as terminal text (see the file comment for `styled`).
std::string RenderLine(const approve::Line& line, bool styled);

// A path (or any name) for a terminal: every space a reader could miss is
// shown (approve::DisplayVisible).
std::string ShowName(absl::string_view raw, bool styled);

// One line of `diff -u` output without its '\n': its first byte (' ', '+',
// '-', '@') kept, the rest escaped; spaces and tabs at its end made visible.
// Styled: '-' lines red, '+' lines green.
std::string ShowDiffLine(absl::string_view line, bool styled);

// The output of `diff -u --label a --label b` for the held path `rel` as
// shown to the developer: its own "--- a/REL" / "+++ b/REL" header with REL
// escaped (diff's header lines are replaced, never printed, so a name with a
// newline cannot forge one), then each line through ShowDiffLine.
std::string ShowDiff(absl::string_view diff_output, absl::string_view rel, bool styled);

// The text one side of a diff shows for a symlink: "symlink -> TARGET\n".
std::string SymlinkText(absl::string_view target);

// `lazaret held list`: a header naming the profile and the workspace, then
// one line per entry (change, kind, session, time, path), or "nothing held".
std::string ListText(absl::string_view profile, absl::string_view workspace,
                     const std::vector<HeldEntry>& entries, bool styled);

// The same as JSON (lazaret.held.v1.Listing): each path escaped as the text
// shows it ("path") and as its exact bytes ("path_bytes", base64).
absl::StatusOr<std::string> ListJson(absl::string_view profile, absl::string_view workspace,
                                     const std::vector<HeldEntry>& entries);

}  // namespace lazaret::cli::held

#endif  // LAZARET_CLIENTS_LAZARET_HELD_DISPLAY_H_
