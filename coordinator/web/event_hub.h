// The dashboard's event fan-out: one follower of the event log for every live view of the
// web server. Each durable record is framed as a server-sent event once (its proto3 JSON,
// id = log_seq) on the hub's own thread — never on the committer's, which only queues it —
// and the same frame is handed to every subscribed stream whose filter matches. So 500
// open pages cost one JSON encoding and no store read per event, not 500 of each. A
// stream that lets kMaxQueued frames pile up loses its queue and reads the store from its
// cursor instead (EventFeed): commits never wait for a reader, and memory stays bounded.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "coordinator/event_log.h"

namespace baton::web {

// One event, framed for text/event-stream.
struct Frame {
  uint64_t seq = 0;
  uint64_t job_id = 0;
  int kind = 0;
  std::string text;  // "id: …\nevent: event\ndata: {…}\n\n"
};

class EventHub {
 public:
  static constexpr size_t kMaxQueued = 1024;

  // What one stream is handed: frames matching its filter, in log_seq order.
  struct Subscription {
    uint64_t job_id = 0;  // 0: every job
    uint32_t kinds = 0;   // bits of EventKind; 0: every kind
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<const Frame>> queue;
    bool lost = false;  // frames were dropped: read the store from the cursor
  };

  explicit EventHub(const EventLog* log);
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Frames of records durable from now on reach the subscription until it is dropped.
  std::shared_ptr<Subscription> Subscribe(uint64_t job_id, uint32_t kinds);
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);

  // An event as a frame (what the store path sends too).
  static std::shared_ptr<const Frame> FrameOf(const v1::Event& ev);

 private:
  void Run();

  const EventLog* const log_;
  uint64_t token_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::Event> inbox_;  // from the committer's thread
  bool inbox_lost_ = false;      // the inbox overflowed: every stream reads the store
  bool stopping_ = false;
  std::list<std::shared_ptr<Subscription>> subs_;
  std::thread thread_;
};

}  // namespace baton::web
