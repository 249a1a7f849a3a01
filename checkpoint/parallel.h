// A parallel loop for the checkpoint library's copy and I/O work: items 0..n-1 spread over
// up to `threads` threads (the caller's thread included), stopping early on the first
// error. Internal to checkpoint/. Thread-safe; `fn` must be safe to run concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace baton::checkpoint {

inline absl::Status ParallelFor(size_t n, int threads,
                                const std::function<absl::Status(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first_error;
  auto worker = [&] {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) {
      absl::Status s = fn(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(s);
        failed.store(true);
      }
    }
  };
  const size_t extra = std::min(n, static_cast<size_t>(threads < 1 ? 1 : threads)) - (n > 0);
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (size_t t = 0; t < extra; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return first_error;
}

}  // namespace baton::checkpoint
