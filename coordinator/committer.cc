#include "coordinator/committer.h"

#include <chrono>
#include <cstdlib>
#include <vector>

#include "spdlog/spdlog.h"

namespace baton {

Committer::Committer(Store* store, CommitListener listener)
    : store_(store), listener_(std::move(listener)), thread_([this] { Run(); }) {}

Committer::~Committer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Committer::Enqueue(StoreBatch batch, std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(batch), std::move(done));
  }
  cv_.notify_one();
}

void Committer::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

uint64_t Committer::commits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

void Committer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    std::deque<std::pair<StoreBatch, std::function<void()>>> work;
    work.swap(queue_);
    busy_ = true;
    lock.unlock();

    StoreBatch merged;
    for (auto& [batch, done] : work) merged.Append(std::move(batch));
    if (!merged.empty()) {
      auto start = std::chrono::steady_clock::now();
      absl::Status s = store_->Commit(merged);
      if (!s.ok()) {
        spdlog::critical("store commit failed, exiting to recover from durable state: {}",
                         s.ToString());
        std::abort();
      }
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (listener_) listener_(merged, took.count());
    }
    for (auto& [batch, done] : work) {
      if (done) done();
    }

    lock.lock();
    ++commits_;
    busy_ = false;
    idle_cv_.notify_all();
  }
}

}  // namespace baton
