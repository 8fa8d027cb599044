#include "clients/lazaret/approve/model.h"

#include <algorithm>
#include <ctime>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/spawn/command_line.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

constexpr size_t kLabel = 11;  // label column of the detail view
constexpr char kDenyDefault[] = "denied by the user";
constexpr char kAbortReason[] = "aborted by the user at the terminal";

std::string TimeLeft(int64_t deadline, int64_t now) {
  if (deadline == 0) return "-";
  const int64_t left = deadline - now;
  if (left <= 0) return "expired";
  if (left < 60) return absl::StrFormat("%ds", left);
  return absl::StrFormat("%dm %02ds", left / 60, left % 60);
}

// How the model tells requests apart: the broker's id; a broker too old to
// give one leaves the agent's, kept apart by a prefix no broker id has.
std::string KeyOf(const pb::PendingRequest& r) {
  return r.id().empty() ? absl::StrCat("agent:", r.request_id()) : r.id();
}

// How the screen names a request: only ever by the broker's id, never by
// the text the agent chose.
std::string LabelOf(const pb::PendingRequest& r) { return r.id().empty() ? "(no id)" : r.id(); }

// A network request's name as it is shown (escaped: it is the sandbox's
// question, even though the broker validated it as a DNS name).
Line NameOf(const pb::PendingRequest& r) {
  const pb::NetworkRequest& n = r.network();
  return Display(n.name().empty() ? n.name_escaped() : n.name());
}

std::string ScopeWords(pb::AllowName::Scope scope) {
  switch (scope) {
    case pb::AllowName::SCOPE_ONCE:
      return "once";
    case pb::AllowName::SCOPE_SESSION:
      return "for this session";
    case pb::AllowName::SCOPE_PROFILE:
      return "for this profile";
    default:
      return "";
  }
}

std::string CommandOf(const pb::PendingRequest& r) {
  return r.command().empty() ? CommandLine({r.argv().begin(), r.argv().end()}) : r.command();
}

std::string RandomCode() {
  std::random_device rd;
  std::uniform_int_distribution<int> digit(0, 9);
  std::string code;
  for (size_t i = 0; i < kCodeDigits; ++i) code.push_back(static_cast<char>('0' + digit(rd)));
  return code;
}

// Everything a reader could misread in what would run.
std::vector<std::string> OdditiesOf(const pb::PendingRequest& r) {
  std::vector<std::string> out;
  auto add = [&](std::vector<std::string> more) {
    for (std::string& m : more) out.push_back(std::move(m));
  };
  if (r.has_network()) {
    const std::string& name = r.network().name();
    add(Oddities("the name", name));
    // Punycode: what the name looks like in a browser may be another name.
    if (absl::StartsWith(name, "xn--") || absl::StrContains(name, ".xn--")) {
      out.push_back(
          "the name has an internationalized (xn--) label: it may display as a "
          "lookalike of another name");
    }
    return out;
  }
  if (!r.command().empty()) add(Oddities("the command", r.command()));
  for (int i = 0; i < r.argv_size(); ++i) add(Oddities(absl::StrCat("argv[", i, "]"), r.argv(i)));
  add(Oddities("the binary", r.binary()));
  add(Oddities("cwd", r.cwd()));
  return out;
}

bool Flagged(const pb::PendingRequest& r) {
  return r.findings_size() > 0 || r.had_invisible() || !OdditiesOf(r).empty();
}

// "label      value" rows: the value wrapped under itself, every row of it
// (scrolling shows what does not fit). Too narrow for the label column:
// the label on a row of its own and the value under it.
void Field(std::vector<Line>& out, absl::string_view label, const Line& value, size_t width) {
  if (width == 0) return;
  std::vector<Line> rows;
  if (width < kLabel + 8) {
    if (!label.empty()) out.push_back(Truncate(Plain(label), width));
    rows = Wrap(value, width, SIZE_MAX);
    if (rows.empty()) rows.emplace_back();
    for (Line& row : rows) out.push_back(std::move(row));
    return;
  }
  std::string pad(label);
  pad.resize(kLabel, ' ');
  rows = Wrap(value, width - kLabel, SIZE_MAX);
  if (rows.empty()) rows.emplace_back();
  for (size_t i = 0; i < rows.size(); ++i) {
    Line row = Plain(i == 0 ? pad : std::string(kLabel, ' '));
    Append(row, rows[i]);
    out.push_back(std::move(row));
  }
}

// `words` wrapped under `lead` (the first row's start), continuation rows
// indented as far as `lead` is wide (when the screen is wide enough).
void Hanging(std::vector<Line>& out, const Line& lead, const Line& words, size_t width) {
  const size_t indent = LineWidth(lead);
  if (width < indent + 8) {
    Line line = lead;
    Append(line, words);
    for (Line& row : Wrap(line, width, SIZE_MAX)) out.push_back(std::move(row));
    return;
  }
  std::vector<Line> rows = Wrap(words, width - indent, SIZE_MAX);
  if (rows.empty()) rows.emplace_back();
  for (size_t i = 0; i < rows.size(); ++i) {
    Line row = i == 0 ? lead : Plain(std::string(indent, ' '));
    Append(row, rows[i]);
    out.push_back(std::move(row));
  }
}

