#include "coordinator/web/event_feed.h"

#include <memory>
#include <mutex>

#include "coordinator/web/sse.h"

namespace baton::web {
namespace {

constexpr size_t kBatch = 256;
constexpr absl::Duration kCoalesce = absl::Milliseconds(400);

// Shared by the content provider (copied by httplib); unsubscribes when the stream ends.
struct Feed {
  const EventLog* log = nullptr;
  EventHub* hub = nullptr;
  std::shared_ptr<EventHub::Subscription> sub;
  LogQuery query;  // after_seq: the last record sent (the cursor)
  StreamQuota::Ticket ticket;
  bool catching_up = true;  // read the store first (and again after frames were lost)
  absl::Time last_flush = absl::InfinitePast();

  ~Feed() { hub->Unsubscribe(sub); }
};

// One call of the provider: what is new, a heartbeat, or nothing within a second.
bool Step(Feed& f, SseWriter& writer, httplib::DataSink& sink) {
  std::string out;
  if (f.catching_up) {
    LogQuery q = f.query;
    q.limit = kBatch;
    absl::StatusOr<std::vector<v1::Event>> batch = f.log->Read(q);
    if (!batch.ok()) {
      writer.Write(sink, SseEvent("", "error", "{}"));
      return false;
    }
    for (const v1::Event& ev : *batch) {
      out += EventHub::FrameOf(ev)->text;
      f.query.after_seq = ev.log_seq();
    }
    // A short batch: the store is read up to what was durable when the hub already
    // queued what came after (the subscription is older than this read).
    if (batch->size() < kBatch) f.catching_up = false;
    return writer.Write(sink, out);
  }
  std::deque<std::shared_ptr<const Frame>> frames;
  {
    std::unique_lock<std::mutex> lock(f.sub->mu);
    f.sub->cv.wait_for(lock, std::chrono::seconds(1),
                       [&f] { return !f.sub->queue.empty() || f.sub->lost; });
    if (f.sub->lost) {  // frames were dropped: the store from the cursor
      f.sub->lost = false;
      f.sub->queue.clear();
      f.catching_up = true;
      return true;
    }
    // Busy logs are sent in bursts: at most one write per kCoalesce, whatever the event
    // rate (each write is a wake-up, a TLS record and a send for each open page).
    const absl::Duration since = absl::Now() - f.last_flush;
    if (since < kCoalesce) {
      lock.unlock();
      absl::SleepFor(kCoalesce - since);
      lock.lock();
      if (f.sub->lost) return true;  // the next step reads the store
    }
    frames.swap(f.sub->queue);
  }
  f.last_flush = absl::Now();
  for (const auto& frame : frames) {
    if (frame->seq <= f.query.after_seq) continue;  // also read from the store
    out += frame->text;
    f.query.after_seq = frame->seq;
  }
  return writer.Write(sink, out);
}

}  // namespace

void ServeEventFeed(const EventLog* log, EventHub* hub, LogQuery query, StreamQuota::Ticket ticket,
                    const std::atomic<bool>* stopping, httplib::Response& res) {
  auto feed = std::make_shared<Feed>();
  feed->log = log;
  feed->hub = hub;
  // Before the first store read: whatever it does not see is queued by the hub.
  feed->sub = hub->Subscribe(query.job_id, query.kinds);
  feed->query = query;
  feed->ticket = std::move(ticket);
  ServeSse(
      stopping,
      [feed](SseWriter& writer, httplib::DataSink& sink) { return Step(*feed, writer, sink); },
      res);
}

}  // namespace baton::web
