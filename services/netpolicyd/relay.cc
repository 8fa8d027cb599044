#include "services/netpolicyd/relay.h"

#include "services/common/log.h"
#include "services/netpolicyd/dns_message.h"

namespace lazaret::netpolicyd {
namespace {

namespace rt = ::lazaret::netrouter::v1;

constexpr std::chrono::milliseconds kReopenPause{1000};

}  // namespace

WorkerPool::WorkerPool(int threads, size_t max_queue) : max_queue_(max_queue) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool WorkerPool::TrySubmit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queue_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Work() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void DnsRelay::Stream::Write(uint64_t id, const std::string& message, uint32_t hold_ms) {
  rt::DnsAnswer answer;
  answer.set_id(id);
  answer.set_message(message);
  answer.set_hold_ms(hold_ms);
  std::lock_guard<std::mutex> lock(mu);
  if (call != nullptr) call->Write(answer);
}

// One query's way back to the router. Leaves the stream's in-flight count
// at its first answer or hold; one never answered (dropped) leaves it when
// destroyed, and the router then SERVFAILs it at its deadline.
class DnsRelay::Responder final : public DnsResponder {
 public:
  Responder(std::shared_ptr<Stream> stream, uint64_t id) : stream_(std::move(stream)), id_(id) {}
  ~Responder() override { Release(); }
  void Answer(const std::string& message) override {
    stream_->Write(id_, message);
    Release();
  }
  void Hold(uint32_t ms) override {
    stream_->Write(id_, "", ms);
    Release();
  }

 private:
  void Release() {
    if (!released_.exchange(true)) stream_->in_flight.fetch_sub(1);
  }
  const std::shared_ptr<Stream> stream_;
  const uint64_t id_;
  std::atomic<bool> released_{false};
};

DnsRelay::DnsRelay(std::shared_ptr<Session> session, WorkerPool* pool)
    : session_(std::move(session)), pool_(pool) {
  thread_ = std::thread([this] { Run(); });
}

DnsRelay::~DnsRelay() { Stop(); }

bool DnsRelay::WaitOpen(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return open_ || stopping_; }) || !open_) return false;
  cv_.wait_for(lock, kUnconfirmedWait, [this] { return confirmed_ || stopping_; });
  return open_;
}

void DnsRelay::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DnsRelay::Run() {
  while (true) {
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      ctx_ = &ctx;
    }
    auto stream = std::make_shared<Stream>();
    // The constructor returns once the call's headers went out: the router
    // has the call.
    std::unique_ptr<grpc::ClientReaderWriter<rt::DnsAnswer, rt::DnsQuery>> call =
        session_->router().RelayDns(&ctx);
    {
      std::lock_guard<std::mutex> lock(stream->mu);
      stream->call = call.get();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
    // Returns when the router sends the call's metadata (or its first query).
    call->WaitForInitialMetadata();
    {
      std::lock_guard<std::mutex> lock(mu_);
      confirmed_ = true;
    }
    cv_.notify_all();
    rt::DnsQuery query;
    while (call->Read(&query)) Serve(stream, query);
    {
      std::lock_guard<std::mutex> lock(stream->mu);
      stream->call = nullptr;
    }
    grpc::Status st = call->Finish();
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ctx_ = nullptr;
      open_ = false;
      confirmed_ = false;
      stopping = stopping_;
    }
    if (stopping) return;
    LAZ_LOG_WARNING << "session " << session_->id() << ": the DNS relay call ended ("
                    << st.error_message() << "); opening it again";
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kReopenPause, [this] { return stopping_; });
  }
}

void DnsRelay::Serve(const std::shared_ptr<Stream>& stream, const rt::DnsQuery& query) {
  const bool udp = query.transport() != rt::DNS_TRANSPORT_TCP;
  auto refuse_busy = [&] {
    absl::StatusOr<dns::Query> parsed = dns::ParseQuery(query.message());
    stream->Write(query.id(), parsed.ok()
                                  ? dns::BuildAnswer(*parsed, dns::Rcode::kServFail, {}, udp)
                                  : std::string());
  };
  if (stream->in_flight.fetch_add(1) >= kMaxInFlight) {
    stream->in_flight.fetch_sub(1);
    refuse_busy();
    return;
  }
  std::shared_ptr<Session> session = session_;
  bool queued = pool_->TrySubmit([stream, session, query, udp] {
    session->AnswerDns(query.message(), udp, std::make_unique<Responder>(stream, query.id()));
  });
  if (!queued) {
    stream->in_flight.fetch_sub(1);
    refuse_busy();
  }
}

}  // namespace lazaret::netpolicyd