// A warning: a marked "!" and the words.
void Warning(std::vector<Line>& out, const Line& words, size_t width) {
  Line lead{Run{"!", true}};
  Append(lead, Plain(" "));
  Hanging(out, lead, words, width);
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

// The keys that open a decision on a request (`network`: a network
// request's; a and e are among them only to say that they do not apply).
bool IsDecisionKey(const Key& key, bool network) {
  if (key.code != Key::kChar) return false;
  switch (key.ch) {
    case 'a':
    case 'A':
    case 'd':
    case 'D':
    case 'e':
    case 'E':
    case 'Q':
      return true;
    case 'o':
    case 'O':
    case 's':
    case 'S':
    case 'p':
    case 'P':
      return network;
    default:
      return false;
  }
}

bool IsPrompt(Mode m) {
  return m == Mode::kConfirmApprove || m == Mode::kDenyReason || m == Mode::kEdit ||
         m == Mode::kEditConfirm || m == Mode::kConfirmAbort || m == Mode::kProfileDiff ||
         m == Mode::kConfirmAllow;
}

bool IsOutputKey(const Key& key) { return key.Is(Key::kChar, 'o') || key.Is(Key::kChar, 'O'); }

}  // namespace

Model::Model(Style style, std::function<std::string()> make_code)
    : make_code_(make_code ? std::move(make_code) : RandomCode), style_(style) {}

int Model::Index(const std::string& key) const {
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (KeyOf(queue_[i]) == key) return static_cast<int>(i);
  }
  return -1;
}

const pb::PendingRequest* Model::Selected() const {
  const int i = Index(selected_);
  return i < 0 ? nullptr : &queue_[static_cast<size_t>(i)];
}

std::string Model::viewing() const { return view_.has_value() ? view_->id() : std::string(); }

void Model::StartGuard() {
  guard_until_ms_ = clock_ms_ + kGuardMs;
  discard_ = true;
}

int64_t Model::GuardLeftMs() const { return std::max<int64_t>(0, guard_until_ms_ - clock_ms_); }

bool Model::TakeDiscard() { return std::exchange(discard_, false); }

void Model::BackToList() {
  mode_ = Mode::kList;
  back_ = Mode::kList;
  view_.reset();
  view_gone_.clear();
  code_.clear();
  typed_.clear();
  scope_ = pb::AllowName::SCOPE_UNSPECIFIED;
  parsed_.reset();
  parsing_ = false;
}

void Model::OnPromptOpen() {
  BackToList();
  if (Selected() == nullptr) selected_ = queue_.empty() ? "" : KeyOf(queue_.front());
  StartGuard();
}

void Model::OnEvent(const pb::PendingEvent& event) {
  const pb::PendingRequest& r = event.request();
  const std::string key = KeyOf(r);
  if (event.kind() == pb::PendingEvent::KIND_ADDED) {
    const int i = Index(key);
    if (i < 0) {
      queue_.push_back(r);
    } else {
      queue_[static_cast<size_t>(i)] = r;
    }
    if (view_.has_value() && KeyOf(*view_) == key && view_gone_.empty()) *view_ = r;
    if (selected_.empty()) {
      // The first row: in the list, the cursor lands on a request the user
      // has not seen yet.
      selected_ = key;
      if (mode_ == Mode::kList) StartGuard();
    }
    return;
  }
  if (event.kind() != pb::PendingEvent::KIND_RESOLVED) return;
  const bool here = decided_here_.erase(key) > 0;
  const std::string how = event.resolution().empty() ? "resolved" : event.resolution();
  if (!here) notice_ = absl::StrCat(LabelOf(r), " decided elsewhere: ", how);
  Remove(key, how);
}

void Model::OnWatchEnded(const absl::Status& status) {
  notice_ = absl::StrCat("lost the broker: ", status.message(), " (q quits)");
}

void Model::Remove(const std::string& key, const std::string& how) {
  const int i = Index(key);
  if (i >= 0) {
    queue_.erase(queue_.begin() + i);
    if (selected_ == key) {
      if (queue_.empty()) {
        selected_.clear();
      } else {
        // The cursor must move to another request: in the list, the guard
        // keeps a key meant for the one that left from acting on this one.
        // (Elsewhere the screen shows one request that does not change.)
        selected_ = KeyOf(queue_[std::min(static_cast<size_t>(i), queue_.size() - 1)]);
        if (mode_ == Mode::kList) StartGuard();
      }
    }
  }
  if (!view_.has_value() || KeyOf(*view_) != key || !view_gone_.empty()) return;
  // The view stays on its request and says what happened; no prompt about
  // it stays open.
  view_gone_ = how;
  code_.clear();
  typed_.clear();
  scope_ = pb::AllowName::SCOPE_UNSPECIFIED;
  parsed_.reset();
  parsing_ = false;
  if (IsPrompt(mode_)) mode_ = Mode::kDetail;
  if ((mode_ == Mode::kHelp || mode_ == Mode::kOutput) && IsPrompt(back_)) back_ = Mode::kDetail;
}

std::string Model::ViewClosed() const {
  if (!view_.has_value()) return "nothing is in view";
  if (!view_gone_.empty()) return view_gone_;
  if (view_->deadline_unix() > 0 && view_->deadline_unix() <= now_) return "expired";
  return "";
}

