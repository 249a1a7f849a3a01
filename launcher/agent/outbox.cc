#include "launcher/agent/outbox.h"

#include <utility>

namespace baton {

void AgentOutbox::Open(v1::AgentMessage first) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.clear();
    queue_.push_back(std::move(first));
    open_ = true;
    heartbeat_queued_ = false;
    writer_done_ = false;
  }
  cv_.notify_all();
}

void AgentOutbox::Push(v1::AgentMessage msg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return;
    if (msg.has_heartbeat()) {
      if (heartbeat_queued_) return;  // the stream is not keeping up: one is enough
      heartbeat_queued_ = true;
    }
    queue_.push_back(std::move(msg));
  }
  cv_.notify_all();
}

void AgentOutbox::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
    queue_.clear();
  }
  cv_.notify_all();
}

void AgentOutbox::WriteLoop(CoordinatorStream& stream) {
  std::deque<v1::AgentMessage> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || !open_; });
      if (!open_) break;
      batch.swap(queue_);
      heartbeat_queued_ = false;
    }
    bool ok = true;
    for (const v1::AgentMessage& msg : batch) {
      if (!(ok = stream.Write(msg))) break;
    }
    batch.clear();
    if (!ok) {
      stream.Cancel();  // the reader sees the break and reconnects
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    writer_done_ = true;
  }
  cv_.notify_all();
}

bool AgentOutbox::WaitWriterDone(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [this] { return writer_done_; });
}

}  // namespace baton
