// Group commit: callers enqueue a StoreBatch with a completion; one thread drains the
// queue, writes everything pending as one synced WriteBatch, then runs the completions
// in enqueue order. Many concurrent submits thus share one fsync, and no effect of a
// change (an RPC reply, a launch sent to an agent) happens before the change is durable.
// Disk space is checked before every write (RocksDB cannot take a full disk in the
// middle of a write): below `reserve_bytes` free, writes wait (every second) until space
// returns — nothing they carry has been acknowledged, so nothing is lost — and below
// `min_free_bytes` `store_full()` tells the JobManager to refuse new work while it keeps
// serving reads. A commit that fails anyway aborts the process: memory is ahead of disk
// and the only safe state is the durable one, reloaded at restart (as etcd does on a WAL
// write failure).
// With HA (coordinator/ha/) a CommitLog comes first: the merged batch is appended to the
// replicated log, and only then written to RocksDB (with its log index) and acknowledged;
// an append that fails means this process no longer leads, and CommitLog::Lost ends its
// leadership before anything of the batch is acknowledged.
// An optional listener sees every durable write first (its latency for the metrics, its
// log records for followers of the event log). Thread-safe.
#pragma once

#include <atomic>
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

// The replicated log a leader appends each change to before its own store (ha/).
class CommitLog {
 public:
  virtual ~CommitLog() = default;
  // The entry's index once `batch` is durable in the log; an error when this replica may
  // no longer commit (deposed, or its lease may have lapsed).
  virtual absl::StatusOr<uint64_t> Append(const StoreBatch& batch) = 0;
  // Called with Append's error; does not return (the process stops acting as leader).
  [[noreturn]] virtual void Lost(const absl::Status& why) = 0;
};

// How much free space the store's disk must keep.
struct DiskSpace {
  uint64_t min_free_bytes = 256ull << 20;  // below: new work refused
  uint64_t reserve_bytes = 64ull << 20;    // below: writes wait for space
};

class Committer {
 public:
  // `log` (may be null: the single-node store) must outlive the Committer.
  explicit Committer(Store* store, CommitListener listener = nullptr, DiskSpace space = DiskSpace(),
                     CommitLog* log = nullptr);
  ~Committer();  // drains the queue, then stops
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // `done` runs on the committer thread after the batch is durable; it must not block.
  void Enqueue(StoreBatch batch, std::function<void()> done);
  // Blocks until everything enqueued before the call is durable (tests, shutdown).
  void Flush();

  uint64_t commits() const;  // WriteBatches written (each one fsync)
  // True while the store's disk has less than min_free_bytes free (as last checked, at
  // most a second ago).
  bool store_full() const;

 private:
  void Run();
  // Checks the free space now; false when stopping while below the reserve.
  bool WaitForSpace();

  // The log first (when there is one), then the store.
  absl::Status Write(const StoreBatch& batch);

  Store* const store_;
  const CommitListener listener_;
  CommitLog* const log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::pair<StoreBatch, std::function<void()>>> queue_;
  bool stopping_ = false;
  bool busy_ = false;
  uint64_t commits_ = 0;
  const DiskSpace space_;
  mutable std::atomic<bool> store_full_{false};
  mutable std::atomic<int64_t> space_checked_ms_{0};  // steady clock
  std::thread thread_;
};

}  // namespace baton