std::vector<Action> Model::Decide(pb::DecideRequest request) {
  const pb::PendingRequest& r = *view_;
  if (!r.id().empty()) {
    request.set_id(r.id());
  } else {
    request.set_request_id(r.request_id());
  }
  Action a;
  a.kind = Action::kDecide;
  a.decide = std::move(request);
  decided_here_.insert(KeyOf(r));
  BackToList();
  return {std::move(a)};
}

void Model::CloseConfirm(Mode to, const std::string& why) {
  mode_ = to;
  code_.clear();
  typed_.clear();
  if (to == Mode::kEdit) parsed_.reset();
  notice_ = why;
}

std::vector<Action> Model::OnKey(const Key& key) {
  if (GuardLeftMs() > 0) {
    // Typed before the user could see what changed: ignored, and the guard
    // holds until the typing stops.
    guard_until_ms_ = std::max(guard_until_ms_, clock_ms_ + kGuardMs);
    return {};
  }
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
      return ListKey(key);
    case Mode::kDetail:
      return DetailKey(key);
    case Mode::kHelp:
      mode_ = back_;
      return {};
    case Mode::kConfirmApprove:
    case Mode::kEditConfirm:
    case Mode::kConfirmAllow:
      return ConfirmKey(key);
    case Mode::kProfileDiff: {
      if (ScrollKey(key, false)) return {};
      if (!key.Is(Key::kEnter)) {
        CloseConfirm(back_, key.Is(Key::kEscape)
                                ? ""
                                : "not allowed: Enter shows the code, any other key cancels");
        scope_ = pb::AllowName::SCOPE_UNSPECIFIED;
        return {};
      }
      if (const std::string closed = ViewClosed(); !closed.empty()) {
        CloseConfirm(Mode::kDetail, absl::StrCat("not pending: ", closed));
        return {};
      }
      // The change was on the screen; now the code, the change still shown.
      code_ = make_code_();
      typed_.clear();
      mode_ = Mode::kConfirmAllow;
      return {};
    }
    case Mode::kDenyReason: {
      if (key.Is(Key::kEscape)) {
        mode_ = back_;
        return {};
      }
      if (key.Is(Key::kEnter)) {
        if (const std::string closed = ViewClosed(); !closed.empty()) {
          CloseConfirm(Mode::kDetail, absl::StrCat("not pending: ", closed));
          return {};
        }
        pb::DecideRequest d;
        const std::string reason = editor_.Text();
        d.mutable_deny()->set_reason(reason.empty() ? kDenyDefault : reason);
        return Decide(std::move(d));
      }
      if (ScrollKey(key, false)) return {};
      editor_.HandleKey(key);
      return {};
    }
    case Mode::kEdit: {
      if (key.Is(Key::kEscape)) {
        mode_ = back_;
        return {};
      }
      if (key.Is(Key::kEnter)) {
        if (parsing_) return {};
        parsing_ = true;
        Action a;
        a.kind = Action::kParseCommand;
        a.parse.set_command(editor_.Text());
        a.parse.set_session_id(view_->session_id());
        return {std::move(a)};
      }
      if (ScrollKey(key, false)) return {};
      if (editor_.HandleKey(key)) notice_.clear();
      return {};
    }
    case Mode::kConfirmAbort: {
      if (key.Is(Key::kChar, 'y') || key.Is(Key::kChar, 'Y')) {
        pb::DecideRequest d;
        d.mutable_abort()->set_reason(kAbortReason);
        return Decide(std::move(d));
      }
      if (key.Is(Key::kChar, 'n') || key.Is(Key::kChar, 'N') || key.Is(Key::kEscape)) {
        mode_ = back_;
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
        output_scroll_ = std::min(output_scroll_ + page_rows_, max_scroll_);
      } else if (key.Is(Key::kUp) || key.Is(Key::kChar, 'k')) {
        output_scroll_ = output_scroll_ > 0 ? output_scroll_ - 1 : 0;
      } else if (key.Is(Key::kPageUp)) {
        output_scroll_ = output_scroll_ > page_rows_ ? output_scroll_ - page_rows_ : 0;
      }
      return {};
  }
  return {};
}

bool Model::ScrollKey(const Key& key, bool letters) {
  detail_scroll_ = std::min(detail_scroll_, max_scroll_);  // the screen may have grown
  if (key.Is(Key::kDown) || (letters && key.Is(Key::kChar, 'j'))) {
    detail_scroll_ = std::min(detail_scroll_ + 1, max_scroll_);
  } else if (key.Is(Key::kUp) || (letters && key.Is(Key::kChar, 'k'))) {
    detail_scroll_ = detail_scroll_ > 0 ? detail_scroll_ - 1 : 0;
  } else if (key.Is(Key::kPageDown) || (letters && key.Is(Key::kChar, ' '))) {
    detail_scroll_ = std::min(detail_scroll_ + page_rows_, max_scroll_);
  } else if (key.Is(Key::kPageUp)) {
    detail_scroll_ = detail_scroll_ > page_rows_ ? detail_scroll_ - page_rows_ : 0;
  } else if (key.Is(Key::kHome)) {
    detail_scroll_ = 0;
  } else if (key.Is(Key::kEnd)) {
    detail_scroll_ = max_scroll_;
  } else {
    return false;
  }
  return true;
}

