#include "coordinator/web/event_feed.h"

#include <google/protobuf/util/json_util.h>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "coordinator/web/sse.h"

namespace baton::web {
namespace {

constexpr size_t kBatch = 256;

// Shared by the content provider (copied by httplib) and the log's follower.
struct Feed {
  const EventLog* log = nullptr;
  LogQuery query;
  StreamQuota::Ticket ticket;
  std::unique_ptr<SseWriter> writer;
  uint64_t token = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool woken = true;  // read the store first

  ~Feed() {
    if (token != 0) log->Unfollow(token);
  }
  bool Matches(const v1::Event& ev) const {
    if (query.job_id != 0 && ev.job_id() != query.job_id) return false;
    return query.kinds == 0 || (query.kinds & (1u << static_cast<int>(ev.kind()))) != 0;
  }
};

// One call of the provider: what is new, a heartbeat, or nothing within a second.
bool Step(Feed& f, httplib::DataSink& sink) {
  bool ended = false;
  if (!f.writer->Begin(sink, &ended)) return false;
  if (ended) return true;
  {
    std::unique_lock<std::mutex> lock(f.mu);
    f.cv.wait_for(lock, std::chrono::seconds(1), [&f] { return f.woken; });
    if (!f.woken) {
      lock.unlock();
      return f.writer->Write(sink, "");
    }
    f.woken = false;  // what arrives from here on wakes the next wait
  }
  LogQuery q = f.query;
  q.limit = kBatch;
  absl::StatusOr<std::vector<v1::Event>> batch = f.log->Read(q);
  if (!batch.ok()) {
    f.writer->Write(sink, SseEvent("", "error", "{}"));
    return false;
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  for (const v1::Event& ev : *batch) {
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(ev, &json, opts).ok()) return false;
    out += SseEvent(std::to_string(ev.log_seq()), "event", json);
    f.query.after_seq = ev.log_seq();
  }
  if (batch->size() == kBatch) {
    std::lock_guard<std::mutex> lock(f.mu);
    f.woken = true;  // more to read at once
  }
  return f.writer->Write(sink, out);
}

}  // namespace

void ServeEventFeed(const EventLog* log, LogQuery query, StreamQuota::Ticket ticket,
                    const std::atomic<bool>* stopping, httplib::Response& res) {
  auto feed = std::make_shared<Feed>();
  feed->log = log;
  feed->query = query;
  feed->ticket = std::move(ticket);
  feed->writer = std::make_unique<SseWriter>(stopping);
  uint64_t durable = 0;
  // Before the first store read: whatever it does not see wakes the stream.
  feed->token = log->Follow(
      [raw = feed.get()](const v1::Event& ev) {
        if (!raw->Matches(ev)) return;
        std::lock_guard<std::mutex> lock(raw->mu);
        raw->woken = true;
        raw->cv.notify_one();
      },
      &durable);
  SetSseHeaders(res);
  res.set_chunked_content_provider(
      "text/event-stream", [feed](size_t, httplib::DataSink& sink) { return Step(*feed, sink); });
}

}  // namespace baton::web
