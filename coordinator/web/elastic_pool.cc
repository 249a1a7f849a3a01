#include "coordinator/web/elastic_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>

#include "common/allocator.h"

namespace baton::web {

ElasticPool::ElasticPool(size_t min_threads, size_t max_threads, absl::Duration idle)
    : min_threads_(min_threads), max_threads_(std::max<size_t>(1, max_threads)), idle_(idle) {}

ElasticPool::~ElasticPool() { shutdown(); }

void ElasticPool::enqueue(std::function<void()> fn) {
  std::vector<std::thread> done;  // threads that exited: joined outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
    for (auto it = all_.begin(); it != all_.end();) {
      if (std::find(exited_.begin(), exited_.end(), it->get_id()) != exited_.end()) {
        exited_.erase(std::find(exited_.begin(), exited_.end(), it->get_id()));
        done.push_back(std::move(*it));
        it = all_.erase(it);
      } else {
        ++it;
      }
    }
    if (idle_count_ < jobs_.size() && alive_ < max_threads_ && !shutdown_) {
      ++alive_;
      peak_ = std::max(peak_, alive_);
      all_.emplace_back([this] { Work(); });
    }
  }
  cv_.notify_one();
  for (auto& t : done) t.join();
}

void ElasticPool::Work() {
  // A write to a connection the browser closed fails with EPIPE on this thread instead of
  // raising SIGPIPE, whose default ends the process (OpenSSL writes without MSG_NOSIGNAL).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  ThreadCacheOff();  // a thread per connection, mostly waiting: no cache of its own
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_count_;
    const bool got = cv_.wait_for(lock, absl::ToChronoNanoseconds(idle_),
                                  [this] { return !jobs_.empty() || shutdown_; });
    --idle_count_;
    if (jobs_.empty()) {
      if (shutdown_ || (!got && alive_ > min_threads_)) break;
      continue;
    }
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
  --alive_;
  exited_.push_back(std::this_thread::get_id());
}

void ElasticPool::shutdown() {
  std::vector<std::thread> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    all.swap(all_);
  }
  cv_.notify_all();
  for (auto& t : all) t.join();
}

size_t ElasticPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return alive_;
}

size_t ElasticPool::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

}  // namespace baton::web