std::vector<Action> Model::OutputKey() {
  if (last_approved_label_.empty()) {
    notice_ = "no approved request yet";
    return {};
  }
  Action a;
  a.kind = Action::kGetRequest;
  a.get = last_approved_;
  return {std::move(a)};
}

std::vector<Action> Model::ListKey(const Key& key) {
  if (key.Is(Key::kChar, 'q')) return {QuitAction()};
  if (key.Is(Key::kChar, '?')) {
    back_ = Mode::kList;
    mode_ = Mode::kHelp;
    return {};
  }
  const int at = Index(selected_);
  if (key.Is(Key::kUp) || key.Is(Key::kChar, 'k')) {
    if (at > 0) selected_ = KeyOf(queue_[static_cast<size_t>(at - 1)]);
    return {};
  }
  if (key.Is(Key::kDown) || key.Is(Key::kChar, 'j')) {
    if (at >= 0 && static_cast<size_t>(at) + 1 < queue_.size()) {
      selected_ = KeyOf(queue_[static_cast<size_t>(at + 1)]);
    }
    return {};
  }
  const pb::PendingRequest* sel = Selected();
  // o on a network row allows it once (after the code); elsewhere it shows
  // the last output.
  if (IsOutputKey(key) && (sel == nullptr || !sel->has_network())) return OutputKey();
  if (sel == nullptr) return {};
  if (key.Is(Key::kEnter) || key.Is(Key::kRight)) {
    view_ = *sel;
    view_gone_.clear();
    detail_scroll_ = 0;
    mode_ = Mode::kDetail;
    return {};
  }
  if (!IsDecisionKey(key, sel->has_network())) return {};
  detail_scroll_ = 0;
  return Open(key, *sel, Mode::kList);
}

std::vector<Action> Model::DetailKey(const Key& key) {
  if (key.Is(Key::kChar, 'q') || key.Is(Key::kEscape) || key.Is(Key::kLeft)) {
    mode_ = Mode::kList;
    view_.reset();
    view_gone_.clear();
    return {};
  }
  if (key.Is(Key::kChar, '?')) {
    back_ = Mode::kDetail;
    mode_ = Mode::kHelp;
    return {};
  }
  if (IsOutputKey(key) && (!view_.has_value() || !view_->has_network())) return OutputKey();
  if (ScrollKey(key, true)) return {};
  if (!view_.has_value() || !IsDecisionKey(key, view_->has_network())) return {};
  return Open(key, *view_, Mode::kDetail);
}

std::vector<Action> Model::Open(const Key& key, const pb::PendingRequest& r, Mode back) {
  if (r.has_network() && (key.ch == 'a' || key.ch == 'A' || key.ch == 'e' || key.ch == 'E')) {
    notice_ = absl::StrCat(LabelOf(r),
                           " asks for a name: o allow once, s for this session, p for this "
                           "profile, d deny");
    return {};
  }
  const pb::PendingRequest request = r;  // `r` may be view_ itself
  view_ = request;
  if (back == Mode::kList) view_gone_.clear();
  if (const std::string closed = ViewClosed(); !closed.empty()) {
    notice_ = absl::StrCat(LabelOf(request), " is no longer pending (", closed,
                           "): there is nothing to decide");
    if (back == Mode::kList) view_.reset();
    return {};
  }
  back_ = back;
  notice_.clear();
  if (request.has_network()) {
    switch (key.ch) {
      case 'o':
      case 'O':
      case 's':
      case 'S':
        scope_ = key.ch == 'o' || key.ch == 'O' ? pb::AllowName::SCOPE_ONCE
                                                : pb::AllowName::SCOPE_SESSION;
        code_ = make_code_();
        typed_.clear();
        mode_ = Mode::kConfirmAllow;
        return {};
      case 'p':
      case 'P':
        if (request.network().profile_diff().empty()) {
          notice_ = absl::StrCat(LabelOf(request),
                                 ": \"for this profile\" is not offered (the broker could not "
                                 "prepare the change to the configuration file); o or s allows it");
          mode_ = back;
          if (back == Mode::kList) view_.reset();
          return {};
        }
        scope_ = pb::AllowName::SCOPE_PROFILE;
        detail_scroll_ = 0;
        mode_ = Mode::kProfileDiff;
        return {};
      default:
        break;  // d and Q as for a command
    }
  }
  switch (key.ch) {
    case 'a':
    case 'A':
      code_ = make_code_();
      typed_.clear();
      mode_ = Mode::kConfirmApprove;
      return {};
    case 'd':
    case 'D':
      editor_ = LineEditor();
      mode_ = Mode::kDenyReason;
      return {};
    case 'e':
    case 'E':
      editor_ = LineEditor(CommandOf(request));
      parsed_.reset();
      parsing_ = false;
      mode_ = Mode::kEdit;
      return {};
    default:
      mode_ = Mode::kConfirmAbort;
      return {};
  }
}

