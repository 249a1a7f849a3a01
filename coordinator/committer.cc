#include "coordinator/committer.h"

#include <chrono>
#include <cstdlib>
#include <vector>

#include "spdlog/spdlog.h"

namespace baton {

Committer::Committer(Store* store, CommitListener listener, DiskSpace space, CommitLog* log)
    : store_(store), listener_(std::move(listener)), log_(log), space_(space), thread_([this] {
        Run();
      }) {}

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

bool Committer::store_full() const {
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  if (now - space_checked_ms_.load() >= 1000) {
    space_checked_ms_ = now;
    store_full_ = store_->FreeBytes() < space_.min_free_bytes;
  }
  return store_full_.load();
}

bool Committer::WaitForSpace() {
  for (bool said = false;;) {
    uint64_t free = store_->FreeBytes();
    store_full_ = free < space_.min_free_bytes;
    if (free >= space_.reserve_bytes) {
      if (said) spdlog::warn("the coordinator's disk has space again: pending changes written");
      return true;
    }
    if (!said) {
      spdlog::error(
          "the coordinator's disk is full ({} free): new work is refused, reads are served, and "
          "pending changes are written as soon as space is freed",
          free);
      said = true;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) return false;
  }
}

absl::Status Committer::Write(const StoreBatch& batch) {
  if (!log_) return store_->Commit(batch);
  absl::StatusOr<uint64_t> index = log_->Append(batch);
  if (!index.ok()) log_->Lost(index.status());
  return store_->Commit(batch, *index);
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
      absl::Status s =
          WaitForSpace() ? Write(merged) : absl::CancelledError("stopping with the disk full");
      if (absl::IsCancelled(s)) {
        spdlog::error("stopping with the disk full: {} unacknowledged change(s) not written",
                      work.size());
        work.clear();  // nothing of them was acknowledged, and nothing will be
      } else if (!s.ok()) {
        spdlog::critical("store commit failed, exiting to recover from durable state: {}",
                         s.ToString());
        std::abort();
      }
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (listener_ && s.ok()) listener_(merged, took.count());
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
