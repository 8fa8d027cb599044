#include "clients/lazaret/approve/model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/process/command_line.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

constexpr size_t kLabel = 11;     // label column of the detail view
constexpr size_t kPageRows = 10;  // PageUp/PageDown in the detail and output views
constexpr char kDenyDefault[] = "denied by the user";
constexpr char kAbortReason[] = "aborted by the user at the terminal";

std::string TimeLeft(int64_t deadline, int64_t now) {
  if (deadline == 0) return "-";
  const int64_t left = deadline - now;
  if (left <= 0) return "expired";
  if (left < 60) return absl::StrFormat("%ds", left);
  return absl::StrFormat("%dm %02ds", left / 60, left % 60);
}

// "label      value" rows: the value wrapped under itself, at most
// `max_rows` rows.
void Field(std::vector<Line>& out, absl::string_view label, const Line& value, size_t width,
           size_t max_rows = 4) {
  std::string pad(label);
  pad.resize(kLabel, ' ');
  if (width <= kLabel + 4) {
    Line row = Plain(pad);
    Append(row, value);
    out.push_back(Truncate(row, width));
    return;
  }
  std::vector<Line> rows = Wrap(value, width - kLabel, max_rows);
  if (rows.empty()) rows.emplace_back();
  for (size_t i = 0; i < rows.size(); ++i) {
    Line row = Plain(i == 0 ? pad : std::string(kLabel, ' '));
    Append(row, rows[i]);
    out.push_back(std::move(row));
  }
}

// `text` (may hold sandbox output) as rows of `width`, one logical line per
// newline.
void TextRows(std::vector<Line>& out, absl::string_view text, size_t width) {
  if (text.empty()) return;
  if (text.back() == '\n') text.remove_suffix(1);
  for (absl::string_view piece : absl::StrSplit(text, '\n')) {
    std::vector<Line> rows = Wrap(Display(piece), width, 8);
    if (rows.empty()) rows.emplace_back();
    for (Line& row : rows) out.push_back(std::move(row));
  }
}

Action QuitAction() {
  Action a;
  a.kind = Action::kQuit;
  return a;
}

}  // namespace

const pb::PendingRequest* Model::Selected() const {
  if (queue_.empty()) return nullptr;
  return &queue_[std::min(selected_, queue_.size() - 1)];
}

void Model::OnEvent(const pb::PendingEvent& event) {
  const std::string& id = event.request().request_id();
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const pb::PendingRequest& r) { return r.request_id() == id; });
  if (event.kind() == pb::PendingEvent::KIND_ADDED) {
    if (it == queue_.end()) {
      queue_.push_back(event.request());
    } else {
      *it = event.request();
    }
    return;
  }
  if (event.kind() != pb::PendingEvent::KIND_RESOLVED) return;
  if (decided_here_.erase(id) == 0) {
    notice_ = absl::StrCat(
        id, " decided elsewhere: ", event.resolution().empty() ? "resolved" : event.resolution());
  }
  if (it != queue_.end()) Remove(static_cast<size_t>(it - queue_.begin()));
}

void Model::OnWatchEnded(const absl::Status& status) {
  notice_ = absl::StrCat("lost the broker: ", status.message(), " (q quits)");
}

void Model::Remove(size_t index) {
  const std::string id = queue_[index].request_id();
  queue_.erase(queue_.begin() + static_cast<ptrdiff_t>(index));
  if (selected_ > index || selected_ >= queue_.size()) {
    selected_ = selected_ > 0 ? selected_ - 1 : 0;
  }
  if (id == target_ && (mode_ == Mode::kDenyReason || mode_ == Mode::kEdit ||
                        mode_ == Mode::kEditConfirm || mode_ == Mode::kConfirmAbort)) {
    BackToQueue();
  }
  if (mode_ == Mode::kDetail && queue_.empty()) mode_ = Mode::kList;
}

void Model::BackToQueue() {
  mode_ = back_ == Mode::kDetail && !queue_.empty() ? Mode::kDetail : Mode::kList;
  target_.clear();
  parsed_.reset();
  parsing_ = false;
}

std::vector<Action> Model::Decide(pb::DecideRequest request) {
  request.set_request_id(target_);
  Action a;
  a.kind = Action::kDecide;
  a.decide = std::move(request);
  decided_here_.insert(target_);
  BackToQueue();
  return {std::move(a)};
}

