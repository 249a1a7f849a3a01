// Group commit: callers enqueue a StoreBatch with a completion; one thread drains the
// queue, writes everything pending as one synced WriteBatch, then runs the completions
// in enqueue order. Many concurrent submits thus share one fsync, and no effect of a
// change (an RPC reply, a launch sent to an agent) happens before the change is durable.
// A failed commit aborts the process: memory is ahead of disk and the only safe state is
// the durable one, reloaded at restart (as etcd does on a WAL write failure).
// An optional listener sees every durable write first (its latency for the metrics, its
// log records for followers of the event log). Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "coordinator/store.h"

namespace baton {

// Runs on the committer thread after each durable write, before the completions; must
// not block. `seconds`: how long the synced write took.
using CommitListener = std::function<void(const StoreBatch& written, double seconds)>;

class Committer {
 public:
  explicit Committer(Store* store, CommitListener listener = nullptr);
  ~Committer();  // drains the queue, then stops
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // `done` runs on the committer thread after the batch is durable; it must not block.
  void Enqueue(StoreBatch batch, std::function<void()> done);
  // Blocks until everything enqueued before the call is durable (tests, shutdown).
  void Flush();

  uint64_t commits() const;  // WriteBatches written (each one fsync)

 private:
  void Run();

  Store* const store_;
  const CommitListener listener_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::pair<StoreBatch, std::function<void()>>> queue_;
  bool stopping_ = false;
  bool busy_ = false;
  uint64_t commits_ = 0;
  std::thread thread_;
};

}  // namespace baton