std::vector<Action> Model::ConfirmKey(const Key& key) {
  const bool edit = mode_ == Mode::kEditConfirm;
  const bool allow = mode_ == Mode::kConfirmAllow;
  const Mode cancel_to = edit ? Mode::kEdit : back_;
  const char* verb = edit ? "not run" : allow ? "not allowed" : "not approved";
  if (ScrollKey(key, false)) return {};
  if (key.code == Key::kChar && key.ch >= '0' && key.ch <= '9') {
    typed_.push_back(static_cast<char>(key.ch));
    if (typed_.size() > code_.size() || code_.compare(0, typed_.size(), typed_) != 0) {
      CloseConfirm(cancel_to, absl::StrCat("wrong code: ", verb));
    }
    return {};
  }
  if (key.Is(Key::kBackspace)) {
    if (!typed_.empty()) typed_.pop_back();
    return {};
  }
  if (key.Is(Key::kEscape)) {
    CloseConfirm(cancel_to, "");
    return {};
  }
  if (!key.Is(Key::kEnter)) {
    CloseConfirm(cancel_to, absl::StrCat(verb, ": only the code, then Enter, confirms"));
    return {};
  }
  if (typed_ != code_) {
    CloseConfirm(cancel_to, absl::StrCat(verb, ": type the whole code before Enter"));
    return {};
  }
  if (const std::string closed = ViewClosed(); !closed.empty()) {
    CloseConfirm(Mode::kDetail, absl::StrCat("not pending: ", closed));
    return {};
  }
  if (allow) return Allow();
  pb::DecideRequest d;
  if (edit) {
    d.mutable_edit()->set_command(editor_.Text());
  } else {
    d.mutable_approve();
  }
  return Decide(std::move(d));
}

std::vector<Action> Model::Allow() {
  pb::DecideRequest d;
  pb::AllowName* allow = d.mutable_allow_name();
  allow->set_scope(scope_);
  // The file as it was when the change was shown: changed since, the
  // broker writes nothing and allows for the session only.
  if (scope_ == pb::AllowName::SCOPE_PROFILE) {
    allow->set_before_sha256(view_->network().profile_sha256());
  }
  return Decide(std::move(d));
}

