#include "services/egressd/sessions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/fs/file.h"
#include "services/common/log.h"
#include "services/common/unix_server.h"
#include "services/egressd/connection.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::egressd {
namespace {

namespace epb = ::lazaret::egress::v1;
namespace cpb = ::lazaret::config::v1;

// Request logs kept in the log directory: the most recent sessions'.
constexpr size_t kKeptLogs = 100;

absl::StatusOr<SecretSpec> ToSpec(const epb::SecretValue& v) {
  SecretSpec s;
  s.name = v.spec().name();
  s.placeholder = v.placeholder();
  s.value = v.value();
  s.hosts.assign(v.spec().hosts().begin(), v.spec().hosts().end());
  switch (v.spec().inject()) {
    case cpb::SECRET_INJECTION_HEADER:
      s.inject = SecretSpec::Inject::kHeader;
      s.header = v.spec().header();
      break;
    case cpb::SECRET_INJECTION_BEARER:
      s.inject = SecretSpec::Inject::kBearer;
      break;
    case cpb::SECRET_INJECTION_BASIC:
      s.inject = SecretSpec::Inject::kBasic;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("secret ", s.name, " says no inject"));
  }
  if (s.name.empty() || s.placeholder.size() < 20 || s.value.empty() || s.hosts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret ", s.name, ": a name, a placeholder, a value and hosts are needed"));
  }
  if (s.value.find(s.placeholder) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret ", s.name, ": the value holds its placeholder"));
  }
  return s;
}

class NetPolicyUpstreamDialer final : public UpstreamDialer {
 public:
  NetPolicyUpstreamDialer(const std::string& socket, std::string session_id,
                          egress::EgressChannel* channel)
      : stub_(netpolicy::v1::NetPolicyService::NewStub(DialUnix(socket))),
        session_id_(std::move(session_id)),
        channel_(channel) {}

  absl::StatusOr<fs::UniqueFd> Dial(const std::string& host, uint16_t port) override {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    netpolicy::v1::ResolveUpstreamRequest req;
    req.mutable_session()->set_id(session_id_);
    req.set_name(host);
    netpolicy::v1::ResolveUpstreamResponse resp;
    grpc::Status st = stub_->ResolveUpstream(&cc, req, &resp);
    if (!st.ok()) {
      return absl::UnavailableError(
          absl::StrCat(host, " was not resolved for the proxy: ", st.error_message()));
    }
    if (!resp.refused().empty() || resp.addresses().empty()) {
      return absl::PermissionDeniedError(
          absl::StrCat(host, ": ", resp.refused().empty() ? "no address" : resp.refused()));
    }
    std::vector<std::string> errors;
    for (const std::string& address : resp.addresses()) {
      absl::StatusOr<egress::EgressChannel::Upstream> up = channel_->Connect(address, port);
      if (!up.ok()) return up.status();
      if (up->error == 0) return std::move(up->fd);
      errors.push_back(absl::StrCat(address, ": ", std::strerror(up->error)));
      if (errors.size() >= 4) break;
    }
    return absl::UnavailableError(
        absl::StrCat(host, ":", port, " could not be reached (", absl::StrJoin(errors, "; "), ")"));
  }

 private:
  std::unique_ptr<netpolicy::v1::NetPolicyService::Stub> stub_;
  const std::string session_id_;
  egress::EgressChannel* const channel_;
};

}  // namespace

// --- RequestLog ---

void RequestLog::WriteTo(fs::UniqueFd file) {
  std::lock_guard<std::mutex> lock(mu_);
  file_ = std::move(file);
  file_bytes_ = 0;
}

void RequestLog::Add(epb::RequestRecord record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!record.refused().empty()) ++refused_;
  if (file_.valid() && file_bytes_ < kMaxFileBytes) {
    google::protobuf::util::JsonPrintOptions o;
    o.preserve_proto_field_names = true;
    std::string line;
    if (google::protobuf::util::MessageToJsonString(record, &line, o).ok()) {
      line.push_back('\n');
      file_bytes_ += line.size();
      if (file_bytes_ >= kMaxFileBytes) {
        line = "{\"refused\":\"the request log file is full; later records were not kept\"}\n";
      }
      fs::WriteAll(file_.get(), line).IgnoreError();
    }
  }
  records_.push_back(std::move(record));
  while (records_.size() > capacity_) {
    records_.pop_front();
    ++first_;
  }
  cv_.notify_all();
}

std::vector<epb::RequestRecord> RequestLog::Read(uint64_t* next, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto have = [&] { return first_ + records_.size() > *next || closed_; };
  if (!have() && wait.count() > 0) cv_.wait_for(lock, wait, have);
  std::vector<epb::RequestRecord> out;
  if (*next < first_) *next = first_;
  for (uint64_t n = *next; n < first_ + records_.size(); ++n) out.push_back(records_[n - first_]);
  *next = first_ + records_.size();
  return out;
}