std::vector<Action> Model::OnKey(const Key& key) {
  if (key.Is(Key::kCtrl, 'c')) return {QuitAction()};
  // Esc typed quickly before a key arrives as Alt-<key>; outside the
  // editors that is the two keys.
  if (key.code == Key::kAlt && mode_ != Mode::kDenyReason && mode_ != Mode::kEdit) {
    std::vector<Action> out = OnKey(Key::Of(Key::kEscape));
    for (Action& a : OnKey(Key::Char(key.ch))) out.push_back(std::move(a));
    return out;
  }
  switch (mode_) {
    case Mode::kList:
    case Mode::kDetail:
      return ListKey(key);
    case Mode::kHelp:
      mode_ = back_;
      return {};
    case Mode::kDenyReason: {
      if (key.Is(Key::kEscape)) {
        BackToQueue();
        return {};
      }
      if (key.Is(Key::kEnter)) {
        pb::DecideRequest d;
        const std::string reason = editor_.Text();
        d.mutable_deny()->set_reason(reason.empty() ? kDenyDefault : reason);
        return Decide(std::move(d));
      }
      editor_.HandleKey(key);
      return {};
    }
    case Mode::kEdit: {
      if (key.Is(Key::kEscape)) {
        BackToQueue();
        return {};
      }
      if (key.Is(Key::kEnter)) {
        if (parsing_) return {};
        parsing_ = true;
        Action a;
        a.kind = Action::kParseCommand;
        a.parse.set_command(editor_.Text());
        for (const auto& r : queue_) {
          if (r.request_id() == target_) a.parse.set_session_id(r.session_id());
        }
        return {std::move(a)};
      }
      if (editor_.HandleKey(key)) notice_.clear();
      return {};
    }
    case Mode::kEditConfirm: {
      if (key.Is(Key::kChar, 'y') || key.Is(Key::kChar, 'Y')) {
        pb::DecideRequest d;
        d.mutable_edit()->set_command(editor_.Text());
        return Decide(std::move(d));
      }
      if (key.Is(Key::kChar, 'n') || key.Is(Key::kChar, 'N') || key.Is(Key::kEscape)) {
        mode_ = Mode::kEdit;
        parsed_.reset();
      }
      return {};
    }
    case Mode::kConfirmAbort: {
      if (key.Is(Key::kChar, 'y') || key.Is(Key::kChar, 'Y')) {
        pb::DecideRequest d;
        d.mutable_abort()->set_reason(kAbortReason);
        return Decide(std::move(d));
      }
      if (key.Is(Key::kChar, 'n') || key.Is(Key::kChar, 'N') || key.Is(Key::kEscape)) {
        BackToQueue();
      }
      return {};
    }
    case Mode::kOutput:
      if (key.Is(Key::kEscape) || key.Is(Key::kChar, 'q') || key.Is(Key::kLeft)) {
        mode_ = back_;
        output_.reset();
      } else if (key.Is(Key::kDown) || key.Is(Key::kChar, 'j')) {
        output_scroll_ = std::min(output_scroll_ + 1, max_scroll_);
      } else if (key.Is(Key::kPageDown)) {
        output_scroll_ = std::min(output_scroll_ + kPageRows, max_scroll_);
      } else if (key.Is(Key::kUp) || key.Is(Key::kChar, 'k')) {
        output_scroll_ = output_scroll_ > 0 ? output_scroll_ - 1 : 0;
      } else if (key.Is(Key::kPageUp)) {
        output_scroll_ = output_scroll_ > kPageRows ? output_scroll_ - kPageRows : 0;
      }
      return {};
  }
  return {};
}

