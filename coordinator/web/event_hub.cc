#include "coordinator/web/event_hub.h"

#include <algorithm>
#include <vector>

#include "coordinator/web/sse.h"
#include "proto/json.h"

namespace baton::web {
namespace {

// The committer hands records over in bursts; past this many waiting for the hub's
// thread, they are dropped and every stream reads the store instead.
constexpr size_t kMaxInbox = 1 << 16;

bool Wants(const EventHub::Subscription& s, const Frame& f) {
  if (s.job_id != 0 && f.job_id != s.job_id) return false;
  return s.kinds == 0 || (s.kinds & (1u << f.kind)) != 0;
}

}  // namespace

EventHub::EventHub(const EventLog* log) : log_(log) {
  uint64_t durable = 0;
  token_ = log_->Follow(
      [this](const v1::Event& ev) {
        std::lock_guard<std::mutex> lock(mu_);
        if (inbox_.size() >= kMaxInbox) {
          inbox_.clear();
          inbox_lost_ = true;
        } else {
          inbox_.push_back(ev);
        }
        cv_.notify_one();
      },
      &durable);
  thread_ = std::thread([this] { Run(); });
}

EventHub::~EventHub() {
  log_->Unfollow(token_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

std::shared_ptr<const Frame> EventHub::FrameOf(const v1::Event& ev) {
  auto f = std::make_shared<Frame>();
  f->seq = ev.log_seq();
  f->job_id = ev.job_id();
  f->kind = static_cast<int>(ev.kind());
  f->text = SseEvent(std::to_string(ev.log_seq()), "event", ProtoJson(ev));
  return f;
}

std::shared_ptr<EventHub::Subscription> EventHub::Subscribe(uint64_t job_id, uint32_t kinds) {
  auto sub = std::make_shared<Subscription>();
  sub->job_id = job_id;
  sub->kinds = kinds;
  std::lock_guard<std::mutex> lock(mu_);
  subs_.push_back(sub);
  return sub;
}

void EventHub::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  std::lock_guard<std::mutex> lock(mu_);
  subs_.remove(sub);
}

void EventHub::Run() {
  for (;;) {
    std::deque<v1::Event> events;
    bool lost = false;
    std::vector<std::shared_ptr<Subscription>> subs;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !inbox_.empty() || inbox_lost_; });
      if (stopping_) return;
      events.swap(inbox_);
      lost = inbox_lost_;
      inbox_lost_ = false;
      subs.assign(subs_.begin(), subs_.end());
    }
    std::vector<std::shared_ptr<const Frame>> frames;
    frames.reserve(events.size());
    for (const v1::Event& ev : events) frames.push_back(FrameOf(ev));  // once for all
    for (const auto& sub : subs) {
      bool any = false;
      std::lock_guard<std::mutex> lock(sub->mu);
      if (lost) sub->lost = true;
      for (const auto& f : frames) {
        if (sub->lost || !Wants(*sub, *f)) continue;
        if (sub->queue.size() >= kMaxQueued) {
          sub->queue.clear();
          sub->lost = true;  // a slow reader: it reads the store from its cursor
          break;
        }
        sub->queue.push_back(f);
        any = true;
      }
      if (any || sub->lost) sub->cv.notify_one();
    }
  }
}

}  // namespace baton::web