void RequestLog::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool RequestLog::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

uint64_t RequestLog::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_ + records_.size();
}

uint64_t RequestLog::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

absl::StatusOr<std::vector<epb::RequestRecord>> ReadRequestLogFile(const std::string& dir,
                                                                   const std::string& session_id) {
  const std::string path = absl::StrCat(dir, "/", session_id, ".jsonl");
  absl::StatusOr<std::string> text = fs::ReadRegularFile(path, RequestLog::kMaxFileBytes + 4096);
  if (!text.ok()) {
    return absl::NotFoundError(
        absl::StrCat("session ", session_id, " has no egress proxy and no request log in ", dir));
  }
  std::vector<epb::RequestRecord> out;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    epb::RequestRecord r;
    if (google::protobuf::util::JsonStringToMessage(std::string(line), &r, opts).ok()) {
      out.push_back(r);
    }
  }
  return out;
}

void PruneRequestLogs(const std::string& dir, size_t keep) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::pair<int64_t, std::string>> files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!absl::EndsWith(name, ".jsonl")) continue;
    struct stat st {};
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    files.emplace_back(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                       name);
  }
  if (files.size() > keep) {
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i + keep < files.size(); ++i) {
      unlinkat(dirfd(d), files[i].second.c_str(), 0);
    }
  }
  closedir(d);
}

epb::RequestRecord ToProto(const RequestRecord& r) {
  epb::RequestRecord p;
  p.set_time_unix_ms(r.start_unix_ms);
  p.set_protocol(r.protocol);
  p.set_host(r.host);
  p.set_method(r.method);
  p.set_path(r.path);
  p.set_status(r.status);
  p.set_request_bytes(r.request_bytes);
  p.set_response_bytes(r.response_bytes);
  p.set_duration_ms(r.duration_ms);
  for (const std::string& s : r.secrets) p.add_secrets(s);
  p.set_rule(r.rule);
  p.set_refused(r.refused);
  return p;
}

std::unique_ptr<UpstreamDialer> NetPolicyDialer(const std::string& netpolicyd_socket,
                                                const std::string& session_id,
                                                egress::EgressChannel* channel) {
  return std::make_unique<NetPolicyUpstreamDialer>(netpolicyd_socket, session_id, channel);
}

// --- ProxySession ---

ProxySession::ProxySession(std::string id, Limits limits)
    : id_(std::move(id)), limits_(limits), log_(limits.log_records) {}

ProxySession::~ProxySession() { Stop(); }

absl::StatusOr<std::shared_ptr<ProxySession>> ProxySession::Start(
    const epb::AttachSessionRequest& request, const DialerFactory& dialers, Limits limits,
    const UpstreamTrust& trust) {
  std::shared_ptr<ProxySession> s(new ProxySession(request.session_id(), limits));
  std::vector<SecretSpec> secrets;
  std::set<std::string> hosts;
  for (const epb::SecretValue& v : request.secrets()) {
    absl::StatusOr<SecretSpec> spec = ToSpec(v);
    if (!spec.ok()) return spec.status();
    for (const std::string& h : spec->hosts) hosts.insert(h);
    s->secret_names_.push_back(spec->name);
    secrets.push_back(*std::move(spec));
  }
  std::vector<vocab::HttpRule> rules;
  for (const cpb::HttpRule& r : request.http_rules()) {
    vocab::HttpRule rule;
    rule.host = r.host();
    for (const cpb::HttpAllow& a : r.allow()) rule.allow.push_back({a.method(), a.path_prefix()});
    hosts.insert(r.host());
    rules.push_back(std::move(rule));
  }
  if (hosts.empty()) {
    return absl::InvalidArgumentError("a session with neither secrets nor HTTP rules has no proxy");
  }
  s->hosts_.assign(hosts.begin(), hosts.end());
  s->guard_ = std::make_unique<RequestGuard>(std::move(secrets), std::move(rules));
  absl::StatusOr<std::unique_ptr<SessionCa>> ca = SessionCa::Create(s->id_, s->hosts_);
  if (!ca.ok()) return ca.status();
  s->ca_ = *std::move(ca);
  s->trust_ = trust;

  std::weak_ptr<ProxySession> weak = s;
  egress::EgressChannel::Options options;
  options.on_accepted = [weak](uint64_t id, uint16_t port, fs::UniqueFd fd) {
    if (auto self = weak.lock()) self->OnAccepted(id, port, std::move(fd));
  };
  options.on_closed = [weak](const absl::Status& why) {
    auto self = weak.lock();
    if (self == nullptr) return;
    std::lock_guard<std::mutex> lock(self->mu_);
    if (!self->stopping_) {
      LAZ_LOG_WARNING << "session " << self->id_ << ": the router's egress channel ended ("
                      << why.message() << "); its intercepted hosts are unreachable";
    }
    self->router_connected_ = false;
  };
  absl::StatusOr<std::unique_ptr<egress::EgressChannel>> channel =
      egress::EgressChannel::Connect(request.egress_socket(), std::move(options));
  if (!channel.ok()) {
    return absl::Status(channel.status().code(),
                        absl::StrCat("the router's egress socket ", request.egress_socket(),
                                     " could not be connected: ", channel.status().message()));
  }
  s->channel_ = *std::move(channel);
  s->dialer_ = dialers(s->id_, s->channel_.get());
  {
    std::lock_guard<std::mutex> lock(s->mu_);
    s->router_connected_ = !s->channel_->closed();
  }
  return s;
}

