// The finished jobs a coordinator keeps in memory: a job that ends stays here, readable
// as it was, until the commit that stored its final record is durable and `capacity`
// newer ones have finished; after that it is read from the store (Store::ReadJob). So a
// finished job is always in one place or the other, never in neither. Commits are
// numbered in the order they are enqueued (the Committer completes them in that order).
// Not thread-safe: the JobManager holds it under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "coordinator/event_list.h"
#include "proto/api.pb.h"

namespace baton {

class FinishedJobs {
 public:
  struct Entry {
    v1::Job job;
    EventList events;
  };

  explicit FinishedJobs(size_t capacity) : capacity_(capacity) {}

  // `job` finished in the commit numbered `commit`.
  void Add(v1::Job job, EventList events, uint64_t commit);
  const Entry* Find(uint64_t id) const;
  // Retention deleted it.
  void Erase(uint64_t id) { entries_.erase(id); }
  // Drops the oldest beyond capacity whose commit is at or before `durable`.
  void Trim(uint64_t durable);
  void ForEach(const std::function<void(const Entry&)>& fn) const;
  size_t size() const { return entries_.size(); }

 private:
  const size_t capacity_;
  std::map<uint64_t, Entry> entries_;
  std::deque<std::pair<uint64_t, uint64_t>> order_;  // (job id, commit), oldest first
};

}  // namespace baton
