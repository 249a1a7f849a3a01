// The coordinator's global event log: every job transition, scheduling decision,
// eviction, refused spec, policy change and node change, numbered (log_seq) in commit
// order and stored in the same synced write as the change it records (store.h, families
// `log` and `log_job`). The JobManager numbers events under its mutex; the Committer
// reports each durable write, which wakes followers; reads go to the store.
// Thread-safe, except Append, which callers serialise (the JobManager's mutex).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "coordinator/store.h"

namespace baton {

class EventLog {
 public:
  explicit EventLog(Store* store) : store_(store) {}
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // At start-up: numbering continues after `last_seq`, the newest stored record.
  void Recover(uint64_t last_seq);
  // Numbers `ev` and adds it to `batch`; returns the numbered event (a copy). Callers serialise
  // Append with their commits, so numbers grow in commit order.
  v1::Event Append(v1::Event ev, StoreBatch* batch);
  // The Committer's listener: `written` is durable; followers wake.
  void Published(const StoreBatch& written);

  // The newest durable log_seq.
  uint64_t durable_seq() const;
  // Waits until a record newer than `after` is durable or `timeout` passes; returns
  // durable_seq().
  uint64_t WaitPast(uint64_t after, std::chrono::milliseconds timeout) const;
  // Durable records matching `q` (store.h), oldest first.
  absl::StatusOr<std::vector<v1::Event>> Read(const LogQuery& q) const;
  // The after_seq that makes Read return only the newest `n` records matching `q`.
  absl::StatusOr<uint64_t> TailStart(const LogQuery& q, size_t n) const;

 private:
  Store* const store_;
  uint64_t next_seq_ = 1;  // serialised by the caller of Append
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  uint64_t durable_ = 0;
};

}  // namespace baton