void ProxySession::OnAccepted(uint64_t, uint16_t port, fs::UniqueFd fd) {
  int token = 0;
  fs::UniqueFd served;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || live_.size() >= limits_.max_connections || dialer_ == nullptr) {
      // Reset at once: the sandbox sees a refused connection, never a hang.
      struct linger l = {1, 0};
      setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      return;
    }
    served.reset(dup(fd.get()));
    if (!served.valid()) return;
    token = ++next_token_;
    live_.emplace(token, std::move(fd));
  }
  std::thread([this, port, token, s = std::move(served)]() mutable {
    Serve(port, std::move(s), token);
  }).detach();
}

void ProxySession::Serve(uint16_t port, fs::UniqueFd fd, int token) {
  ConnectionContext ctx;
  ctx.guard = guard_.get();
  ctx.ca = ca_.get();
  ctx.dialer = dialer_.get();
  ctx.trust = trust_;
  ctx.log = [this](RequestRecord r) { log_.Add(ToProto(r)); };
  ServeConnection(std::move(fd), port, ctx);
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(token);
  cv_.notify_all();
}

void ProxySession::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!stopping_) {
    stopping_ = true;
    for (auto& [token, fd] : live_) shutdown(fd.get(), SHUT_RDWR);
  }
  cv_.wait(lock, [&] { return live_.empty(); });
  lock.unlock();
  channel_.reset();
  log_.Close();
  guard_.reset();  // wipes the values
}

epb::SessionSummary ProxySession::Summary() const {
  epb::SessionSummary s;
  s.set_session_id(id_);
  for (const std::string& h : hosts_) s.add_hosts(h);
  for (const std::string& n : secret_names_) s.add_secrets(n);
  s.set_requests(log_.total());
  s.set_refused(log_.refused());
  std::lock_guard<std::mutex> lock(mu_);
  s.set_open_connections(static_cast<uint32_t>(live_.size()));
  s.set_router_connected(router_connected_);
  return s;
}

// --- SessionTable ---

SessionTable::SessionTable(Options options) : options_(std::move(options)) {
  if (!options_.dialers) {
    const std::string socket = absl::StrCat(options_.runtime_dir, "/netpolicyd.sock");
    options_.dialers = [socket](const std::string& id, egress::EgressChannel* channel) {
      return NetPolicyDialer(socket, id, channel);
    };
  }
}

SessionTable::~SessionTable() { StopAll(); }

absl::StatusOr<std::shared_ptr<ProxySession>> SessionTable::Attach(
    const epb::AttachSessionRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.count(request.session_id()) > 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("session ", request.session_id(), " is already attached"));
    }
    if (sessions_.size() >= options_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the proxy serves ", options_.max_sessions, " sessions already"));
    }
  }
  absl::StatusOr<std::shared_ptr<ProxySession>> s =
      ProxySession::Start(request, options_.dialers, options_.limits, options_.trust);
  if (!s.ok()) return s.status();
  if (!options_.log_dir.empty()) {
    // The log outlives the session (lazaret net log --requests of an ended
    // session); a directory that cannot be made leaves it in memory only.
    if (mkdir(options_.log_dir.c_str(), 0700) == 0 || errno == EEXIST) {
      PruneRequestLogs(options_.log_dir, kKeptLogs - 1);
      const std::string path = absl::StrCat(options_.log_dir, "/", request.session_id(), ".jsonl");
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) (*s)->log().WriteTo(fs::UniqueFd(fd));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = sessions_.emplace(request.session_id(), *s);
  if (!inserted) return absl::AlreadyExistsError("attached twice at once");
  return *s;
}

absl::Status SessionTable::Detach(const std::string& id) {
  std::shared_ptr<ProxySession> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
      return absl::NotFoundError(absl::StrCat("session ", id, " has no egress proxy"));
    }
    s = std::move(it->second);
    sessions_.erase(it);
  }
  s->Stop();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<ProxySession>> SessionTable::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("session ", id, " has no egress proxy"));
  }
  return it->second;
}

std::vector<std::shared_ptr<ProxySession>> SessionTable::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ProxySession>> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

void SessionTable::StopAll() {
  std::map<std::string, std::shared_ptr<ProxySession>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) s->Stop();
}

}  // namespace lazaret::egressd
