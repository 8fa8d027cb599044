#include "clients/lazaret/approve/line_editor.h"

#include "services/vocab/utf8.h"

namespace lazaret::cli::approve {
namespace {

// Undo steps kept; older ones are forgotten.
constexpr size_t kMaxUndo = 256;

bool IsWordChar(char32_t cp) {
  if (cp >= 0x80) return !vocab::IsInvalidByte(cp);
  return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
}

bool IsBlank(char32_t cp) { return cp == ' ' || cp == '\t'; }

}  // namespace

LineEditor::LineEditor(absl::string_view utf8)
    : text_(vocab::DecodeAll(utf8)), cursor_(text_.size()) {}

void LineEditor::Save(LastOp op) {
  if (!(op == LastOp::kInsert && last_ == LastOp::kInsert)) {
    if (undo_.size() == kMaxUndo) undo_.erase(undo_.begin());
    undo_.push_back(State{text_, cursor_});
  }
  last_ = op;
}

bool LineEditor::HandleKey(const Key& key) {
  switch (key.code) {
    case Key::kChar:
      if (key.ch < 0x20 || key.ch == 0x7F) return false;
      Insert(key.ch);
      return true;
    case Key::kBackspace:
      Backspace();
      return true;
    case Key::kDelete:
      Delete();
      return true;
    case Key::kLeft:
      Left();
      return true;
    case Key::kRight:
      Right();
      return true;
    case Key::kHome:
      Home();
      return true;
    case Key::kEnd:
      End();
      return true;
    case Key::kCtrlLeft:
      WordLeft();
      return true;
    case Key::kCtrlRight:
      WordRight();
      return true;
    case Key::kAlt:
      if (key.ch == 'b') {
        WordLeft();
        return true;
      }
      if (key.ch == 'f') {
        WordRight();
        return true;
      }
      return false;
    case Key::kCtrl:
      switch (key.ch) {
        case 'a':
          Home();
          return true;
        case 'e':
          End();
          return true;
        case 'b':
          Left();
          return true;
        case 'f':
          Right();
          return true;
        case 'h':
          Backspace();
          return true;
        case 'd':
          Delete();
          return true;
        case 'w':
          DeleteWordBack();
          return true;
        case 'u':
          KillToStart();
          return true;
        case 'k':
          KillToEnd();
          return true;
        case '_':
        case 'z':
          Undo();
          return true;
        default:
          return false;
      }
    default:
      return false;
  }
}

void LineEditor::Insert(char32_t cp) {
  Save(LastOp::kInsert);
  text_.insert(text_.begin() + static_cast<ptrdiff_t>(cursor_), cp);
  ++cursor_;
}

void LineEditor::Backspace() {
  if (cursor_ == 0) return;
  Save(LastOp::kOther);
  text_.erase(cursor_ - 1, 1);
  --cursor_;
}

void LineEditor::Delete() {
  if (cursor_ == text_.size()) return;
  Save(LastOp::kOther);
  text_.erase(cursor_, 1);
}

void LineEditor::Left() {
  last_ = LastOp::kNone;
  if (cursor_ > 0) --cursor_;
}

void LineEditor::Right() {
  last_ = LastOp::kNone;
  if (cursor_ < text_.size()) ++cursor_;
}

void LineEditor::Home() {
  last_ = LastOp::kNone;
  cursor_ = 0;
}

void LineEditor::End() {
  last_ = LastOp::kNone;
  cursor_ = text_.size();
}

void LineEditor::WordLeft() {
  last_ = LastOp::kNone;
  while (cursor_ > 0 && !IsWordChar(text_[cursor_ - 1])) --cursor_;
  while (cursor_ > 0 && IsWordChar(text_[cursor_ - 1])) --cursor_;
}

void LineEditor::WordRight() {
  last_ = LastOp::kNone;
  while (cursor_ < text_.size() && !IsWordChar(text_[cursor_])) ++cursor_;
  while (cursor_ < text_.size() && IsWordChar(text_[cursor_])) ++cursor_;
}

void LineEditor::DeleteWordBack() {
  size_t start = cursor_;
  while (start > 0 && IsBlank(text_[start - 1])) --start;
  while (start > 0 && !IsBlank(text_[start - 1])) --start;
  if (start == cursor_) return;
  Save(LastOp::kOther);
  text_.erase(start, cursor_ - start);
  cursor_ = start;
}

void LineEditor::KillToStart() {
  if (cursor_ == 0) return;
  Save(LastOp::kOther);
  text_.erase(0, cursor_);
  cursor_ = 0;
}

void LineEditor::KillToEnd() {
  if (cursor_ == text_.size()) return;
  Save(LastOp::kOther);
  text_.erase(cursor_);
}

bool LineEditor::Undo() {
  last_ = LastOp::kNone;
  if (undo_.empty()) return false;
  text_ = std::move(undo_.back().text);
  cursor_ = undo_.back().cursor;
  undo_.pop_back();
  return true;
}

std::string LineEditor::Text() const { return vocab::EncodeAll(text_); }

Line LineEditor::Display() const { return approve::Display(Text()); }

size_t LineEditor::CursorColumn() const {
  return LineWidth(approve::Display(vocab::EncodeAll(text_.substr(0, cursor_))));
}

}  // namespace lazaret::cli::approve
