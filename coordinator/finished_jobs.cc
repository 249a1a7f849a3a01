#include "coordinator/finished_jobs.h"

namespace baton {

void FinishedJobs::Add(v1::Job job, EventList events, uint64_t commit) {
  const uint64_t id = job.id();
  entries_[id] = Entry{std::move(job), std::move(events)};
  order_.emplace_back(id, commit);
}

const FinishedJobs::Entry* FinishedJobs::Find(uint64_t id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

void FinishedJobs::Trim(uint64_t durable) {
  while (!order_.empty()) {
    const auto [id, commit] = order_.front();
    // Kept: within capacity, or its final record not yet durable. Erased ones just go.
    if (entries_.count(id) && (order_.size() <= capacity_ || commit > durable)) break;
    entries_.erase(id);
    order_.pop_front();
  }
}

void FinishedJobs::ForEach(const std::function<void(const Entry&)>& fn) const {
  for (const auto& [id, e] : entries_) fn(e);
}

}  // namespace baton
