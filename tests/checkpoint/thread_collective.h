// Test support: a job of N ranks inside one process, one thread per rank, so that the
// multi-rank protocols run under plain unit tests. ThreadGroup owns the rendezvous; each
// rank's thread uses its own Collective. Thread-safe by construction; an operation waits
// at most 60 s for the other ranks, then fails with DeadlineExceeded.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint/collective.h"

namespace baton::checkpoint::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  ~ThreadGroup();
  Collective* rank(int r) { return ranks_[r].get(); }
  int size() const { return size_; }
  // Runs fn(rank) on `size` threads at once and waits for all of them.
  void RunOnAllRanks(const std::function<void(int rank)>& fn);

  // Every rank's value once all have arrived (one rendezvous).
  absl::StatusOr<std::vector<std::string>> Exchange(int rank, std::string value);

 private:
  const int size_;
  std::vector<std::unique_ptr<Collective>> ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, results_;
  int arrived_ = 0, departed_ = 0;
  uint64_t generation_ = 0;
  bool draining_ = false;
};

// Rank 0 of 2 whose peer's flags are given: AllReduceMax folds them in, the other
// collectives echo this rank's value.
class PeersCollective : public Collective {
 public:
  explicit PeersCollective(int64_t peers_max) : peers_max_(peers_max) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  absl::StatusOr<int64_t> AllReduceMax(int64_t v) override { return std::max(v, peers_max_); }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& v) override {
    return std::vector<std::string>{v, v};
  }
  absl::StatusOr<std::string> Broadcast(const std::string& v) override { return v; }
  bool SupportsBackgroundThread() const override { return true; }

 private:
  const int64_t peers_max_;
};

}  // namespace baton::checkpoint::testing
