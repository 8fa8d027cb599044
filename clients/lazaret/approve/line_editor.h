// A one-line text editor for the terminal approver (editing a command, typing
// a deny reason). Runs in the `lazaret` CLI. Pure: keys in, text and cursor
// out; no terminal. The initial text may come from the sandbox (a command to
// edit) and is kept byte for byte - invalid UTF-8 included - until the user
// changes it; it is shown only through display_text.h.
//
// Keys (readline's where they exist, all sendable by tmux send-keys):
//   Left/Right, Ctrl-B/Ctrl-F        one character
//   Home/End, Ctrl-A/Ctrl-E          start/end of the line
//   Alt-b/Alt-f, Ctrl-Left/Right     one word back/forward (a word: letters,
//                                    digits and any non-ASCII character)
//   Backspace, Ctrl-H                delete the character before the cursor
//   Delete, Ctrl-D                   delete the character under the cursor
//   Ctrl-W                           delete the blank-separated word before
//                                    the cursor
//   Ctrl-U                           delete from the start to the cursor
//   Ctrl-K                           delete from the cursor to the end
//   Ctrl-_ and Ctrl-Z                undo the last change (a run of typed
//                                    characters is one change)
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_LINE_EDITOR_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_LINE_EDITOR_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "clients/lazaret/approve/display_text.h"
#include "clients/lazaret/approve/key.h"

namespace lazaret::cli::approve {

class LineEditor {
 public:
  LineEditor() = default;
  // The cursor at the end of `utf8`.
  explicit LineEditor(absl::string_view utf8);

  // Applies an editing key; false when the key is not one of the editor's
  // (Enter, Escape, Up/Down... are for the caller).
  bool HandleKey(const Key& key);

  void Insert(char32_t cp);
  void Backspace();
  void Delete();
  void Left();
  void Right();
  void Home();
  void End();
  void WordLeft();
  void WordRight();
  void DeleteWordBack();
  void KillToStart();
  void KillToEnd();
  // False when there is nothing to undo.
  bool Undo();

  // The text, as bytes (what was given, as edited).
  std::string Text() const;
  // The cursor, in code points from the start.
  size_t cursor() const { return cursor_; }
  // The text as it is drawn (display_text.h Display) and the cursor's
  // column in it.
  Line Display() const;
  size_t CursorColumn() const;

 private:
  struct State {
    std::u32string text;
    size_t cursor;
  };
  enum class LastOp { kNone, kInsert, kOther };

  // Saves the state for Undo before a change of kind `op`.
  void Save(LastOp op);

  std::u32string text_;
  size_t cursor_ = 0;
  std::vector<State> undo_;
  LastOp last_ = LastOp::kNone;
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_LINE_EDITOR_H_
