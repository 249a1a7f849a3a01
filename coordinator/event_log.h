// The coordinator's global event log: every job transition, scheduling decision,
// eviction, refused spec, policy change and node change, numbered (log_seq) in commit
// order and stored in the same synced write as the change it records (store.h, families
// `log` and `log_job`). The JobManager numbers events under its mutex; the Committer
// reports each durable write, which is handed to followers as it is; reads go to the store.
// Thread-safe, except Append, which callers serialise (the JobManager's mutex).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
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
  // The Committer's listener: `written` is durable; followers are handed its records.
  void Published(const StoreBatch& written);

  // A follower is called with each durable record, in log_seq order, on the committer's
  // thread (with the log's mutex held): it must only queue, never wait or call back in.
  using Follower = std::function<void(const v1::Event&)>;
  // Every record made durable after this returns reaches `fn`; `*durable` is
  // durable_seq() at that moment, so a reader that reads the store up to it misses
  // nothing (records in both are told apart by log_seq). Returns a token for Unfollow.
  uint64_t Follow(Follower fn, uint64_t* durable) const;
  // No call to the follower runs after this returns.
  void Unfollow(uint64_t token) const;
  size_t followers() const;

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
  // Observers of the log, not its state: following a const log is allowed.
  mutable std::map<uint64_t, Follower> followers_;
  mutable uint64_t next_follower_ = 1;
};

}  // namespace baton
