#include "clients/lazaret/approve/inline_approver.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/approve/screen.h"
#include "services/common/status_util.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

constexpr char kApproverName[] = "lazaret run (inline)";
// While the prompt shows, it looks at the terminal's size this often (the
// pty proxy owns SIGWINCH).
constexpr int kPromptTickMs = 250;
// A lost watch is opened again after this long.
constexpr auto kRewatchDelay = std::chrono::seconds(1);

void Drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

}  // namespace

InlineApprover::InlineApprover(InlineOptions options)
    : options_(std::move(options)), client_(options_.broker_socket) {}

absl::StatusOr<std::unique_ptr<InlineApprover>> InlineApprover::Start(InlineOptions options) {
  if (options.tty_fd < 0 || !options.pause || !options.resume) {
    return absl::InvalidArgumentError("the inline approver needs the terminal and the proxy");
  }
  UseUtf8Locale();
  std::unique_ptr<InlineApprover> a(new InlineApprover(std::move(options)));
  if (pipe2(a->wake_, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoStatus("pipe2", errno);
  a->inbox_ = std::make_unique<Inbox>(a->wake_[1]);
  a->approver_.set_kind(pb::Approver::KIND_INLINE);
  a->approver_.set_name(kApproverName);
  if (const char* name = ttyname(a->options_.tty_fd); name != nullptr) a->approver_.set_tty(name);
  a->approver_.set_pid(static_cast<int32_t>(getpid()));
  a->watch_ = std::thread(&InlineApprover::Watch, a.get());
  a->ui_ = std::thread(&InlineApprover::Ui, a.get());
  return a;
}

InlineApprover::~InlineApprover() {
  Stop();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

void InlineApprover::Stop() {
  if (stopping_.exchange(true)) {
    if (watch_.joinable()) watch_.join();
    if (ui_.joinable()) ui_.join();
    return;
  }
  client_.Cancel();
  if (wake_[1] >= 0) (void)!write(wake_[1], "s", 1);
  if (watch_.joinable()) watch_.join();
  if (ui_.joinable()) ui_.join();
}

void InlineApprover::Watch() {
  pb::WatchPendingRequest request;
  request.set_session_id(options_.session_id);
  *request.mutable_approver() = approver_;
  while (!Stopping()) {
    absl::Status s = client_.Watch(request, [&](const pb::PendingEvent& e) { inbox_->Push(e); });
    if (Stopping()) break;
    inbox_->End(s);
    // The broker went away (restarted, or down): watch again, quietly.
    const auto until = std::chrono::steady_clock::now() + kRewatchDelay;
    while (!Stopping() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

bool InlineApprover::TakeEvents(Model& model) {
  Drain(wake_[0]);
  model.SetClockMs(MonotonicMs());
  std::optional<absl::Status> ended;
  bool fresh = false;
  for (const pb::PendingEvent& e : inbox_->Take(&ended)) {
    model.OnEvent(e);
    const std::string& id = e.request().id().empty() ? e.request().request_id() : e.request().id();
    if (e.kind() == pb::PendingEvent::KIND_ADDED && seen_.insert(id).second) fresh = true;
    if (e.kind() == pb::PendingEvent::KIND_RESOLVED) seen_.erase(id);
  }
  if (ended.has_value()) model.OnWatchEnded(*ended);
  return fresh;
}

bool InlineApprover::RemoteApproverAttached() {
  absl::StatusOr<pb::ListSessionsResponse> list = client_.ListSessions();
  if (!list.ok()) return false;  // then this prompt is the only way to decide
  for (const pb::SessionEndpoint& s : list->sessions()) {
    if (s.session_id() == options_.session_id) {
      return s.approvers_terminal() + s.approvers_script() > 0;
    }
  }
  return false;
}

void InlineApprover::Ui() {
  Model model(Model::Style::kInline);
  while (!Stopping()) {
    pollfd p{wake_[0], POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return;
    if (Stopping()) return;
    if (TakeEvents(model) && model.pending() > 0 && !RemoteApproverAttached()) Prompt(model);
  }
}

void InlineApprover::Prompt(Model& model) {
  const int fd = dup(options_.tty_fd);
  if (fd < 0) return;
  FILE* tty = fdopen(fd, "r+");
  if (tty == nullptr) {
    close(fd);
    return;
  }
  options_.pause();
  model.ClearNotice();  // the last prompt's news is old now
  {
    Screen screen(tty, options_.color);
    // The developer was typing to the agent: what is typed but not read yet
    // is thrown away, and the guard ignores keys until the typing stops.
    model.SetClockMs(MonotonicMs());
    model.OnPromptOpen();
    while (screen.ok() && !Stopping()) {
      model.SetNow(static_cast<int64_t>(std::time(nullptr)));
      model.SetClockMs(MonotonicMs());
      if (model.TakeDiscard()) screen.DiscardInput();
      screen.Draw(model);
      pollfd fds[2] = {{options_.tty_fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (poll(fds, 2, RedrawWithinMs(model, kPromptTickMs)) < 0 && errno != EINTR) break;
      if (Stopping()) break;
      model.SetClockMs(MonotonicMs());
      if ((fds[1].revents & POLLIN) != 0) TakeEvents(model);
      if ((fds[0].revents & (POLLHUP | POLLERR)) != 0) break;
      if ((fds[0].revents & POLLIN) != 0 && screen.HandleKeys(model, client_, approver_)) break;
      // Nothing left to decide: back to the sandbox (unless the developer
      // is reading the help or an output).
      if (model.pending() == 0 && (model.mode() == Mode::kList || model.mode() == Mode::kDetail)) {
        break;
      }
    }
  }
  std::fclose(tty);
  options_.resume();
}

}  // namespace lazaret::cli::approve