std::vector<Action> Model::ListKey(const Key& key) {
  const pb::PendingRequest* sel = Selected();
  if (key.Is(Key::kChar, 'q')) {
    if (mode_ == Mode::kDetail) {
      mode_ = Mode::kList;
      return {};
    }
    return {QuitAction()};
  }
  if (key.Is(Key::kChar, '?')) {
    back_ = mode_;
    mode_ = Mode::kHelp;
    return {};
  }
  if (key.Is(Key::kUp) || key.Is(Key::kChar, 'k')) {
    if (selected_ > 0) --selected_;
    detail_scroll_ = 0;
    return {};
  }
  if (key.Is(Key::kDown) || key.Is(Key::kChar, 'j')) {
    if (selected_ + 1 < queue_.size()) ++selected_;
    detail_scroll_ = 0;
    return {};
  }
  if (key.Is(Key::kEscape) || key.Is(Key::kLeft)) {
    mode_ = Mode::kList;
    return {};
  }
  if (mode_ == Mode::kDetail && key.Is(Key::kPageDown)) {
    detail_scroll_ = std::min(detail_scroll_ + kPageRows, max_scroll_);
    return {};
  }
  if (mode_ == Mode::kDetail && key.Is(Key::kPageUp)) {
    detail_scroll_ = detail_scroll_ > kPageRows ? detail_scroll_ - kPageRows : 0;
    return {};
  }
  if (key.Is(Key::kChar, 'o') || key.Is(Key::kChar, 'O')) {
    if (last_approved_.empty()) {
      notice_ = "no approved request yet";
      return {};
    }
    Action a;
    a.kind = Action::kGetRequest;
    a.request_id = last_approved_;
    return {std::move(a)};
  }
  if (sel == nullptr) return {};
  if (key.Is(Key::kEnter) || key.Is(Key::kRight)) {
    mode_ = Mode::kDetail;
    detail_scroll_ = 0;
    return {};
  }
  const bool opens = key.Is(Key::kChar, 'a') || key.Is(Key::kChar, 'A') ||
                     key.Is(Key::kChar, 'd') || key.Is(Key::kChar, 'D') ||
                     key.Is(Key::kChar, 'e') || key.Is(Key::kChar, 'E') || key.Is(Key::kChar, 'Q');
  if (!opens) return {};
  back_ = mode_;
  target_ = sel->request_id();
  notice_.clear();
  switch (key.ch) {
    case 'a':
    case 'A': {
      pb::DecideRequest d;
      d.mutable_approve();
      return Decide(std::move(d));
    }
    case 'd':
    case 'D':
      editor_ = LineEditor();
      mode_ = Mode::kDenyReason;
      return {};
    case 'e':
    case 'E':
      editor_ =
          LineEditor(sel->command().empty() ? CommandLine({sel->argv().begin(), sel->argv().end()})
                                            : sel->command());
      parsed_.reset();
      parsing_ = false;
      mode_ = Mode::kEdit;
      return {};
    default:
      mode_ = Mode::kConfirmAbort;
      return {};
  }
}

void Model::OnDecided(const pb::DecideRequest& request,
                      const absl::StatusOr<pb::DecideResponse>& response) {
  const std::string& id = request.request_id();
  if (!response.ok()) {
    decided_here_.erase(id);
    notice_ = absl::StrCat(id, ": ", response.status().message());
    return;
  }
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const pb::PendingRequest& r) { return r.request_id() == id; });
  if (it != queue_.end()) Remove(static_cast<size_t>(it - queue_.begin()));
  switch (request.decision_case()) {
    case pb::DecideRequest::kApprove:
    case pb::DecideRequest::kEdit:
      last_approved_ = id;
      notice_ = absl::StrCat(request.has_edit() ? "edited " : "approved ", id, ": ran ",
                             response->binary(), " (o shows the output)");
      break;
    case pb::DecideRequest::kDeny:
      notice_ = absl::StrCat("denied ", id);
      break;
    case pb::DecideRequest::kAbort:
      notice_ = absl::StrCat("aborted ", id, " and its session");
      break;
    default:
      break;
  }
}

void Model::OnParsed(const absl::StatusOr<pb::ParseCommandResponse>& response) {
  if (mode_ != Mode::kEdit || !parsing_) return;
  parsing_ = false;
  if (!response.ok()) {
    notice_ = absl::StrCat("cannot check the command: ", response.status().message());
    return;
  }
  if (!response->ok()) {
    notice_ = absl::StrCat("cannot run: ", response->error());
    return;
  }
  parsed_ = *response;
  mode_ = Mode::kEditConfirm;
}

void Model::OnRequestState(const absl::StatusOr<pb::RequestState>& state) {
  if (!state.ok()) {
    notice_ = absl::StrCat("output: ", state.status().message());
    return;
  }
  output_ = *state;
  output_scroll_ = 0;
  if (mode_ != Mode::kOutput) back_ = mode_ == Mode::kHelp ? Mode::kList : mode_;
  mode_ = Mode::kOutput;
}

