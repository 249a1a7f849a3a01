#include "coordinator/web/log_feed.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>

#include "coordinator/web/sse.h"
#include "proto/json.h"

namespace baton::web {
namespace {

constexpr size_t kMaxQueued = 1 << 20;

// The agent's stream. Holds itself alive (self_) from Start until gRPC's OnDone.
class AgentLogReader : public grpc::ClientReadReactor<v1::LogChunk> {
 public:
  static std::shared_ptr<AgentLogReader> Start(const std::shared_ptr<grpc::Channel>& channel,
                                               const v1::ReadLogsRequest& req) {
    std::shared_ptr<AgentLogReader> r(new AgentLogReader(channel, req));
    r->self_ = r;
    r->stub_->async()->ReadLogs(&r->ctx_, &r->req_, r.get());
    r->StartRead(&r->chunk_);
    r->StartCall();
    return r;
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_ += chunk_.data().size();
      queue_.push_back(std::move(chunk_));
      chunk_.Clear();
      more = queued_ < kMaxQueued;
      paused_ = !more;  // the browser is behind: Take resumes reading
      cv_.notify_one();
    }
    if (more) StartRead(&chunk_);
  }
  void OnDone(const grpc::Status& s) override {
    std::shared_ptr<AgentLogReader> self;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      status_ = s;
      self.swap(self_);
      cv_.notify_one();
    }
  }

  // What arrived, waiting at most a second; `*ended` once the agent's stream is over and
  // everything was taken (`*status` then says how it ended).
  std::deque<v1::LogChunk> Take(bool* ended, grpc::Status* status) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return !queue_.empty() || done_; });
    std::deque<v1::LogChunk> out;
    out.swap(queue_);
    queued_ = 0;
    const bool resume = paused_ && !done_;
    paused_ = false;
    *ended = done_ && out.empty();
    *status = status_;
    lock.unlock();
    if (resume) StartRead(&chunk_);
    return out;
  }
  void Cancel() { ctx_.TryCancel(); }

 private:
  AgentLogReader(const std::shared_ptr<grpc::Channel>& channel, v1::ReadLogsRequest req)
      : stub_(v1::Agent::NewStub(channel)), req_(std::move(req)) {}

  std::unique_ptr<v1::Agent::Stub> stub_;
  grpc::ClientContext ctx_;
  v1::ReadLogsRequest req_;
  v1::LogChunk chunk_;  // the read in flight

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::LogChunk> queue_;
  size_t queued_ = 0;
  bool paused_ = false, done_ = false;
  grpc::Status status_;
  std::shared_ptr<AgentLogReader> self_;
};

struct Feed {
  std::shared_ptr<AgentLogReader> reader;
  StreamQuota::Ticket ticket;
  ~Feed() { reader->Cancel(); }  // the browser went: so does the agent's stream
};

bool Step(Feed& f, SseWriter& writer, httplib::DataSink& sink) {
  bool ended = false;
  grpc::Status status;
  std::deque<v1::LogChunk> chunks = f.reader->Take(&ended, &status);
  std::string out;
  for (const v1::LogChunk& c : chunks) {
    out += SseEvent(std::to_string(c.offset() + static_cast<int64_t>(c.data().size())), "chunk",
                    ProtoJson(c));
  }
  if (ended) {
    // The file read whole (OK), or why not; the page stops here rather than reconnect.
    const nlohmann::json end = {{"ok", status.ok()}, {"message", status.error_message()}};
    out += SseEvent("", "end", end.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (!writer.Write(sink, out)) return false;
  if (ended) sink.done();
  return true;
}

}  // namespace

void ServeLogFeed(std::shared_ptr<grpc::Channel> agent, v1::ReadLogsRequest req,
                  StreamQuota::Ticket ticket, const std::atomic<bool>* stopping,
                  httplib::Response& res) {
  auto feed = std::make_shared<Feed>();
  feed->reader = AgentLogReader::Start(agent, req);
  feed->ticket = std::move(ticket);
  ServeSse(
      stopping,
      [feed](SseWriter& writer, httplib::DataSink& sink) { return Step(*feed, writer, sink); },
      res);
}

}  // namespace baton::web
