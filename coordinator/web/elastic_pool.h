// The web server's threads. cpp-httplib serves a connection on one thread from start to
// end, and a live view (server-sent events) keeps its connection for as long as the page
// is open, so a fixed pool of a few threads would be filled by a few open pages. This
// pool starts a thread when a connection arrives and none is idle, up to `max_threads`
// (the follow limit plus room for plain requests: followed streams are bounded by the
// StreamQuota before they take a thread for long); past it, connections wait in line.
// Threads idle for `idle` exit, down to `min_threads`. Its threads block SIGPIPE: a write
// to a connection the browser closed fails there (EPIPE) rather than end the process.
// Thread-safe.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace baton::web {

class ElasticPool : public httplib::TaskQueue {
 public:
  ElasticPool(size_t min_threads, size_t max_threads, absl::Duration idle = absl::Seconds(30));
  ~ElasticPool() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // runs what is queued, then joins every thread

  size_t threads() const;  // alive now
  size_t peak() const;     // the most alive at once

 private:
  void Work();

  const size_t min_threads_, max_threads_;
  const absl::Duration idle_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> all_;  // every thread started (exited ones are joined later)
  std::vector<std::thread::id> exited_;
  size_t alive_ = 0, idle_count_ = 0, peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace baton::web
