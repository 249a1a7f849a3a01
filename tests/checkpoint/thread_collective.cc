#include "tests/checkpoint/thread_collective.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "common/status.h"

namespace baton::checkpoint::testing {
namespace {

constexpr auto kTimeout = std::chrono::seconds(60);

class GroupRank final : public Collective {
 public:
  GroupRank(ThreadGroup* group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  absl::StatusOr<int64_t> AllReduceMax(int64_t value) override {
    BATON_ASSIGN_OR_RETURN(auto all, group_->Exchange(rank_, std::to_string(value)));
    int64_t max = value;
    for (const std::string& v : all) max = std::max<int64_t>(max, std::stoll(v));
    return max;
  }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) override {
    return group_->Exchange(rank_, value);
  }
  absl::StatusOr<std::string> Broadcast(const std::string& value) override {
    BATON_ASSIGN_OR_RETURN(auto all, group_->Exchange(rank_, value));
    return all[0];
  }
  bool SupportsBackgroundThread() const override { return true; }

 private:
  ThreadGroup* const group_;
  const int rank_;
};

}  // namespace

ThreadGroup::ThreadGroup(int size) : size_(size), slots_(size) {
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<GroupRank>(this, r));
}

ThreadGroup::~ThreadGroup() = default;

void ThreadGroup::RunOnAllRanks(const std::function<void(int rank)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

absl::StatusOr<std::vector<std::string>> ThreadGroup::Exchange(int rank, std::string value) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  // The previous rendezvous must be fully read before its slots are reused.
  if (!cv_.wait_until(lock, deadline, [&] { return !draining_; })) {
    return absl::DeadlineExceededError("rank " + std::to_string(rank) + " waited for a rendezvous");
  }
  slots_[rank] = std::move(value);
  const uint64_t generation = generation_;
  if (++arrived_ == size_) {
    results_ = slots_;
    draining_ = true;
    ++generation_;
    cv_.notify_all();
  } else if (!cv_.wait_until(lock, deadline, [&] { return generation_ != generation; })) {
    return absl::DeadlineExceededError("rank " + std::to_string(rank) +
                                       " waited for the other ranks");
  }
  std::vector<std::string> out = results_;
  if (++departed_ == size_) {
    arrived_ = departed_ = 0;
    draining_ = false;
    cv_.notify_all();
  }
  return out;
}

}  // namespace baton::checkpoint::testing
