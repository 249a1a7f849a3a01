#include "coordinator/watch_hub.h"

namespace baton {

uint64_t WatchHub::Add(const v1::Job& current, Watcher fn) {
  std::lock_guard<std::mutex> lock(mu_);
  fn(current);
  uint64_t token = next_++;
  watchers_.emplace(current.id(), std::make_pair(token, std::move(fn)));
  return token;
}

uint64_t WatchHub::Once(const v1::Job& job, const Watcher& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  fn(job);
  return next_++;
}

void WatchHub::Remove(uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
    if (it->second.first == token) {
      watchers_.erase(it);
      return;
    }
  }
}

void WatchHub::Notify(const std::vector<v1::Job>& changed) {
  if (changed.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& job : changed) {
    auto [lo, hi] = watchers_.equal_range(job.id());
    for (auto it = lo; it != hi; ++it) it->second.second(job);
  }
}

bool WatchHub::Watches(uint64_t job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.contains(job_id);
}

size_t WatchHub::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

}  // namespace baton