std::vector<Line> Model::ListBody(size_t width, size_t height) const {
  std::vector<Line> out;
  if (queue_.empty()) {
    out.push_back(Plain("No pending requests; waiting for the sandbox to ask."));
    return out;
  }
  size_t first = 0;
  if (height > 0 && selected_ >= height) first = selected_ - height + 1;
  for (size_t i = first; i < queue_.size() && out.size() < height; ++i) {
    const pb::PendingRequest& r = queue_[i];
    const std::string left = TimeLeft(r.deadline_unix(), now_);
    Line row = Plain(absl::StrCat(i == selected_ ? "> " : "  ", r.request_id(), "  "));
    Append(row, Display(r.profile()));
    Append(row, Plain("  "));
    Append(row, Display(r.command().empty() ? CommandLine({r.argv().begin(), r.argv().end()})
                                            : r.command()));
    const size_t room = width > left.size() + 1 ? width - left.size() - 1 : width;
    row = Truncate(row, room);
    const size_t used = LineWidth(row);
    if (width >= used + left.size() + 1) {
      Append(row, Plain(std::string(width - used - left.size(), ' ') + left));
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<Line> Model::DetailBody(const pb::PendingRequest& r, size_t width) const {
  std::vector<Line> out;
  auto index =
      std::find_if(queue_.begin(), queue_.end(),
                   [&](const pb::PendingRequest& q) { return q.request_id() == r.request_id(); }) -
      queue_.begin();
  Field(out, "request",
        Plain(absl::StrCat(r.request_id(), "  (", index + 1, " of ", queue_.size(), ")")), width);
  Field(out, "profile", Display(r.profile()), width, 1);
  Field(out, "session", Display(r.session_id()), width, 1);
  Field(out, "workspace", Display(r.workspace()), width, 2);
  Field(out, "why", Display(r.justification()), width, 3);
  Field(out, "command", r.command().empty() ? Plain("(sent as argv)") : Display(r.command()), width,
        3);
  for (int i = 0; i < r.argv_size(); ++i) {
    Line value = Plain(absl::StrCat("[", i, "] "));
    Append(value, Display(r.argv(i)));
    Field(out, i == 0 ? "argv" : "", value, width, 2);
  }
  Field(out, "binary", Display(r.binary()), width, 2);
  Field(out, "cwd", Display(r.cwd()), width, 2);
  Field(out, "not auto", Display(r.reason_not_auto()), width, 2);
  Field(out, "time left", Plain(TimeLeft(r.deadline_unix(), now_)), width, 1);
  if (r.had_invisible()) {
    out.push_back(
        Truncate(Plain("! hidden or control characters: shown escaped and marked"), width));
  }
  return out;
}

std::vector<Line> Model::OutputBody(size_t width) const {
  std::vector<Line> out;
  const pb::RequestState& s = *output_;
  const pb::AuditRecord& rec = s.record();
  Field(out, "request",
        Display(s.request().request_id().empty() ? rec.request_id() : s.request().request_id()),
        width, 1);
  std::string phase = "pending";
  if (s.phase() == pb::RequestState::PHASE_RUNNING) phase = "running";
  if (s.phase() == pb::RequestState::PHASE_DONE) {
    phase = rec.ran() ? absl::StrCat("done, exit ", rec.exit_code(),
                                     rec.timed_out() ? " (timed out)" : "")
                      : "done, did not run";
  }
  Field(out, "phase", Plain(phase), width, 1);
  Line ran;
  for (const std::string& a : rec.ran_argv()) {
    if (!ran.empty()) Append(ran, Plain(" "));
    Append(ran, Display(a));
  }
  if (!ran.empty()) Field(out, "ran", ran, width, 2);
  out.push_back(Plain("-- stdout"));
  TextRows(out, s.stdout(), width);
  if (rec.stdout_truncated()) out.push_back(Plain("(stdout truncated)"));
  out.push_back(Plain("-- stderr"));
  TextRows(out, s.stderr(), width);
  if (rec.stderr_truncated()) out.push_back(Plain("(stderr truncated)"));
  return out;
}

std::vector<Line> Model::Body(size_t width) const {
  std::vector<Line> out;
  const pb::PendingRequest* target = nullptr;
  for (const auto& r : queue_) {
    if (r.request_id() == target_) target = &r;
  }
  switch (mode_) {
    case Mode::kList:
      return out;  // ListBody needs the height
    case Mode::kDetail:
      if (const pb::PendingRequest* sel = Selected()) return DetailBody(*sel, width);
      return out;
    case Mode::kHelp:
      for (const char* l : {
               "Up/Down, k/j   select a request",
               "Enter          show its details (PgUp/PgDn scroll, Esc back)",
               "a              approve: run it on the host",
               "d              deny (type a reason, Enter sends, Esc cancels)",
               "e              edit the command; Enter checks it, y runs it",
               "Q              abort: deny and stop the sandbox (y confirms)",
               "o              output of the last approved request",
               style_ == Style::kInline
                   ? "q, Ctrl-C      back to the sandbox (requests stay pending)"
                   : "q, Ctrl-C      quit (requests stay pending)",
               "",
               "Editing: Left/Right Home/End Ctrl-A/E Alt-b/f Ctrl-Left/Right",
               "         Backspace Delete Ctrl-W Ctrl-U Ctrl-K, undo Ctrl-_ or Ctrl-Z",
               "Marked text is an escape: \\xHH, \\u{HHHH} stand for hidden characters.",
               "",
               "Press any key.",
           }) {
        out.push_back(Truncate(Plain(l), width));
      }
      return out;
    case Mode::kDenyReason:
    case Mode::kEdit:
    case Mode::kConfirmAbort:
    case Mode::kEditConfirm:
      if (target != nullptr) out = DetailBody(*target, width);
      return out;
    case Mode::kOutput:
      if (output_.has_value()) return OutputBody(width);
      return out;
  }
  return out;
}

std::vector<Line> Model::Prompt(size_t width) const {
  std::vector<Line> out;
  if (mode_ != Mode::kDenyReason && mode_ != Mode::kEdit && mode_ != Mode::kEditConfirm &&
      mode_ != Mode::kConfirmAbort) {
    return out;
  }
  out.emplace_back();
  if (mode_ == Mode::kDenyReason)
    out.push_back(Plain("Deny: reason (optional), Enter sends, Esc cancels"));
  if (mode_ == Mode::kEdit) out.push_back(Plain("Edit: Enter checks the command, Esc cancels"));
  if (mode_ == Mode::kConfirmAbort) {
    out.push_back(Plain("Abort: deny this request and stop its sandbox? (y/n)"));
  }
  if (mode_ == Mode::kEditConfirm && parsed_.has_value()) {
    Line cmd = Plain("new command ");
    Append(cmd, editor_.Display());
    for (Line& row : Wrap(cmd, width, 2)) out.push_back(std::move(row));
    for (int i = 0; i < parsed_->argv_size(); ++i) {
      Line value = Plain(absl::StrCat("[", i, "] "));
      Append(value, Display(parsed_->argv(i)));
      Field(out, i == 0 ? "new argv" : "", value, width, 2);
    }
    Field(out, "binary", Display(parsed_->binary()), width, 2);
    out.push_back(Plain("Run the edited command? (y/n)"));
  }
  return out;
}

std::string Model::Footer() const {
  switch (mode_) {
    case Mode::kList:
      if (style_ == Style::kInline) {
        if (queue_.empty()) return "q back to the sandbox  ? help";
        return "Enter details  a approve  d deny  e edit  Q abort  ? help  q back";
      }
      if (queue_.empty()) return "q quit  ? help";
      return "Enter details  a approve  d deny  e edit  Q abort  o output  ? help  q quit";
    case Mode::kDetail:
      return "a approve  d deny  e edit  Q abort  o output  j/k next  PgDn more  Esc list";
    case Mode::kDenyReason:
      return "Enter send  Esc cancel";
    case Mode::kEdit:
      return "Enter check  Esc cancel  Ctrl-_ undo";
    case Mode::kEditConfirm:
    case Mode::kConfirmAbort:
      return "y yes  n no";
    case Mode::kOutput:
      return "j/k PgUp/PgDn scroll  Esc back";
    case Mode::kHelp:
      return "any key: back";
  }
  return "";
}

// The editor's rows: the editor's text wrapped, scrolled so the cursor row
// is visible; and where the cursor is in them.
namespace {

struct EditorRows {
  std::vector<Line> rows;
  CursorPos cursor;
};

EditorRows LayOutEditor(const LineEditor& editor, size_t width, size_t max_rows) {
  EditorRows out;
  if (width < 3 || max_rows == 0) return out;
  const size_t w = width - 2;
  std::vector<Line> all = Wrap(editor.Display(), w, SIZE_MAX);
  if (all.empty()) all.emplace_back();
  // The cursor: where the text before it ends when wrapped the same way.
  LineEditor before = editor;
  before.KillToEnd();
  std::vector<Line> pre = Wrap(before.Display(), w, SIZE_MAX);
  size_t row = pre.empty() ? 0 : pre.size() - 1;
  size_t col = pre.empty() ? 0 : LineWidth(pre.back());
  if (col >= w) {
    ++row;
    col = 0;
  }
  while (all.size() <= row) all.emplace_back();
  const size_t first = row >= max_rows ? row - max_rows + 1 : 0;
  for (size_t i = first; i < all.size() && out.rows.size() < max_rows; ++i) {
    Line l = Plain(i == 0 ? "> " : "  ");
    Append(l, all[i]);
    out.rows.push_back(std::move(l));
  }
  out.cursor = CursorPos{row - first, col + 2};
  return out;
}

}  // namespace

std::vector<Line> Model::Layout(size_t width, size_t height,
                                std::optional<CursorPos>* cursor) const {
  std::vector<Line> screen;
  if (width == 0 || height == 0) return screen;
  const size_t chrome = height >= 4 ? 3 : 0;  // header, notice, footer
  const size_t body_rows = height - chrome;
  if (chrome != 0) {
    std::string header = absl::StrCat(
        style_ == Style::kInline ? "lazaret run: the sandbox asks the host  " : "lazaret approve  ",
        queue_.size(), " pending");
    screen.push_back(Truncate(Plain(header), width));
  }
  const bool editing = mode_ == Mode::kDenyReason || mode_ == Mode::kEdit;
  std::vector<Line> body = mode_ == Mode::kList ? ListBody(width, body_rows) : Body(width);
  if (mode_ == Mode::kOutput || mode_ == Mode::kDetail) {
    const size_t scroll = mode_ == Mode::kOutput ? output_scroll_ : detail_scroll_;
    max_scroll_ = body.size() > body_rows ? body.size() - body_rows : 0;
    const size_t skip = std::min(scroll, max_scroll_);
    body.erase(body.begin(), body.begin() + static_cast<ptrdiff_t>(skip));
  }
  EditorRows editor;
  if (editing) {
    editor = LayOutEditor(editor_, width, std::max<size_t>(1, std::min<size_t>(4, body_rows / 3)));
  }
  std::vector<Line>& editor_rows = editor.rows;
  std::vector<Line> prompt = Prompt(width);
  const size_t tail = editor_rows.size() + prompt.size();
  const size_t room = body_rows > tail ? body_rows - tail : 0;
  if (body.size() > room && room > 0) {
    const size_t hidden = body.size() - room + 1;
    body.resize(room - 1);
    body.push_back(Truncate(Plain(absl::StrCat("... ", hidden, " more rows (PgDn)")), width));
  } else if (room == 0) {
    body.clear();
  }
  for (Line& l : body) screen.push_back(std::move(l));
  for (Line& l : prompt) {
    if (screen.size() < height) screen.push_back(Truncate(l, width));
  }
  if (cursor != nullptr && !editor_rows.empty() && screen.size() + editor.cursor.row < height) {
    *cursor = CursorPos{screen.size() + editor.cursor.row, std::min(editor.cursor.col, width - 1)};
  }
  for (Line& l : editor_rows) screen.push_back(std::move(l));
  while (chrome != 0 && screen.size() < height - 2) screen.emplace_back();
  if (chrome != 0) {
    screen.push_back(Truncate(Display(notice_), width));
    screen.push_back(Truncate(Plain(Footer()), width));
  }
  if (screen.size() > height) screen.resize(height);
  return screen;
}

std::vector<Line> Model::Render(size_t width, size_t height) const {
  return Layout(width, height, nullptr);
}

std::optional<CursorPos> Model::Cursor(size_t width, size_t height) const {
  std::optional<CursorPos> cursor;
  Layout(width, height, &cursor);
  return cursor;
}

}  // namespace lazaret::cli::approve