void Model::OnDecided(const pb::DecideRequest& request,
                      const absl::StatusOr<pb::DecideResponse>& response) {
  const std::string key =
      request.id().empty() ? absl::StrCat("agent:", request.request_id()) : request.id();
  const std::string label = request.id().empty() ? "(no id)" : request.id();
  if (!response.ok()) {
    decided_here_.erase(key);
    notice_ = absl::StrCat(label, ": ", response.status().message());
    return;
  }
  std::string name;
  if (const int i = Index(key); i >= 0) name = queue_[static_cast<size_t>(i)].network().name();
  Remove(key, "decided here");
  switch (request.decision_case()) {
    case pb::DecideRequest::kApprove:
    case pb::DecideRequest::kEdit:
      last_approved_.Clear();
      if (request.id().empty()) {
        last_approved_.set_request_id(request.request_id());
      } else {
        last_approved_.set_id(request.id());
      }
      last_approved_label_ = label;
      notice_ = absl::StrCat(request.has_edit() ? "edited " : "approved ", label, ": ran ",
                             response->binary(), " (o shows the output)");
      break;
    case pb::DecideRequest::kDeny:
      notice_ = absl::StrCat("denied ", label);
      break;
    case pb::DecideRequest::kAbort:
      notice_ = absl::StrCat("aborted ", label, " and its session");
      break;
    case pb::DecideRequest::kAllowName:
      notice_ = absl::StrCat("allowed ", label, name.empty() ? "" : absl::StrCat(" ", name), " ",
                             ScopeWords(request.allow_name().scope()));
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
  code_ = make_code_();
  typed_.clear();
  detail_scroll_ = 0;
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
    out.push_back(Truncate(Plain("No pending requests; waiting for the sandbox to ask."), width));
    return out;
  }
  const int at = Index(selected_);
  const size_t selected = at < 0 ? 0 : static_cast<size_t>(at);
  size_t first = 0;
  if (height > 0 && selected >= height) first = selected - height + 1;
  for (size_t i = first; i < queue_.size() && out.size() < height; ++i) {
    const pb::PendingRequest& r = queue_[i];
    const std::string left = TimeLeft(r.deadline_unix(), now_);
    Line row = Plain(absl::StrCat(at >= 0 && i == selected ? "> " : "  ", LabelOf(r), "  "));
    if (Flagged(r)) {
      row.push_back(Run{"!", true});
      Append(row, Plain(" "));
    }
    if (r.has_network()) {
      const size_t n = static_cast<size_t>(r.network().addresses_size());
      Append(row, Plain("net  "));
      Append(row, NameOf(r));
      Append(row, Plain("  ("));
      Append(row, Display(absl::StrJoin(r.network().query_types(), ",")));
      Append(row, Plain(absl::StrCat(") -> ", n, n == 1 ? " address" : " addresses")));
    } else {
      Append(row, Display(r.profile()));
      Append(row, Plain("  "));
      Append(row, DisplayVisible(CommandOf(r)));
    }
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

void Model::DetailHead(std::vector<Line>& out, const pb::PendingRequest& r, size_t width) const {
  const int index = Index(KeyOf(r));
  const std::string closed = ViewClosed();
  Field(out, "request",
        Plain(index >= 0 && closed.empty()
                  ? absl::StrCat(LabelOf(r), "  (", index + 1, " of ", queue_.size(), ")")
                  : absl::StrCat(LabelOf(r), "  (no longer pending)")),
        width);
  if (!closed.empty()) {
    Warning(out,
            Plain(absl::StrCat("no longer pending: ", closed,
                               ". Nothing can be decided here; Esc goes back to the list.")),
            width);
  }
}

std::vector<Line> Model::DetailBody(const pb::PendingRequest& r, size_t width) const {
  if (r.has_network()) return NetworkBody(r, width);
  std::vector<Line> out;
  DetailHead(out, r, width);
  if (r.findings_size() > 0) {
    Warning(out, Plain("the broker found planted code where this would run:"), width);
    for (const std::string& finding : r.findings()) {
      Hanging(out, Plain("  - "), Display(finding), width);
    }
  }
  for (const std::string& oddity : OdditiesOf(r)) Warning(out, Plain(oddity), width);
  if (r.had_invisible()) {
    Warning(out, Plain("hidden or control characters: shown escaped and marked"), width);
  }
  Field(out, "agent id", Display(r.request_id()), width);
  Field(out, "profile", Display(r.profile()), width);
  Field(out, "session", Display(r.session_id()), width);
  Field(out, "workspace", DisplayVisible(r.workspace()), width);
  Field(out, "why", Display(r.justification()), width);
  Field(out, "command", r.command().empty() ? Plain("(sent as argv)") : DisplayVisible(r.command()),
        width);
  for (int i = 0; i < r.argv_size(); ++i) {
    Line value = Plain(absl::StrCat("[", i, "] "));
    Append(value, DisplayVisible(r.argv(i)));
    Field(out, i == 0 ? "argv" : "", value, width);
  }
  Field(out, "binary", DisplayVisible(r.binary()), width);
  Field(out, "cwd", DisplayVisible(r.cwd()), width);
  Field(out, "not auto", Display(r.reason_not_auto()), width);
  Field(out, "time left", Plain(TimeLeft(r.deadline_unix(), now_)), width);
  return out;
}

std::vector<Line> Model::NetworkBody(const pb::PendingRequest& r, size_t width) const {
  std::vector<Line> out;
  const pb::NetworkRequest& n = r.network();
  DetailHead(out, r, width);
  for (const std::string& oddity : OdditiesOf(r)) Warning(out, Plain(oddity), width);
  if (r.had_invisible()) {
    Warning(out, Plain("hidden or control characters: shown escaped and marked"), width);
  }
  Field(out, "network", Plain("the sandbox asks for a name no list allows"), width);
  Field(out, "name", NameOf(r), width);
  Field(out, "asked", Display(absl::StrJoin(n.query_types(), ", ")), width);
  Field(out, "profile", Display(r.profile()), width);
  Field(out, "session", Display(r.session_id()), width);
  Field(out, "workspace", DisplayVisible(r.workspace()), width);
  if (n.addresses_size() == 0) Field(out, "addresses", Plain("(none answered)"), width);
  for (int i = 0; i < n.addresses_size(); ++i) {
    const pb::NetworkRequest::Address& a = n.addresses(i);
    Line value = Display(a.address());
    if (a.allowed()) {
      Append(value, Plain("  would be allowed"));
    } else {
      Append(value, Plain("  stays refused: "));
      Append(value, Display(a.rule_text().empty() ? "no rule allows it" : a.rule_text()));
    }
    Field(out, i == 0 ? "addresses" : "", value, width);
  }
  if (n.profile_diff().empty()) {
    Field(out, "profile", Plain("p not offered: no change to the configuration file prepared"),
          width);
  } else {
    Field(out, "p writes", DisplayVisible(n.profile_file()), width);
    bool first = true;
    for (absl::string_view line : absl::StrSplit(n.profile_diff(), '\n', absl::SkipEmpty())) {
      Field(out, first ? "change" : "", Display(line), width);
      first = false;
    }
  }
  Field(out, "time left", Plain(TimeLeft(r.deadline_unix(), now_)), width);
  return out;
}

std::vector<Line> Model::ProfileBody(const pb::PendingRequest& r, size_t width) const {
  std::vector<Line> out;
  const pb::NetworkRequest& n = r.network();
  Field(out, "request", Plain(LabelOf(r)), width);
  if (const std::string closed = ViewClosed(); !closed.empty()) {
    Warning(out, Plain(absl::StrCat("no longer pending: ", closed)), width);
  }
  Field(out, "name", NameOf(r), width);
  Field(out, "profile", Display(r.profile()), width);
  Field(out, "file", DisplayVisible(n.profile_file()), width);
  out.push_back(Plain("The change, exactly (nothing else in the file changes):"));
  for (absl::string_view line : absl::StrSplit(n.profile_diff(), '\n', absl::SkipEmpty())) {
    Hanging(out, Plain("  "), Display(line), width);
  }
  out.push_back(
      Truncate(Plain("If the file changes before you confirm, nothing is written"), width));
  out.push_back(Truncate(Plain("and the name is allowed for this session only."), width));
  return out;
}

std::vector<Line> Model::EditBody(size_t width) const {
  std::vector<Line> out;
  if (!parsed_.has_value()) return out;
  Field(out, "request", Plain(view_.has_value() ? LabelOf(*view_) : ""), width);
  for (int i = 0; i < parsed_->argv_size(); ++i) {
    for (const std::string& oddity : Oddities(absl::StrCat("new argv[", i, "]"), parsed_->argv(i))) {
      Warning(out, Plain(oddity), width);
    }
  }
  Field(out, "edited", DisplayVisible(editor_.Text()), width);
  for (int i = 0; i < parsed_->argv_size(); ++i) {
    Line value = Plain(absl::StrCat("[", i, "] "));
    Append(value, DisplayVisible(parsed_->argv(i)));
    Field(out, i == 0 ? "new argv" : "", value, width);
  }
  Field(out, "binary", DisplayVisible(parsed_->binary()), width);
  if (view_.has_value()) Field(out, "cwd", DisplayVisible(view_->cwd()), width);
  return out;
}

std::vector<Line> Model::OutputBody(size_t width) const {
  std::vector<Line> out;
  const pb::RequestState& s = *output_;
  const pb::AuditRecord& rec = s.record();
  Field(out, "request", Plain(s.request().id().empty() ? last_approved_label_ : s.request().id()),
        width);
  std::string phase = "pending";
  if (s.phase() == pb::RequestState::PHASE_RUNNING) phase = "running";
  if (s.phase() == pb::RequestState::PHASE_DONE) {
    phase = rec.ran() ? absl::StrCat("done, exit ", rec.exit_code(),
                                     rec.timed_out() ? " (timed out)" : "")
                      : "done, did not run";
  }
  Field(out, "phase", Plain(phase), width);
  Line ran;
  for (const std::string& a : rec.ran_argv()) {
    if (!ran.empty()) Append(ran, Plain(" "));
    Append(ran, DisplayVisible(a));
  }
  if (!ran.empty()) Field(out, "ran", ran, width);
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
  switch (mode_) {
    case Mode::kList:
      return out;  // ListBody needs the height
    case Mode::kDetail:
    case Mode::kConfirmApprove:
    case Mode::kDenyReason:
    case Mode::kEdit:
    case Mode::kConfirmAbort:
      if (view_.has_value()) return DetailBody(*view_, width);
      return out;
    case Mode::kProfileDiff:
    case Mode::kConfirmAllow:
      if (!view_.has_value()) return out;
      if (scope_ == pb::AllowName::SCOPE_PROFILE) return ProfileBody(*view_, width);
      return DetailBody(*view_, width);
    case Mode::kEditConfirm:
      return EditBody(width);
    case Mode::kHelp:
      for (const char* l : {
               "Up/Down, k/j   select a request",
               "Enter          its details (Up/Down, PgUp/PgDn scroll; Esc back)",
               "a              approve: shows a code; type it and Enter to run",
               "d              deny (type a reason, Enter sends, Esc cancels)",
               "e              edit the command; Enter checks it, the code runs it",
               "Q              abort: deny and stop the sandbox (y confirms)",
               "o              output of the last approved request",
               "o, s, p        a name asked for: allow once, this session, this profile",
               style_ == Style::kInline
                   ? "q, Ctrl-C      back to the sandbox (requests stay pending)"
                   : "q, Ctrl-C      quit (requests stay pending)",
               "",
               "When a request comes into view keys are ignored for a moment:",
               "what you were typing never decides it.",
               "Marked text stands for something else: \\xHH and \\u{HHHH} for",
               "hidden characters, [N spaces] for spaces that could be missed.",
               "",
               "Editing: Left/Right Home/End Ctrl-A/E Alt-b/f Ctrl-Left/Right",
               "         Backspace Delete Ctrl-W Ctrl-U Ctrl-K, undo Ctrl-_ or Ctrl-Z",
               "",
               "Press any key.",
           }) {
        out.push_back(Truncate(Plain(l), width));
      }
      return out;
    case Mode::kOutput:
      if (output_.has_value()) return OutputBody(width);
      return out;
  }
  return out;
}

std::vector<Line> Model::Prompt(size_t width) const {
  std::vector<Line> out;
  if (!IsPrompt(mode_) || !view_.has_value()) return out;
  const std::string label = LabelOf(*view_);
  auto add = [&](const Line& line) {
    for (Line& row : Wrap(line, width, SIZE_MAX)) out.push_back(std::move(row));
  };
  out.emplace_back();
  switch (mode_) {
    case Mode::kDenyReason:
      add(Plain(absl::StrCat("Deny ", label, ": reason (optional), Enter sends, Esc cancels")));
      break;
    case Mode::kEdit:
      add(Plain(absl::StrCat("Edit ", label, ": Enter checks the command, Esc cancels")));
      break;
    case Mode::kConfirmAbort:
      add(Plain(absl::StrCat("Abort: deny ", label, " and stop its sandbox? (y/n)")));
      break;
    case Mode::kConfirmApprove:
    case Mode::kEditConfirm: {
      add(Plain(mode_ == Mode::kConfirmApprove
                    ? absl::StrCat("Approve ", label, ": it runs on the host as shown above.")
                    : absl::StrCat("Run the edited command for ", label, " as shown above?")));
      Line code = Plain("Type ");
      code.push_back(Run{code_, true});
      Append(code, Plain(absl::StrCat(" then Enter to ",
                                      mode_ == Mode::kConfirmApprove ? "approve" : "run it",
                                      "; any other key cancels.")));
      add(code);
      std::string typed = typed_;
      typed.resize(code_.size(), '_');
      add(Plain(absl::StrCat("code: ", typed)));
      break;
    }
    case Mode::kProfileDiff:
      add(Plain(absl::StrCat("Allow for this profile (", label,
                             "): the change above is written to the file.")));
      add(Plain("Enter shows the code; Esc or any other key cancels."));
      break;
    case Mode::kConfirmAllow: {
      Line what = Plain("Allow ");
      Append(what, NameOf(*view_));
      Append(what, Plain(absl::StrCat(" ", ScopeWords(scope_), " (", label, ").")));
      add(what);
      Line code = Plain("Type ");
      code.push_back(Run{code_, true});
      Append(code, Plain(" then Enter to allow; any other key cancels."));
      add(code);
      std::string typed = typed_;
      typed.resize(code_.size(), '_');
      add(Plain(absl::StrCat("code: ", typed)));
      break;
    }
    default:
      break;
  }
  return out;
}

std::string Model::Footer() const {
  if (const int64_t left = GuardLeftMs(); left > 0) {
    return absl::StrFormat("keys ignored for %.1f s: a request came into view", left / 1000.0);
  }
  switch (mode_) {
    case Mode::kList:
      if (style_ == Style::kInline) {
        if (queue_.empty()) return "q back to the sandbox  ? help";
        if (Selected() != nullptr && Selected()->has_network()) {
          return "Enter details  o once  s session  p profile  d deny  ? help  q back";
        }
        return "Enter details  a approve  d deny  e edit  Q abort  ? help  q back";
      }
      if (queue_.empty()) return "q quit  ? help";
      if (Selected() != nullptr && Selected()->has_network()) {
        return "Enter details  o once  s session  p profile  d deny  Q abort  ? help  q quit";
      }
      return "Enter details  a approve  d deny  e edit  Q abort  o output  ? help  q quit";
    case Mode::kDetail:
      if (!ViewClosed().empty()) return "Esc list  j/k scroll  (no longer pending)";
      if (view_.has_value() && view_->has_network()) {
        return "o once  s session  p profile  d deny  Q abort  j/k scroll  Esc list  ? help";
      }
      return "a approve  d deny  e edit  Q abort  j/k scroll  Esc list  ? help";
    case Mode::kProfileDiff:
      return "Enter shows the code  Esc cancels  PgDn scroll";
    case Mode::kConfirmAllow:
      return "type the code, Enter allows  Esc cancels  PgDn scroll";
    case Mode::kConfirmApprove:
      return "type the code, Enter approves  Esc cancels  PgDn scroll";
    case Mode::kEditConfirm:
      return "type the code, Enter runs it  Esc edits again  PgDn scroll";
    case Mode::kDenyReason:
      return "Enter send  Esc cancel";
    case Mode::kEdit:
      return "Enter check  Esc cancel  Ctrl-_ undo";
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
  EditorRows editor;
  if (editing) {
    editor = LayOutEditor(editor_, width, std::max<size_t>(1, std::min<size_t>(4, body_rows / 3)));
  }
  std::vector<Line>& editor_rows = editor.rows;
  std::vector<Line> prompt = Prompt(width);
  const size_t tail = editor_rows.size() + prompt.size();
  const size_t room = body_rows > tail ? body_rows - tail : 0;
  if (mode_ != Mode::kList && mode_ != Mode::kHelp) {
    // Scrolled; whatever does not fit is announced in the last row, with
    // the keys that show it.
    const size_t scroll = mode_ == Mode::kOutput ? output_scroll_ : detail_scroll_;
    max_scroll_ = body.size() > room ? body.size() - room : 0;
    page_rows_ = std::max<size_t>(1, room > 1 ? room - 1 : 1);
    const size_t skip = std::min(scroll, max_scroll_);
    body.erase(body.begin(), body.begin() + static_cast<ptrdiff_t>(skip));
    if (body.size() > room && room >= 2) {
      const size_t hidden = body.size() - room + 1;
      body.resize(room - 1);
      const bool letters = mode_ == Mode::kDetail || mode_ == Mode::kOutput;
      Line more{Run{absl::StrCat("more below: ", letters ? "j/Down/PgDn" : "Down/PgDn", " (",
                                 hidden, hidden == 1 ? " row)" : " rows)"),
                    true}};
      body.push_back(Truncate(more, width));
    }
  }
  if (body.size() > room) body.resize(room);
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
    Line footer = Plain(Footer());
    if (GuardLeftMs() > 0) footer = Line{Run{Footer(), true}};
    screen.push_back(Truncate(footer, width));
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

std::vector<Line> RenderAdded(const pb::PendingEvent& added, size_t width, size_t height) {
  Model model;
  model.SetNow(static_cast<int64_t>(std::time(nullptr)));
  model.OnEvent(added);
  return model.Render(width, height);
}

}  // namespace lazaret::cli::approve
