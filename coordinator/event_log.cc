#include "coordinator/event_log.h"

#include <algorithm>

namespace baton {

void EventLog::Recover(uint64_t last_seq) {
  next_seq_ = last_seq + 1;
  std::lock_guard<std::mutex> lock(mu_);
  durable_ = last_seq;
}

v1::Event EventLog::Append(v1::Event ev, StoreBatch* batch) {
  ev.set_log_seq(next_seq_++);
  batch->log.push_back(std::move(ev));
  return batch->log.back();
}

void EventLog::Published(const StoreBatch& written) {
  if (written.log.empty()) return;
  uint64_t newest = 0;
  for (const auto& ev : written.log) newest = std::max(newest, ev.log_seq());
  {
    std::lock_guard<std::mutex> lock(mu_);
    durable_ = std::max(durable_, newest);
    for (const auto& ev : written.log) {
      for (const auto& [token, fn] : followers_) fn(ev);
    }
  }
  cv_.notify_all();
}

uint64_t EventLog::Follow(Follower fn, uint64_t* durable) const {
  std::lock_guard<std::mutex> lock(mu_);
  *durable = durable_;
  uint64_t token = next_follower_++;
  followers_.emplace(token, std::move(fn));
  return token;
}

void EventLog::Unfollow(uint64_t token) const {
  std::lock_guard<std::mutex> lock(mu_);
  followers_.erase(token);
}

size_t EventLog::followers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return followers_.size();
}

uint64_t EventLog::durable_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_;
}

uint64_t EventLog::WaitPast(uint64_t after, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return durable_ > after; });
  return durable_;
}

absl::StatusOr<std::vector<v1::Event>> EventLog::Read(const LogQuery& q) const {
  return store_->ReadLog(q);
}

absl::StatusOr<uint64_t> EventLog::TailStart(const LogQuery& q, size_t n) const {
  return store_->TailStart(q, n);
}

}  // namespace baton
